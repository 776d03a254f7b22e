"""ALAS's AzurLaneConfig in miniature: reads config/<name>.json, binds a task's groups as Group_Arg attributes,
and keeps overrides across binds."""

import json


class AzurLaneConfig:
    def __init__(self, config_name, task=None):
        with open(f"./config/{config_name}.json", encoding="utf-8") as f:
            self.data = json.load(f)
        self.overridden = {}
        self.bind(task or "Alas")

    def bind(self, func):
        for name in {func, "General", "Alas"}:
            for group, args in self.data.get(name, {}).items():
                for arg, value in args.items():
                    setattr(self, f"{group}_{arg}", value)
        for arg, value in self.overridden.items():
            setattr(self, arg, value)

    def override(self, **kwargs):
        self.overridden.update(kwargs)
        for arg, value in kwargs.items():
            setattr(self, arg, value)

    def __getattr__(self, name):
        if name.startswith("Fake_"):
            return None
        raise AttributeError(name)
