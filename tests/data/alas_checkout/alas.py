"""An AzurLaneAutoScript-shaped checkout for alas_wrapped's tests: ALAS's entry point (``AzurLaneAutoScript`` with
its ``config`` and ``run(command)``, tasks as snake_case methods) and its configuration layout, with tasks that
finish, fail, crash, print, block forever, or spawn a child that ignores TERM. Tasks that tap do it over the real ADB
host protocol (adbutils), against the device serial alas_wrapped's driver sets, like ALAS itself."""

import subprocess
import sys
import time

from module.config.config import AzurLaneConfig


class GameStuckError(Exception):
    pass


class AzurLaneAutoScript:
    def __init__(self, config_name="alas"):
        print("Start", flush=True)
        self.config_name = config_name
        self._config = None

    @property
    def config(self):
        if self._config is None:
            self._config = AzurLaneConfig(self.config_name)
        return self._config

    def run(self, command):
        # ALAS's run: True when the task returns, False on the errors it recovers from, exit(1) on a crash.
        try:
            getattr(self, command)()
            return True
        except GameStuckError as exc:
            print(f"ERROR GameStuckError: {exc}", flush=True)
            return False
        except Exception as exc:
            print(f"CRITICAL {type(exc).__name__}: {exc}", flush=True)
            exit(1)

    def _taps(self):
        import adbutils

        device = adbutils.AdbClient().device(self.config.Emulator_Serial)
        for x, y in self.config.Fake_Taps or []:
            print(f"tap {x} {y}", flush=True)
            device.shell(f"input tap {x} {y}")
            time.sleep(0.4)

    def commission(self):
        self._taps()
        print("Commission done", flush=True)

    def mail(self):
        self._taps()
        print("Mail collected", flush=True)

    def reward(self):
        print("Reward: nothing to do", flush=True)

    def fail(self):
        raise GameStuckError("Wait too long")

    def crash(self):
        raise RuntimeError("a bug in the task")

    def chatty(self):
        import os

        print(f"key={os.environ.get('GEMINI_API_KEY')}", flush=True)
        for i in range(200):
            print(f"line {i}", flush=True)

    def flood(self):
        import sys as _sys

        _sys.stdout.write("x" * 5_000_000 + "\n")  # one 5 MB line
        for i in range(30_000):
            _sys.stdout.write(f"flood {i}\n")
        _sys.stdout.flush()

    def hang(self):
        print("waiting forever", flush=True)
        while 1:
            time.sleep(0.1)

    def stubborn(self):
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = ("import signal, time\n"
                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                 "print('child ignores TERM', flush=True)\n"
                 "while 1: time.sleep(0.1)\n")
        subprocess.Popen([sys.executable, "-c", child])
        print("parent ignores TERM too", flush=True)
        while 1:
            time.sleep(0.1)

    def orphan(self):
        child = ("import signal, time\n"
                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                 "while 1: time.sleep(0.1)\n")
        subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.DEVNULL)
        print("left a helper running", flush=True)

    def restart(self):
        print("handle_app_login: while 1 ...", flush=True)
        while 1:
            time.sleep(0.1)
