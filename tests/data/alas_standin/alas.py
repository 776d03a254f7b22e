"""Stand-in for ALAS's alas.py (LmeSzinc/AzurLaneAutoScript at d816310), for alas_wrapped's tests.

ALAS itself cannot run in the test suite (it needs Python 3.7 and its own packages), so this keeps the shape of the
code path the engine drives: ``AzurLaneAutoScript(config_name)`` with cached ``config`` and ``device`` properties
that log and ``exit(1)`` when they fail, and ``run(command)`` with the real run's except clauses, return values,
``exit(1)``s and log lines (those lines are what the engine reads an outcome from). One task function per task of
the checkout's config/template.json, named as alas.py names them (``inflection.underscore``). What a task does is
not ALAS's: it comes from the test's plan, ``standin.json`` in the checkout, e.g.
``{"Commission": [{"tap": [x, y]}, {"raise": "GameStuckError", "message": "Wait too long"}]}``; a task without a
plan logs that it had nothing to do.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from functools import cached_property

from module import exception
from module.config.config import AzurLaneConfig, TaskEnd
from module.exception import (GameBugError, GameNotRunningError, GamePageUnknownError, GameStuckError,
                              GameTooManyClickError, RequestHumanTakeover, ScriptError)
from module.logger import logger

CHILD = ("import signal, sys, time\n"
         "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "print('child ignores TERM', flush=True)\n"
         "while 1: time.sleep(0.1)\n")


class AzurLaneAutoScript:
    def __init__(self, config_name="alas"):
        logger.hr("Start", level=0)
        self.config_name = config_name

    @cached_property
    def config(self):
        try:
            return AzurLaneConfig(config_name=self.config_name)
        except RequestHumanTakeover:
            logger.critical("Request human takeover")
            exit(1)
        except Exception as e:
            logger.exception(e)
            exit(1)

    @cached_property
    def device(self):
        try:
            from module.device.device import Device
            return Device(config=self.config)
        except RequestHumanTakeover:
            logger.critical("Request human takeover")
            exit(1)
        except Exception as e:
            logger.exception(e)
            exit(1)

    def run(self, command, skip_first_screenshot=False):
        try:
            if not skip_first_screenshot:
                self.device.screenshot()
            self.__getattribute__(command)()
            return True
        except TaskEnd:
            return True
        except GameNotRunningError as e:
            logger.warning(e)
            self.config.task_call("Restart")
            return False
        except (GameStuckError, GameTooManyClickError) as e:
            logger.error(e)
            logger.warning(f"Game stuck, {self.device.package} will be restarted in 10 seconds")
            logger.warning("If you are playing by hand, please stop Alas")
            self.config.task_call("Restart")
            return False  # ALAS sleeps 10 s first (self.device.sleep(10)): left out to keep the tests short
        except GameBugError as e:
            logger.warning(e)
            logger.warning("An error has occurred in Azur Lane game client, Alas is unable to handle")
            self.config.task_call("Restart")
            return False
        except GamePageUnknownError:
            logger.info("Game server may be under maintenance or network may be broken, check server status now")
            logger.critical("Game page unknown")  # ALAS asks its ServerChecker first; here the server is up
            exit(1)
        except ScriptError as e:
            logger.exception(e)
            logger.critical("This is likely to be a mistake of developers, but sometimes just random issues")
            exit(1)
        except RequestHumanTakeover:
            logger.critical("Request human takeover")
            exit(1)
        except Exception as e:
            logger.exception(e)
            exit(1)

    def perform(self, task):
        """The test's plan for `task` (standin.json), step by step."""
        try:
            with open("standin.json", encoding="utf-8") as f:
                steps = json.load(f).get(task)
        except FileNotFoundError:
            steps = None
        if not steps:
            logger.info(f"{task}: nothing to do")
            return
        for step in steps:
            if "tap" in step:
                self.device.click(*step["tap"])
                time.sleep(step.get("wait", 0.3))
            elif "raise" in step:
                raise getattr(exception, step["raise"], RuntimeError)(step.get("message", ""))
            elif "print" in step:
                logger.info(step["print"])
            elif "env" in step:
                print(f"{step['env']}={os.environ.get(step['env'])}", flush=True)
            elif "lines" in step:
                for i in range(step["lines"]):
                    print(f"line {i}", flush=True)
            elif "flood" in step:
                sys.stdout.write("x" * 5_000_000 + "\n")  # one 5 MB line
                sys.stdout.writelines(f"flood {i}\n" for i in range(step["flood"]))
                sys.stdout.flush()
            elif "ignore_term" in step:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                logger.info("ignoring TERM")
            elif "child" in step:
                subprocess.Popen([sys.executable, "-c", CHILD],
                                 stdout=None if step["child"] == "talks" else subprocess.DEVNULL)
            elif "hang" in step:
                logger.info("waiting forever")
                while 1:
                    time.sleep(0.1)
        logger.info(f"{task}: done")


def _underscore(word):
    """inflection.underscore, which alas.py uses to name task functions."""
    word = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", word)
    return re.sub(r"([a-z\d])([A-Z])", r"\1_\2", word).replace("-", "_").lower()


def _task_function(task):
    return lambda self: self.perform(task)


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "config", "template.json"), encoding="utf-8") as f:
    for _task in json.load(f):
        setattr(AzurLaneAutoScript, _underscore(_task), _task_function(_task))
