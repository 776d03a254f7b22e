"""The scheduler's devices file: which devices it drives and, per device, the emulator's own restart commands.

Two forms. A plain file lists one serial a line (``#`` starts a comment). A ``.yaml`` file says more per device::

    devices:
      - serial: 127.0.0.1:16384
        restart:                       # run in order when reconnecting and the ADB server could not help
          - '"C:/Program Files/Netease/MuMuPlayer-12.0/shell/MuMuManager.exe" api -v 0 shutdown_player'
          - '"C:/Program Files/Netease/MuMuPlayer-12.0/shell/MuMuManager.exe" api -v 0 launch_player'
      - serial: emulator-5554

``python -m engine devices`` prints each instance's restart commands (MuMuManager, ldconsole, Nox, memuc).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError

from engine.config.schema import Model
from engine.config.yamlmessages import problems_from_validation_error
from engine.config.yamlsrc import read_yaml
from engine.core.errors import ConfigError, YamlError

Serial = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^\S+$")]


class DeviceEntry(Model):
    serial: Serial = Field(description="The device's ADB serial (as `python -m engine devices` lists it).")
    restart: list[Annotated[str, Field(min_length=1, max_length=2000)]] = Field(
        default_factory=list, max_length=10,
        description="Commands that restart this emulator instance, run in order (each bounded); the scheduler's "
                    "step between the game's restart and telling a person.")


class DevicesFile(Model):
    devices: list[DeviceEntry] = Field(
        min_length=1, max_length=256, description="The devices the scheduler drives, one worker each."
    )


def load_devices(path: str | Path) -> list[DeviceEntry]:
    """The devices a file names, in order.

    Raises:
        ConfigError: the file cannot be read, a line is no serial (file:line), or a serial is named twice.
        YamlError: a .yaml file's problems, each at file:line:col.
    """
    path = Path(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        source = read_yaml(path)
        if source.problems:
            raise YamlError(list(source.problems), message=f"{len(source.problems)} problem(s) in {path.name}")
        try:
            entries = DevicesFile.model_validate(source.data or {}).devices
        except ValidationError as exc:
            problems = problems_from_validation_error(exc, str(path), source.locator, model=DevicesFile)
            raise YamlError(problems, message=f"{len(problems)} problem(s) in {path.name}") from None
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the devices file: {exc}", file=str(path)) from None
        entries = []
        for number, line in enumerate(text.splitlines(), 1):
            serial = line.split("#", 1)[0].strip()
            if serial and (len(serial) > 200 or any(c.isspace() for c in serial)):
                raise ConfigError(f"not a device serial: {serial[:60]!r}", file=str(path), line=number)
            if serial:
                entries.append(DeviceEntry(serial=serial))
    serials = [e.serial for e in entries]
    if len(set(serials)) != len(serials):
        raise ConfigError(f"a device is named twice: {', '.join(sorted({s for s in serials if serials.count(s) > 1}))}",
                          file=str(path))
    return entries
