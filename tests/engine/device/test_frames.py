"""Frame functions: raw decoding, fitting to the graph's resolution, black and flat detection; image headers read
before decoding (engine.core.imageheader)."""

from __future__ import annotations

import io
import struct
import zlib

import cv2
import numpy as np
import pytest

from engine.core.errors import BadFrame
from engine.core.imageheader import check_image_file, check_size, image_size
from engine.device import frames


def _scene(width: int = 1280, height: int = 720) -> np.ndarray:
    rng = np.random.default_rng(1)
    frame = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    cv2.rectangle(frame, (width // 4, height // 4), (width // 2, height // 2), (10, 200, 30), -1)
    return frame


@pytest.mark.parametrize("colorspace", [True, False])
def test_raw_round_trip_with_either_header(colorspace):
    frame = _scene(64, 36)
    assert np.array_equal(frames.decode_raw(frames.encode_raw(frame, colorspace=colorspace)), frame)


def test_raw_channel_order_is_bgr():
    # One red pixel in RGBA order must come back as (0, 0, 255) in BGR.
    data = struct.pack("<IIII", 1, 1, 1, 0) + bytes([255, 0, 0, 255])
    assert frames.decode_raw(data)[0, 0].tolist() == [0, 0, 255]


def test_raw_bgra_and_rgbx_formats():
    bgra = struct.pack("<III", 1, 1, 5) + bytes([1, 2, 3, 255])
    rgbx = struct.pack("<III", 1, 1, 2) + bytes([3, 2, 1, 0])
    assert frames.decode_raw(bgra)[0, 0].tolist() == [1, 2, 3]
    assert frames.decode_raw(rgbx)[0, 0].tolist() == [1, 2, 3]


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00" * 5, "shorter than its header"),
        (struct.pack("<III", 2, 2, 99) + b"\x00" * 16, "format 99"),
        (struct.pack("<III", 2, 2, 1) + b"\x00" * 40, "needs 16"),
        (struct.pack("<III", 0, 2, 1), "0x2"),
    ],
)
def test_raw_garbage_is_a_bad_frame(data, message):
    with pytest.raises(BadFrame, match=message):
        frames.decode_raw(data)


def test_truncated_raw_is_told_apart_from_garbage():
    full = frames.encode_raw(_scene(32, 18))
    assert frames.raw_truncated(full[: len(full) // 2])
    assert not frames.raw_truncated(full)
    assert not frames.raw_truncated(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)


def test_png_decoding_and_garbage():
    frame = _scene(64, 36)
    ok, png = cv2.imencode(".png", frame)
    assert np.array_equal(frames.decode_png(png.tobytes()), frame)
    with pytest.raises(BadFrame, match="not an image"):
        frames.decode_png(b"/system/bin/sh: screencap: not found")


@pytest.mark.parametrize("size", [(1920, 1080), (2560, 1440), (1280, 720), (960, 540)])
def test_frames_of_the_same_shape_are_scaled_to_the_graph(size):
    frame = _scene(*size)
    fitted = frames.fit(frame, (1280, 720))
    assert fitted.shape == (720, 1280, 3)
    # The green rectangle keeps its place: a quarter of the way in, whatever the device's size.
    assert fitted[720 * 3 // 8, 1280 * 3 // 8].tolist() == [10, 200, 30]


def test_same_size_frame_is_returned_untouched():
    frame = _scene()
    assert frames.fit(frame, (1280, 720)) is frame


def test_portrait_frame_is_a_bad_frame_that_says_so():
    with pytest.raises(BadFrame, match="portrait 720x1280"):
        frames.fit(_scene(720, 1280), (1280, 720))


@pytest.mark.parametrize("size", [(1280, 800), (1600, 900 + 100), (1024, 768)])
def test_other_aspect_ratios_are_bad_frames(size):
    with pytest.raises(BadFrame, match="not the graph's 1280x720 shape"):
        frames.fit(_scene(*size), (1280, 720))


def test_non_bgr_frames_are_bad_frames():
    with pytest.raises(BadFrame, match="not BGR uint8"):
        frames.fit(np.zeros((720, 1280), dtype=np.uint8), (1280, 720))


def test_black_frame_detection():
    black = np.zeros((720, 1280, 3), dtype=np.uint8)
    assert frames.is_black(black)
    assert frames.frame_problem(black) == "black"
    near_black = black + 5
    assert frames.is_black(near_black)
    dark_scene = black.copy()
    cv2.putText(dark_scene, "Loading", (500, 360), cv2.FONT_HERSHEY_SIMPLEX, 2, (255, 255, 255), 4)
    assert not frames.is_black(dark_scene)
    assert frames.frame_problem(dark_scene) is None


def test_flat_frame_detection():
    white = np.full((720, 1280, 3), 240, dtype=np.uint8)
    assert not frames.is_black(white)
    assert frames.is_flat(white)
    assert frames.frame_problem(white) == "flat"
    assert not frames.is_flat(_scene())
    assert frames.frame_problem(_scene()) is None


# --------------------------------------------------------------------------------------------- empty and oversized


@pytest.mark.parametrize("shape", [(0, 0, 3), (0, 1280, 3), (720, 0, 3)])
def test_an_empty_frame_is_a_bad_frame_not_a_division_by_zero(shape):
    frame = np.zeros(shape, np.uint8)
    with pytest.raises(BadFrame, match="empty"):
        frames.check_shape(frame, (1280, 720))
    with pytest.raises(BadFrame, match="empty"):
        frames.fit(frame, (1280, 720))


def _png_header(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))


@pytest.mark.parametrize("ext", [".png", ".jpg", ".bmp", ".webp"])
def test_image_sizes_are_read_from_the_header(ext):
    ok, encoded = cv2.imencode(ext, np.zeros((37, 53, 3), np.uint8))
    assert ok and image_size(io.BytesIO(encoded.tobytes())) == (53, 37)


def test_a_jpeg_size_is_found_past_a_long_segment_and_unknown_content_has_none():
    ok, encoded = cv2.imencode(".jpg", np.zeros((37, 53, 3), np.uint8))
    data = encoded.tobytes()
    exif = b"\xff\xe1" + struct.pack(">H", 60000) + bytes(59998)  # a big APP1 before the frame header
    assert image_size(io.BytesIO(data[:2] + exif + data[2:])) == (53, 37)
    assert image_size(io.BytesIO(b"not an image")) is None
    assert image_size(io.BytesIO(data[:40])) is None  # cut before its frame header


@pytest.mark.parametrize("size, message", [((20000, 20000), "20000x20000, over the limit"),
                                           ((8000, 6000), "over the limit"), ((0, 10), "empty image")])
def test_oversized_or_empty_headers_are_refused_without_decoding(monkeypatch, size, message):
    decoded = []
    monkeypatch.setattr(frames.cv2, "imdecode", lambda *a: decoded.append(a))
    with pytest.raises(BadFrame, match=message):
        frames.decode_png(_png_header(*size) + bytes(100))
    assert decoded == []  # refused before OpenCV saw a byte


def test_limits_are_a_side_and_an_area():
    check_size((8192, 4608), "ok")  # 37.7 MP, sides within 8192
    with pytest.raises(BadFrame):
        check_size((8193, 100), "one side too long")
    check_size(None, "an unknown format is left to the decoder")


def test_check_image_file_reads_only_the_header(tmp_path):
    path = tmp_path / "huge.png"
    path.write_bytes(_png_header(30000, 100))  # nothing after the header: decoding would fail, the header decides
    with pytest.raises(BadFrame, match="30000x100"):
        check_image_file(path)
