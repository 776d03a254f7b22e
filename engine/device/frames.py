"""Pure functions on frames: decode what screencap sends, fit it to the graph's resolution, judge its sanity.

Raw ``screencap`` output is a little-endian header (width, height, pixel format, and on Android 9+ a colour space)
followed by the pixels; decoding it is a reshape and a channel swap (well under a millisecond), where ``screencap
-p`` costs a PNG encode on the phone and a decode here (tens of milliseconds).
"""

from __future__ import annotations

import re
import struct

import cv2
import numpy as np

from engine.core.errors import BadFrame
from engine.core.imageheader import check_image_bytes

# Android PixelFormat values screencap writes: bytes per pixel and how to get BGR.
_RGBA_8888, _RGBX_8888, _RGB_888, _RGB_565, _BGRA_8888 = 1, 2, 3, 4, 5
_BYTES_PER_PIXEL = {_RGBA_8888: 4, _RGBX_8888: 4, _RGB_888: 3, _RGB_565: 2, _BGRA_8888: 4}

ASPECT_TOLERANCE = 0.01
"""Relative difference of width/height ratios that still counts as the same shape (1920x1080 vs 1280x720)."""


def decode_raw(data: bytes | bytearray | memoryview) -> np.ndarray:
    """BGR frame from raw ``screencap`` output.

    The header is 12 bytes (width, height, format) before Android 9 and 16 bytes (plus colour space) since; which
    one is told by the length of what follows it.

    Raises:
        BadFrame: too short, unknown pixel format, or a length that fits neither header.
    """
    if len(data) < 12:
        raise BadFrame(f"raw screencap output is {len(data)} bytes, shorter than its header")
    width, height, fmt = struct.unpack_from("<III", data, 0)
    bpp = _BYTES_PER_PIXEL.get(fmt)
    if bpp is None:
        raise BadFrame(f"raw screencap pixel format {fmt} is not supported")
    if not (0 < width <= 10_000 and 0 < height <= 10_000):
        raise BadFrame(f"raw screencap header says {width}x{height}")
    size = width * height * bpp
    header = len(data) - size
    if header not in (12, 16):
        raise BadFrame(f"raw screencap output is {len(data)} bytes; a {width}x{height} frame needs {size} + header")
    pixels = np.frombuffer(data, dtype=np.uint8, count=size, offset=header)
    if fmt == _RGB_565:
        return cv2.cvtColor(pixels.reshape(height, width, 2), cv2.COLOR_BGR5652BGR)
    pixels = pixels.reshape(height, width, bpp)
    if fmt == _BGRA_8888:
        return np.ascontiguousarray(pixels[:, :, :3])
    if fmt == _RGB_888:
        return cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    return cv2.cvtColor(pixels, cv2.COLOR_RGBA2BGR)


def raw_truncated(data: bytes | bytearray) -> bool:
    """Whether `data` starts with a plausible raw header but holds fewer pixels than it announces (a connection
    cut mid-answer, worth a retry), as opposed to output that is no raw frame at all."""
    if len(data) < 12:
        return False
    width, height, fmt = struct.unpack_from("<III", data, 0)
    bpp = _BYTES_PER_PIXEL.get(fmt)
    if bpp is None or not (0 < width <= 10_000 and 0 < height <= 10_000):
        return False
    return len(data) < 12 + width * height * bpp


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PNG_END = b"IEND\xaeB`\x82"


def encode_raw(frame: np.ndarray, *, colorspace: bool = True) -> bytes:
    """Raw ``screencap`` bytes (RGBA_8888) of a BGR frame: what a phone would send (tests, the fake server)."""
    height, width = frame.shape[:2]
    header = struct.pack("<IIII", width, height, _RGBA_8888, 1) if colorspace else struct.pack(
        "<III", width, height, _RGBA_8888
    )
    return header + cv2.cvtColor(frame, cv2.COLOR_BGR2RGBA).tobytes()


def decode_png(data: bytes | bytearray) -> np.ndarray:
    """BGR frame from ``screencap -p`` output (any image format OpenCV reads).

    Raises:
        BadFrame: not an image, or its header announces an empty or oversized one (refused before decoding).
    """
    check_image_bytes(data, "screencap -p output")
    frame = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR) if data else None
    if frame is None:
        head = bytes(data[:16])
        raise BadFrame(f"screencap -p output ({len(data)} bytes, starting {head!r}) is not an image")
    return frame


def fit(frame: np.ndarray, resolution: tuple[int, int]) -> np.ndarray:
    """`frame` at the graph's `resolution` (width, height): as is, or scaled down/up when the shape matches.

    Raises:
        BadFrame: the frame is portrait while the graph is landscape (or the reverse), or has another shape.
    """
    check_shape(frame, resolution)
    width, height = resolution
    if frame.shape[1] == width and frame.shape[0] == height:
        return frame
    shrinking = frame.shape[1] > width
    return cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)


def check_shape(frame: np.ndarray, resolution: tuple[int, int]) -> None:
    """Raise BadFrame unless `frame` is a non-empty BGR uint8 image of `resolution`'s orientation and aspect
    ratio."""
    if not isinstance(frame, np.ndarray):
        raise BadFrame(f"frame is a {type(frame).__name__}, not an image array")
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise BadFrame(f"frame is {frame.dtype} of shape {frame.shape}, not BGR uint8")
    height, width = frame.shape[:2]
    if width == 0 or height == 0:
        raise BadFrame(f"frame is empty ({width}x{height})")
    want_w, want_h = resolution
    if (width >= height) != (want_w >= want_h):
        raise BadFrame(
            f"frame is {'portrait' if height > width else 'landscape'} {width}x{height} but the graph is "
            f"{want_w}x{want_h}: rotate the device or set the game's orientation"
        )
    if abs((width / height) / (want_w / want_h) - 1) > ASPECT_TOLERANCE:
        raise BadFrame(
            f"frame is {width}x{height}, which is not the graph's {want_w}x{want_h} shape: set the emulator's "
            f"resolution to {want_w}x{want_h} (or another size of that aspect ratio)"
        )


def _ranges(frame: np.ndarray) -> list[tuple[float, float]]:
    """(lowest, highest) value of each channel over every 8th pixel: plenty to tell a flat frame from a game
    screen, 64x cheaper than all of them, and computed with OpenCV (numpy's strided uint8 reductions cost 6x more:
    this runs on every look)."""
    sample = np.ascontiguousarray(frame[::8, ::8])
    channels = cv2.split(sample) if sample.ndim == 3 else [sample]
    return [cv2.minMaxLoc(channel)[:2] for channel in channels]


WARNING_PREFIX = b"WARNING: linker:"
"""What some emulators' shells (VMOS, old x86 images) print before a command's output (ALAS
module/device/method/remove_warning.py remove_shell_warning)."""
_SEARCH = 64 * 1024
# The PNG signature after a pty turned each \n into \r\n once or twice (ALAS module/device/method/adb.py
# __load_screenshot methods 1 and 2: replace \r\n, then \r\r\n, by \n).
_CRLF_DAMAGE = ((b"\x89PNG\r\r\n\x1a\r\n", b"\r\n"), (b"\x89PNG\r\r\r\n\x1a\r\r\n", b"\r\r\n"))


def clean_png(data: bytes) -> tuple[bytes, list[str]]:
    """``screencap -p`` output with text before the PNG signature dropped and CRLF damage undone; and what was
    repaired (empty when nothing was)."""
    repaired = []
    start = data.find(b"\x89PNG\r", 0, _SEARCH)
    if start > 0:
        repaired.append(f"dropped {start} bytes of text before the image ({bytes(data[:40])!r})")
        data = data[start:]
    for damaged, newline in _CRLF_DAMAGE:
        if data.startswith(damaged):
            data = data.replace(newline, b"\n")
            repaired.append("undid CRLF damage (a terminal turned \\n into \\r\\n)")
            break
    return data, repaired


def clean_raw(data: bytes) -> tuple[bytes, list[str]]:
    """Raw ``screencap`` output with shell warning lines before the header dropped, and CRLF damage undone when
    the header's size says the pixels grew by it; and what was repaired."""
    repaired = []
    while data.startswith(WARNING_PREFIX) and b"\n" in data[:_SEARCH]:
        line, _, data = data.partition(b"\n")
        repaired.append(f"dropped a shell warning before the frame ({line[:60]!r})")
    if len(data) >= 12:
        width, height, fmt = struct.unpack_from("<III", data, 0)
        size = width * height * _BYTES_PER_PIXEL.get(fmt, 0)
        if size and len(data) - size not in (12, 16) and b"\r\n" in data:
            fixed = data.replace(b"\r\n", b"\n")
            if len(fixed) - size in (12, 16):
                data = fixed
                repaired.append("undid CRLF damage (a terminal turned \\n into \\r\\n)")
    return data, repaired


# Surface rotation -> the turn that brings a frame back upright; ALAS droidcast.py turns orientation 1 with
# ROTATE_90_CLOCKWISE, the other quarter turn is its mirror.
_TURNS = {1: cv2.ROTATE_90_CLOCKWISE, 2: cv2.ROTATE_180, 3: cv2.ROTATE_90_COUNTERCLOCKWISE}
_VIEWPORT = re.compile(r"DisplayViewport\{.*?valid=true.*?orientation=(\d)")
_SURFACE = re.compile(r"SurfaceOrientation:\s*(\d)")


def display_rotation(dumpsys: str) -> int | None:
    """The display's rotation (0-3) from ``dumpsys display`` (ALAS connection.py get_orientation's DisplayViewport)
    or ``dumpsys input`` (MaaFramework's SurfaceOrientation), or None when neither says."""
    match = _VIEWPORT.search(dumpsys) or _SURFACE.search(dumpsys)
    return int(match.group(1)) if match and int(match.group(1)) in (0, 1, 2, 3) else None


def turn(frame: np.ndarray, rotation: int) -> np.ndarray:
    """`frame` turned upright for a display at `rotation` (0: as is)."""
    return cv2.rotate(frame, _TURNS[rotation]) if rotation in _TURNS else frame


def is_black(frame: np.ndarray, threshold: int = 12) -> bool:
    """Every sampled pixel is darker than `threshold` on every channel (a sleeping screen, a dead renderer)."""
    return max(hi for _, hi in _ranges(frame)) < threshold


def is_flat(frame: np.ndarray, tolerance: int = 6) -> bool:
    """The frame is one colour (within `tolerance` per channel): nothing a page could be recognised on."""
    return max(hi - lo for lo, hi in _ranges(frame)) <= tolerance


def frame_problem(frame: np.ndarray, *, black: int = 12, tolerance: int = 6) -> str | None:
    """``"black"``, ``"flat"`` or None for a frame worth looking at (one pass over the sample)."""
    if frame.size == 0:
        return "black"
    ranges = _ranges(frame)
    if max(hi for _, hi in ranges) < black:
        return "black"
    if max(cv2.mean(np.ascontiguousarray(frame[::8, ::8]))[:3]) < 1:  # black but for a few lit pixels (a cursor)
        return "black"
    if max(hi - lo for lo, hi in ranges) <= tolerance:
        return "flat"
    return None


def encode_png(frame: np.ndarray) -> bytes:
    """A frame as PNG bytes (what adb_screenshot answers and bundles keep)."""
    ok, encoded = cv2.imencode(".png", np.ascontiguousarray(frame))
    if not ok:
        raise ValueError("the frame could not be encoded as PNG")
    return encoded.tobytes()
