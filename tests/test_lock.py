"""The suite runs on the locked set: every package constraints.txt pins for this platform is installed at its pin,
and the lock satisfies pyproject.toml's ranges (docs/design/lock.md)."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        spec, _, marker = line.split("#")[0].partition(";")
        if "==" not in spec or (marker.strip() and not Marker(marker.strip()).evaluate()):
            continue
        name, version = (part.strip() for part in spec.split("=="))
        pins[canonicalize_name(name)] = version
    return pins


def test_every_locked_package_that_is_installed_is_at_its_pin():
    off = {}
    for name, version in _pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # an extra this install did not ask for (bench: maafw)
        if installed != version:
            off[name] = (installed, version)
    assert off == {}, f"installed vs locked; install with -c constraints.txt: {off}"


def test_the_lock_satisfies_every_range_in_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    pins = _pins()
    outside = {}
    for text in wanted:
        requirement = Requirement(text)
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None or not requirement.specifier.contains(pin, prereleases=True):
            outside[requirement.name] = (str(requirement.specifier), pin)
    assert outside == {}, f"pyproject range vs lock: {outside}"
