"""Stand-in for ALAS's module/logger.py (at d816310): the ``alas`` logger writing one line per record to stdout
(ALAS's RichHandler prints the level, the time and ``│ message``), ``logger.error(e)`` writing ``<Class>: <message>``
as ALAS's ``error_convert`` does, ``hr``/``attr``, and ``set_file_logger(name)`` appending to
``./log/<date>_<name>.txt``. Like ALAS's, importing it moves to the checkout and opens the file log named after the
program."""

import datetime
import logging
import os
import sys

logger = logging.getLogger("alas")
logger.setLevel(logging.INFO)
logger.propagate = False
_console = logging.StreamHandler(stream=sys.stdout)
_console.setFormatter(logging.Formatter("%(levelname)-8s %(asctime)s.%(msecs)03d │ %(message)s", "%Y-%m-%d %H:%M:%S"))
logger.handlers = [_console]

os.chdir(os.path.join(os.path.dirname(__file__), "../"))
pyw_name = os.path.splitext(os.path.basename(sys.argv[0]))[0]


def set_file_logger(name=pyw_name):
    os.makedirs("./log", exist_ok=True)
    log_file = f"./log/{datetime.date.today()}_{name}.txt"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d | %(levelname)s | %(message)s"))
    logger.handlers = [h for h in logger.handlers if not isinstance(h, logging.FileHandler)] + [handler]
    logger.log_file = log_file


def hr(title, level=3):
    logger.info(f"{'═' * 20} {str(title).upper()} {'═' * 20}" if level == 0 else f"{'─' * 10} {title} {'─' * 10}")


def attr(name, text):
    logger.info(f"[{name}] {text}")


def error_convert(func):
    def error_wrapper(msg, *args, **kwargs):
        if isinstance(msg, Exception):
            msg = f"{type(msg).__name__}: {msg}"
        return func(msg, *args, **kwargs)

    return error_wrapper


logger.error = error_convert(logger.error)
logger.hr = hr
logger.attr = attr
logger.set_file_logger = set_file_logger
logger.set_file_logger()
logger.hr("Start", level=0)
