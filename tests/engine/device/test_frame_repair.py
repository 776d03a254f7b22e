"""Frames repaired where the peers repair them: text before the image, CRLF damage, a rotated display, black."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from engine.core.errors import EngineError
from engine.device import AdbDevice
from engine.device import frames
from engine.sim import FakeAdbServer, SimGame

# The warning VMOS prints before screencap's output, as ALAS quotes it (module/device/method/remove_warning.py).
WARNING = b"WARNING: linker: [vdso]: unused DT entry: type 0x70000001 arg 0x0\n"


def _frame(seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 255, (72, 128, 3), dtype=np.uint8)


def test_text_before_a_png_is_dropped():
    png = frames.encode_png(_frame())
    data, repaired = frames.clean_png(WARNING * 2 + png)
    assert data == png and "text before the image" in repaired[0]
    assert frames.clean_png(png) == (png, [])


@pytest.mark.parametrize("newline", [b"\r\n", b"\r\r\n"])
def test_crlf_damage_to_a_png_is_undone(newline):
    png = frames.encode_png(_frame())
    data, repaired = frames.clean_png(png.replace(b"\n", newline))
    assert data == png and "CRLF" in repaired[0]
    assert np.array_equal(frames.decode_png(data), _frame())


def test_a_raw_frame_loses_its_warning_and_its_crlf_damage():
    raw = frames.encode_raw(_frame(2))
    assert raw.count(b"\n")  # the pixels hold newlines for the damage to hit
    data, repaired = frames.clean_raw(WARNING + raw.replace(b"\n", b"\r\n"))
    assert data == raw and len(repaired) == 2
    assert np.array_equal(frames.decode_raw(data), _frame(2))
    assert frames.clean_raw(raw) == (raw, [])


def test_the_display_rotation_is_read_as_the_peers_read_it():
    # dumpsys display's viewport line (the one ALAS's get_orientation matches), and dumpsys input (MaaFramework's)
    viewport = ("  mViewports=[DisplayViewport{type=INTERNAL, valid=true, isActive=true, displayId=0, "
                "orientation=1, logicalFrame=Rect(0, 0 - 1280, 720), deviceWidth=720, deviceHeight=1280}]\n")
    assert frames.display_rotation(viewport) == 1
    assert frames.display_rotation("    SurfaceOrientation: 3\n") == 3
    assert frames.display_rotation("nothing here") is None
    upright = _frame()
    assert np.array_equal(frames.turn(cv2.rotate(upright, cv2.ROTATE_90_COUNTERCLOCKWISE), 1), upright)
    assert np.array_equal(frames.turn(cv2.rotate(upright, cv2.ROTATE_90_CLOCKWISE), 3), upright)


def test_black_is_a_mean_below_one_even_with_a_few_lit_pixels():
    frame = np.zeros((720, 1280, 3), np.uint8)
    frame[::8, ::8][:3, :3] = 255  # a cursor's worth of light where the sample looks
    assert frames.frame_problem(frame) == "black"
    assert frames.frame_problem(_frame()) is None


def test_a_device_turns_a_rotated_frame_and_repairs_damaged_bytes(tiny_graph, fast_policies):
    game = SimGame(tiny_graph, seed=3)
    with FakeAdbServer({"sim-0": game}) as server:
        device = AdbDevice("sim-0", host="127.0.0.1", port=server.port, policies=fast_policies, sleep=lambda s: 0)
        upright = device.screenshot()
        real_exec = device._exec
        rotated = cv2.rotate(upright, cv2.ROTATE_90_COUNTERCLOCKWISE)

        def display_turned(command: str) -> bytes:
            if command == "screencap":
                return WARNING + frames.encode_raw(rotated)
            if command == "dumpsys display":
                return real_exec(command).replace(b"orientation=0", b"orientation=1")
            return real_exec(command)

        device._exec = display_turned
        assert np.array_equal(device.screenshot(), upright)
        assert device.frame_size == (1280, 720) and "shell warning" in device.frame_repairs[0]

        device.screenshot_method = "png"
        device._exec = lambda c: frames.encode_png(upright).replace(b"\n", b"\r\n") if c == "screencap -p" \
            else real_exec(c)
        assert np.array_equal(device.screenshot(), upright)
        assert "CRLF" in device.frame_repairs[0]


def test_adbutils_screenshot_is_never_used_and_an_undecodable_frame_is_an_error(tiny_graph, fast_policies,
                                                                                 monkeypatch):
    import adbutils

    def black_on_failure(*args, **kwargs):  # adbutils' screenshot() returns a black image when decoding fails
        raise AssertionError("adbutils' screenshot() was called")

    monkeypatch.setattr(adbutils.AdbDevice, "screenshot", black_on_failure)
    game = SimGame(tiny_graph, seed=3)
    with FakeAdbServer({"sim-0": game}) as server:
        device = AdbDevice("sim-0", host="127.0.0.1", port=server.port, policies=fast_policies, sleep=lambda s: 0)
        assert device.screenshot().mean() > 1
        device._exec = lambda command: b"\x89PNG\r\n\x1a\n not an image at all"
        with pytest.raises(Exception) as caught:
            device.screenshot()
        assert isinstance(caught.value, EngineError), repr(caught.value)  # a structured error, never a black frame
