"""Stand-in for ALAS's module/config/config.py (at d816310), the parts the engine's driver and a task use:
``AzurLaneConfig(config_name)`` reading ``./config/<name>.json`` (which ALAS makes from config/template.json),
``bind(task)`` setting ``<Group>_<Arg>`` attributes from the General, Alas and task sections in ALAS's order,
``override(**kwargs)`` values that hold across binds, ``task_call`` (set a task's NextRun to now, as run() does for
Restart), ``Function``/``name_to_function`` and ``TaskEnd``."""

import json
from datetime import datetime

from module.logger import logger


class TaskEnd(Exception):
    pass


class Function:
    def __init__(self, data):
        scheduler = data.get("Scheduler", {}) if isinstance(data, dict) else {}
        self.enable = scheduler.get("Enable", False)
        self.command = scheduler.get("Command", "Unknown")
        self.next_run = scheduler.get("NextRun", "2020-01-01 00:00:00")


def name_to_function(name):
    function = Function({})
    function.command = name
    function.enable = True
    return function


class AzurLaneConfig:
    def __init__(self, config_name, task=None):
        self.config_name = config_name
        self.overridden = {}
        self.bound = {}
        with open(f"./config/{config_name}.json", encoding="utf-8") as f:
            self.data = json.load(f)
        self.task = name_to_function(task or "Alas")
        self.bind(self.task)

    def bind(self, func, func_list=None):
        if isinstance(func, Function):
            func = func.command
        func_list = [func] + list(func_list or [])
        for always in ("Alas", "General"):
            if always not in func_list:
                func_list.insert(0, always)
        logger.info(f"Bind task {func_list}")
        visited = set()
        self.bound.clear()
        for name in func_list:
            for group, group_data in self.data.get(name, {}).items():
                for arg, value in group_data.items():
                    path = f"{group}.{arg}"
                    if path in visited:
                        continue
                    setattr(self, f"{group}_{arg}", value)
                    self.bound[f"{group}_{arg}"] = f"{name}.{path}"
                    visited.add(path)
        for arg, value in self.overridden.items():
            setattr(self, arg, value)

    def override(self, **kwargs):
        for arg, value in kwargs.items():
            self.overridden[arg] = value
            setattr(self, arg, value)

    def task_call(self, task):
        scheduler = self.data.setdefault(task, {}).setdefault("Scheduler", {})
        scheduler["NextRun"] = str(datetime.now().replace(microsecond=0))
        scheduler["Enable"] = True
        with open(f"./config/{self.config_name}.json", "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=2, ensure_ascii=False)
        logger.info(f"Task call: {task}")
