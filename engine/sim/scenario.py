"""Fault scenarios for the simulator: what goes wrong, how often, reproducibly from a seed.

A ``Scenario`` is the declarative part (a YAML file or command-line flags, validated by pydantic); ``Faults`` is a
scenario bound to a seed that answers the simulator's questions ("does a popup appear after this hop?", "does this
request hang?"). Game faults and device (ADB) faults draw from two separate random streams, so the number of
protocol requests a client happens to make (adbutils asks the server version before every transport) never
changes what the game does: same seed and same sequence of game calls give the same game.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Probability = float
PROFILE_DIR = Path(__file__).parent / "profiles"
PROFILES = sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))
"""The named device latency profiles shipped with the simulator."""


def load_profile(name: str) -> dict:
    """The fields of a named latency profile (engine/sim/profiles/NAME.yaml)."""
    from engine.config.yamlsrc import load_yaml

    if name not in PROFILES:
        raise ValueError(f"unknown latency profile {name!r}; known: {', '.join(PROFILES)}")
    data = load_yaml(PROFILE_DIR / f"{name}.yaml")[0] or {}
    data.pop("description", None)
    return data


class Scenario(BaseModel):
    """What goes wrong. Every probability defaults to 0: the default scenario is a perfect phone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    seed: int | None = Field(None, description="Default seed when the caller gives none.")
    # ---- game faults
    popup_p: Probability = Field(0.0, ge=0, le=1, description="Chance a popup shows after a hop.")
    popups: list[str] | None = Field(
        None, description="Popups that may appear; default: every popup allowed on the page reached."
    )
    popup_chain_p: Probability = Field(
        0.0, ge=0, le=1, description="Chance that dismissing a scenario popup makes another one show."
    )
    loading_min: float | None = Field(None, ge=0, description="Shortest loading screen after a hop (seconds).")
    loading_max: float | None = Field(None, ge=0, description="Longest loading screen after a hop (seconds).")
    loading_p: Probability = Field(
        1.0, ge=0, le=1, description="Chance a hop shows the scenario's loading screen (with loading_min/max)."
    )
    black_frame_p: Probability = Field(0.0, ge=0, le=1, description="Chance a frame comes back black.")
    drop_tap_p: Probability = Field(0.0, ge=0, le=1, description="Chance a tap is lost.")
    unknown_p: Probability = Field(
        0.0, ge=0, le=1, description="Chance of an unknown screen after a hop; only the back key leaves it."
    )
    crash_p: Probability = Field(0.0, ge=0, le=1, description="Chance the game crashes to its login screen after a hop.")
    event: str | None = Field(
        None, description="The running event, as the page it opens: where several links of a page share the tapped "
        "spot (one entry button, a page per event), the tap leads to this page; default: the first such link.",
    )
    # ---- device faults
    adb_error_p: Probability = Field(0.0, ge=0, le=1, description="Chance a device request fails transiently.")
    adb_error: Literal["closed", "offline", "any"] = Field(
        "any", description="closed: the connection drops mid-answer; offline: FAIL device offline."
    )
    state: dict[str, int | list[dict[str, Any]]] | None = Field(
        None, description="Initial page state replacing the graph's sim_state*.yaml values: {counter: N, list: "
        "[{name, state, seconds}]} (engine.config.simstate).")
    hang_seconds: float = Field(0.0, ge=0, le=600, description="How long a hung request stays silent.")
    hang_on_request: int | None = Field(None, ge=1, description="Hang on this device request (1-based).")
    hang_p: Probability = Field(0.0, ge=0, le=1, description="Chance any device request hangs.")
    adb_state: Literal["device", "offline", "unauthorized"] = Field(
        "device", description="How the ADB server lists the device; requests to an offline or unauthorized device "
        "fail as adb's do (`device offline`, `device unauthorized`).")
    connect_reply: Literal["connected", "refused", "bad port", "failed"] | None = Field(
        None, description="What `adb connect` answers for the device (default: connected, then already connected).")
    # ---- device latency and page transitions (issue 13): costs on the simulator's clock; `profile` fills in
    # the ones the scenario does not give from engine/sim/profiles/NAME.yaml
    profile: str | None = Field(None, description="A named latency profile: " + ", ".join(PROFILES) + ".")
    screencap_raw_ms: float = Field(0.0, ge=0, le=10000, description="Cost of one raw `screencap`.")
    screencap_png_ms: float = Field(0.0, ge=0, le=10000, description="Cost of one `screencap -p` (PNG).")
    tap_ms: float = Field(0.0, ge=0, le=10000, description="Cost of one `input tap` before it takes effect.")
    swipe_ms: float = Field(0.0, ge=0, le=10000, description="Overhead of one `input swipe` beside its duration.")
    key_ms: float = Field(0.0, ge=0, le=10000, description="Cost of one `input keyevent`.")
    # ---- the transport (issue 47): engine.sim.link charges these on the simulator's adbd
    link_mb_s: float = Field(0.0, ge=0, le=100000, description="Bandwidth of the adb transport in MB/s (0: no limit).")
    command_ms: float = Field(0.0, ge=0, le=10000, description="Start-up of each shell or exec command on adbd.")
    gzip_ms: float = Field(0.0, ge=0, le=10000, description="Device CPU time of one `gzip -1` of a frame.")
    transition_s: float = Field(0.0, ge=0, le=10, description="How long a page change takes to show in full.")
    transition: Literal["fade", "slide"] = Field("fade", description="How a page change shows while it runs.")

    @model_validator(mode="before")
    @classmethod
    def _apply_profile(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("profile") is not None:
            return {**load_profile(str(data["profile"])), **data}
        return data

    @model_validator(mode="after")
    def _loading_range(self) -> Scenario:
        if self.loading_min is not None and self.loading_max is not None and self.loading_max < self.loading_min:
            raise ValueError("loading_max is below loading_min")
        return self

    @classmethod
    def from_file(cls, path: str | Path) -> Scenario:
        """A scenario file, read like every YAML file of the engine (size, nesting and alias limits; problems with
        file:line:col).

        Raises:
            YamlError: the file cannot be read or parsed, or a field is wrong (every problem, located).
        """
        from pydantic import ValidationError

        from engine.config.yamlmessages import problems_from_validation_error
        from engine.config.yamlsrc import load_yaml
        from engine.core.errors import YamlError

        data, locator = load_yaml(path)
        try:
            return cls.model_validate(data or {})
        except ValidationError as exc:
            raise YamlError(problems_from_validation_error(exc, str(path), locator)) from None


DeviceFault = Literal["none", "closed", "offline", "hang"]


class Faults:
    """A scenario bound to a seed: the simulator's source of (reproducible) bad luck. Not thread-safe by itself;
    the game and the server each call it under their own lock."""

    def __init__(self, scenario: Scenario | None = None, seed: int | None = None) -> None:
        self.scenario = scenario or Scenario()
        if seed is None:
            seed = self.scenario.seed or 0
        self.seed = seed
        self.game_rng = random.Random(f"{seed}:game")
        self.device_rng = random.Random(f"{seed}:device")
        self.device_requests = 0

    def _chance(self, rng: random.Random, p: float) -> bool:
        # Always draw, so whether a fault is enabled never shifts the stream for the others.
        return rng.random() < p

    # ---- game

    def drop_tap(self) -> bool:
        return self._chance(self.game_rng, self.scenario.drop_tap_p)

    def black_frame(self) -> bool:
        return self._chance(self.game_rng, self.scenario.black_frame_p)

    def loading_seconds(self, allowance: float) -> float:
        """How long the loading screen after a hop lasts: the scenario's range, else half the page's allowance."""
        s = self.scenario
        if s.loading_min is None and s.loading_max is None:
            return allowance / 2
        low = s.loading_min if s.loading_min is not None else 0.0
        high = s.loading_max if s.loading_max is not None else low
        seconds = self.game_rng.uniform(low, high)  # always drawn, so loading_p never shifts the stream
        return seconds if self._chance(self.game_rng, s.loading_p) else allowance / 2

    def after_hop(self) -> Literal["none", "crash", "unknown"]:
        crash = self._chance(self.game_rng, self.scenario.crash_p)
        unknown = self._chance(self.game_rng, self.scenario.unknown_p)
        return "crash" if crash else "unknown" if unknown else "none"

    def popup_after_hop(self, allowed: list[str]) -> str | None:
        return self._pick_popup(self.scenario.popup_p, allowed)

    def popup_after_dismiss(self, allowed: list[str]) -> str | None:
        return self._pick_popup(self.scenario.popup_chain_p, allowed)

    def _pick_popup(self, p: float, allowed: list[str]) -> str | None:
        hit = self._chance(self.game_rng, p)
        if self.scenario.popups is not None:
            allowed = [name for name in allowed if name in self.scenario.popups]
        if not hit or not allowed:
            return None
        return self.game_rng.choice(sorted(allowed))

    # ---- device

    def device_fault(self) -> DeviceFault:
        """The fate of the next device request (transport selection), counted from 1."""
        self.device_requests += 1
        s = self.scenario
        hang = self._chance(self.device_rng, s.hang_p) or self.device_requests == s.hang_on_request
        error = self._chance(self.device_rng, s.adb_error_p)
        kind = self.device_rng.choice(["closed", "offline"]) if s.adb_error == "any" else s.adb_error
        if hang and s.hang_seconds > 0:
            return "hang"
        if error:
            return kind
        return "none"
