"""Stand-in for ALAS's device (module/device/connection_attr.py, connection.py and device.py at d816310), the
parts that decide which phone a task drives: the ADB client is ``AdbClient('127.0.0.1', port)`` with the port from
ANDROID_ADB_SERVER_PORT (else 5037), the serial is ``config.Emulator_Serial`` (``auto``: the only device listed),
and ``adb_connect`` sends ``host:connect`` for a serial that is neither ``emulator-*`` nor a bare USB serial.
Screenshots are ``screencap -p``; a click is ``input tap`` after ALAS's click record check (12 clicks on one button
raise GameTooManyClickError). Uses adbutils, as ALAS does."""

import collections
import os
import re
import time

from adbutils import AdbClient

from module.exception import GameTooManyClickError, RequestHumanTakeover
from module.logger import logger


class Device:
    def __init__(self, config):
        logger.hr("Device", level=1)
        self.config = config
        port = 5037
        env = os.environ.get("ANDROID_ADB_SERVER_PORT", None)
        if env is not None:
            port = int(env)
        logger.attr("AdbClient", f"AdbClient(127.0.0.1, {port})")
        self.adb_client = AdbClient("127.0.0.1", port)
        self.serial = str(config.Emulator_Serial)
        if self.serial == "auto":
            available = [d.serial for d in self.adb_client.device_list()]
            if len(available) != 1:
                logger.critical(f"Serial auto: {len(available)} devices, set Alas.Emulator.Serial")
                raise RequestHumanTakeover
            self.serial = available[0]
        self.adb_connect()
        self.adb = self.adb_client.device(self.serial)
        logger.attr("AdbDevice", f"AdbDevice({self.serial})")
        self.package = config.Emulator_PackageName
        self.click_record = collections.deque(maxlen=15)
        self.image = None

    def adb_connect(self):
        if "emulator-" in self.serial or re.match(r"^[a-zA-Z0-9]+$", self.serial):
            return True
        for _ in range(3):
            msg = self.adb_client.connect(self.serial)
            logger.info(msg)
            if "connected" in msg:
                return True
        logger.warning(f"Failed to connect {self.serial} after 3 trial, assume connected")
        return False

    def screenshot(self):
        self.image = self.adb.shell(["screencap", "-p"], encoding=None)
        return self.image

    def click(self, x, y):
        self.click_record.append(f"({x}, {y})")
        count = collections.Counter(self.click_record).most_common(1)
        if count[0][1] >= 12:
            logger.warning(f"Too many click for a button: {count[0][0]}")
            self.click_record.clear()
            raise GameTooManyClickError(f"Too many click for a button: {count[0][0]}")
        logger.info(f"Click ({x}, {y}) @ {x},{y}")
        self.adb.shell(["input", "tap", str(x), str(y)])

    def stuck_record_clear(self):
        pass

    def click_record_clear(self):
        self.click_record.clear()

    @staticmethod
    def sleep(second):
        time.sleep(second)
