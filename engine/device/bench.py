"""The device benchmark: every capture and touch method timed on the user's own device, the fastest lossless one
of each kind picked, and the pick kept per serial for every later command.

ALAS's GUI times each screenshot method on the user's emulator and recommends the fastest; MaaFramework's
ScreencapFastestWay times its methods at connect and keeps the fastest that works (source/MaaAdbControlUnit/
Screencap/FastestWay.cpp). Here: ``count`` frames per capture method (p50 and p95, frames per second), each
method's frame compared with raw's taken just before and after it (lossless: identical to one of them; where the
screen moved between the two raw frames, no further from them than they are from each other), and ``count``
no-op touches per touch method (``input keyevent 0``, KEYCODE_UNKNOWN, for adb; an empty commit for the agents), so
nothing on the screen is pressed. The pick is stored in ``$ENGINE_HOME/device-picks.json`` with the device's boot
time (``/proc/uptime``): a pick older than the device's last boot, or one that failed since, is measured again.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.core.paths import agent_home
from engine.device.capture import METHODS

if TYPE_CHECKING:
    from engine.device.adb import AdbDevice

log = logging.getLogger(__name__)

TOUCH_METHODS = ("adb", "maatouch", "minitouch")
DEFAULT_COUNT = 10
QUICK_COUNT = 3
"""Frames per method when a stale or failed pick is measured again as a device opens."""
BOOT_SLACK = 5.0
"""Seconds of disagreement between two readings of the boot time that still mean the same boot."""


@dataclass
class Row:
    kind: str
    method: str
    ok: bool
    p50_ms: float | None = None
    p95_ms: float | None = None
    fps: float | None = None
    lossless: bool | None = None
    note: str = ""


@dataclass
class Report:
    serial: str
    rows: list[Row]
    picks: dict[str, str | None]
    ranking: list[str]
    booted_at: float | None
    measured_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def _timed(kind: str, method: str, fn, count: int) -> tuple[Row, list[Any]]:
    took, out = [], []
    for _ in range(count):
        start = time.perf_counter()
        out.append(fn())
        took.append((time.perf_counter() - start) * 1000)
    p50 = statistics.median(took)
    return Row(kind, method, True, round(p50, 2), round(_percentile(took, 0.95), 2),
               round(1000 / p50, 1) if p50 > 0 else None), out


def _lossless(frame: np.ndarray, before: np.ndarray, after: np.ndarray) -> bool:
    if frame.shape != before.shape:
        return False
    if np.array_equal(frame, before) or np.array_equal(frame, after):
        return True
    moved = float(np.abs(before.astype(np.int16) - after).mean())
    return moved > 0 and float(np.abs(frame.astype(np.int16) - before).mean()) <= moved + 0.5


def bench_capture(device: AdbDevice, count: int = DEFAULT_COUNT, methods=METHODS) -> list[Row]:
    """Time each capture method on `device` (raw first: the others are checked against its frames)."""
    rows: list[Row] = []
    capture = device.capture
    for method in methods:
        try:
            with device._client.bounded(max(10.0, count * 3.0)):
                before = capture.once("raw")
                row, shots = _timed("capture", method, lambda m=method: capture.once(m), count)
                after = capture.once("raw")
            row.lossless = all(_lossless(s, before, after) for s in shots[:1] + shots[-1:])
        except Exception as exc:  # a method this device cannot do is a row that says why, not an abort
            row = Row("capture", method, False, note=str(exc)[:120])
        rows.append(row)
    return rows


def bench_touch(device: AdbDevice, count: int = DEFAULT_COUNT, methods=TOUCH_METHODS) -> list[Row]:
    """Time one no-op touch command per method: nothing on the screen is pressed."""
    from engine.device.touch import start_agent

    rows = []
    for method in methods:
        agent = None
        try:
            with device._client.bounded(max(10.0, count * 3.0)):
                if method == "adb":
                    row, _ = _timed("touch", method, lambda: device._exec("input keyevent 0"), count)
                else:
                    agent = start_agent(device, method, device.frame_size or device.resolution)
                    row, _ = _timed("touch", method, lambda a=agent: a._send("c\n"), count)
                    row.note = "acknowledged" if method == "maatouch" else "a write: minitouch acknowledges nothing"
        except Exception as exc:
            row = Row("touch", method, False, note=str(exc)[:120])
        finally:
            if agent is not None:
                agent.close()
        rows.append(row)
    return rows


def rank(rows: list[Row], kind: str) -> list[str]:
    """Methods of `kind` that worked (and, for capture, were lossless), fastest p50 first; for touch, a method
    whose time is a round trip comes before minitouch, whose time is only a write (it acknowledges nothing)."""
    usable = [r for r in rows if r.kind == kind and r.ok and r.lossless is not False]
    return [r.method for r in sorted(usable, key=lambda r: (r.method == "minitouch", r.p50_ms or 0.0))]


def boot_time(device: AdbDevice) -> float | None:
    """When the device last booted (wall clock, from ``cat /proc/uptime``), None when it cannot say."""
    try:
        with device._client.bounded(3.0):
            text = device._exec("cat /proc/uptime").decode("ascii", "replace").split()
        return round(time.time() - float(text[0]), 1)
    except Exception:
        return None


def run(device: AdbDevice, count: int = DEFAULT_COUNT, touch: bool = True) -> Report:
    rows = bench_capture(device, count) + (bench_touch(device, count) if touch else [])
    ranking = rank(rows, "capture")
    touches = rank(rows, "touch")
    return Report(device.serial, rows, {"capture": ranking[0] if ranking else None,
                                        "touch": touches[0] if touches else None}, ranking, boot_time(device))


def table(report: Report) -> str:
    lines = [f"{'kind':8} {'method':10} {'p50 ms':>8} {'p95 ms':>8} {'fps':>6} {'lossless':>8}  note"]
    for r in report.rows:
        if not r.ok:
            lines.append(f"{r.kind:8} {r.method:10} {'-':>8} {'-':>8} {'-':>6} {'-':>8}  failed: {r.note}")
            continue
        lossless = "-" if r.lossless is None else ("yes" if r.lossless else "NO")
        lines.append(f"{r.kind:8} {r.method:10} {r.p50_ms:8.1f} {r.p95_ms:8.1f} {r.fps or 0:6.1f} {lossless:>8}  "
                     f"{r.note}".rstrip())
    lines.append(f"pick: capture {report.picks.get('capture')}, touch {report.picks.get('touch')}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- the store

def _store_path():
    return agent_home() / "device-picks.json"


def _load() -> dict[str, dict]:
    try:
        data = json.loads(_store_path().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save(report: Report) -> None:
    data = _load()
    data[report.serial] = {"capture": report.picks.get("capture"), "touch": report.picks.get("touch"),
                           "ranking": report.ranking, "booted_at": report.booted_at,
                           "measured_at": round(report.measured_at, 1), "failed": None}
    path = _store_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    except OSError as exc:
        log.warning("cannot store the device pick: %s", exc)


def stored(serial: str) -> dict | None:
    entry = _load().get(serial)
    return entry if isinstance(entry, dict) else None


def mark_failed(serial: str, method: str) -> None:
    """Remember that the stored pick failed: the next open measures the device again."""
    data = _load()
    if serial in data and isinstance(data[serial], dict):
        data[serial]["failed"] = method
        try:
            _store_path().write_text(json.dumps(data, indent=1), encoding="utf-8")
        except OSError:
            pass


def stale(entry: dict, booted_at: float | None) -> str | None:
    """Why a stored pick must be measured again (the device booted since, or the pick failed), or None."""
    if entry.get("failed"):
        return f"the stored pick {entry['failed']} failed"
    was = entry.get("booted_at")
    if booted_at is not None and (was is None or booted_at > float(was) + BOOT_SLACK):
        return "the device restarted since it was measured"
    return None


def apply(device: AdbDevice, *, measure: bool = True) -> str | None:
    """Make `device` use its stored pick (measured again first when stale); returns a note for health, or None
    when nothing is stored. Never raises: a device that cannot be measured keeps raw, then PNG."""
    entry = stored(device.serial)
    if entry is None:
        return None
    try:
        why = stale(entry, boot_time(device)) if measure else None
        if why:
            log.info("measuring %s again: %s", device.serial, why)
            report = run(device, QUICK_COUNT, touch=False)
            report.picks["touch"] = entry.get("touch")
            save(report)
            entry = stored(device.serial) or entry
        device.capture.prefer(*(entry.get("ranking") or [entry.get("capture")]))
        device.capture.on_fail = lambda method: mark_failed(device.serial, method)
        if entry.get("touch") and device.control is None and device.control_wanted == "adb" and not device._asked:
            device.control_wanted = entry["touch"]
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.get("measured_at") or 0))
        device.capture.note = f"stored pick {entry.get('capture')}, measured {when}" + (f" ({why})" if why else "")
        return device.capture.note
    except Exception as exc:
        log.info("stored pick of %s not applied: %s", device.serial, exc)
        return None
