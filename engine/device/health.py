"""The health record: what a probe of the ADB server, the device and its screen found."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

HealthStatus = Literal[
    "healthy", "adb_server_down", "device_missing", "device_offline", "black_screen", "bad_frame", "timeout"
]

SUGGESTIONS: dict[str, str] = {
    "healthy": "nothing to do",
    "adb_server_down": "start the ADB server (adb start-server) or check ANDROID_ADB_SERVER_HOST/PORT",
    "device_missing": "start the emulator, or adb connect its host:port serial",
    "device_offline": "the device is listed but offline: reconnect, or restart the emulator",
    "black_screen": "the screen is black or one flat colour: wake the device or restart the game",
    "bad_frame": "frames have the wrong shape (portrait, another aspect ratio): fix the emulator's resolution",
    "timeout": "the ADB server or device stopped answering: restart the emulator or the ADB server",
}


@dataclass(frozen=True)
class Health:
    """One probe. ``status`` is the first thing that is wrong, in the order server, device, screen."""

    status: HealthStatus
    serial: str | None
    adb_connected: bool = False
    emulator_running: bool = False
    screenshot_ok: bool = False
    black_frame: bool = False
    error: str | None = None
    latency_ms: float = 0.0
    frame_size: tuple[int, int] | None = None
    """(width, height) of the device's own frames, before scaling to the graph's resolution."""
    screenshot_method: str | None = None
    """The capture method frames come by (raw, gzip, nc, png: engine.device.capture)."""
    capture_note: str | None = None
    """Where that method came from: the stored pick of ``devices --bench`` and when it was measured, or None."""
    control: str | None = None
    """What taps go through: adb (input tap), maatouch or minitouch; None before it was chosen."""
    control_note: str | None = None
    """Why: what `auto` tried and how long the chosen agent took to start, or why an agent was dropped."""

    @property
    def ok(self) -> bool:
        return self.status == "healthy"

    @property
    def suggestion(self) -> str:
        return SUGGESTIONS[self.status]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        data["latency_ms"] = round(self.latency_ms, 3)
        data["frame_size"] = list(self.frame_size) if self.frame_size else None
        data["suggestion"] = self.suggestion
        return data

    def describe(self) -> str:
        """One human sentence."""
        if self.ok:
            how = f"; frames by {self.screenshot_method}" if self.screenshot_method else ""
            why = f" ({self.capture_note})" if self.screenshot_method and self.capture_note else ""
            return f"device {self.serial} is healthy ({self.latency_ms:.0f} ms{how}{why})"
        detail = f": {self.error}" if self.error else ""
        return f"device {self.serial} is not healthy ({self.status}{detail}); {self.suggestion}"
