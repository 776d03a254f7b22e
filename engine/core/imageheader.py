"""Image sizes read from the file header alone, so an oversized image is refused before a byte of it is decoded.

PNG (IHDR), JPEG (the first SOFn segment), BMP (BITMAPINFOHEADER and the older core header) and WebP (VP8, VP8L,
VP8X) are read here; any other content has no known size (None) and is left to the decoder. A 20000x20000 PNG of
one colour is a few hundred kilobytes on disk and 1.2 GB once decoded: the header is the only safe place to stop
it.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import BinaryIO

from engine.core.errors import BadFrame

MAX_SIDE = 8192
"""Longest side, in pixels, of an image the engine decodes."""
MAX_PIXELS = 40_000_000
"""Largest area, in pixels, of an image the engine decodes (120 MB as BGR)."""

_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
"""JPEG start-of-frame markers (baseline, progressive, lossless...), which carry the size."""


def image_size(stream: BinaryIO) -> tuple[int, int] | None:
    """(width, height) from the header of the image in `stream` (read from its current position), or None when
    the format is not one this module reads or the header is cut short."""
    head = stream.read(32)
    if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24 and head[12:16] == b"IHDR":
        return struct.unpack(">II", head[16:24])
    if head.startswith(b"BM") and len(head) >= 26:
        return _bmp_size(head)
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return _webp_size(head)
    if head.startswith(b"\xff\xd8"):
        stream.seek(-len(head) + 2, io.SEEK_CUR)
        return _jpeg_size(stream)
    return None


def _bmp_size(head: bytes) -> tuple[int, int] | None:
    header_size = struct.unpack_from("<I", head, 14)[0]
    if header_size == 12:  # OS/2 core header: 16-bit sides
        return struct.unpack_from("<HH", head, 18)
    width, height = struct.unpack_from("<ii", head, 18)
    return abs(width), abs(height)  # a negative height is a top-down bitmap


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30:
        width, height = struct.unpack_from("<HH", head, 26)
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(head) >= 30:
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    return None


def _jpeg_size(stream: BinaryIO) -> tuple[int, int] | None:
    """Walk the JPEG's segments (each says its length) to the first start-of-frame."""
    while True:
        byte = stream.read(1)
        while byte == b"\xff":  # markers may be padded with 0xFF
            byte = stream.read(1)
        if not byte:
            return None
        marker = byte[0]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            continue
        length_bytes = stream.read(2)
        if len(length_bytes) < 2:
            return None
        length = struct.unpack(">H", length_bytes)[0]
        if marker in _SOF:
            body = stream.read(5)
            if len(body) < 5:
                return None
            height, width = struct.unpack_from(">HH", body, 1)
            return width, height
        if marker == 0xDA or length < 2:  # the scan starts with no frame header: not a JPEG we can size
            return None
        stream.seek(length - 2, io.SEEK_CUR)  # past the end, the next read is empty: None


def check_size(size: tuple[int, int] | None, what: str, *, max_side: int = MAX_SIDE,
               max_pixels: int = MAX_PIXELS) -> None:
    """Raise BadFrame when a header `size` is empty or over the limits (None, an unknown format, passes)."""
    if size is None:
        return
    width, height = size
    if width <= 0 or height <= 0:
        raise BadFrame(f"{what} is {width}x{height}: an empty image")
    if max(width, height) > max_side or width * height > max_pixels:
        raise BadFrame(f"{what} is {width}x{height}, over the limit of {max_side} px a side and "
                       f"{max_pixels // 1_000_000} megapixels: refused without decoding it")


def check_image_file(path: str | Path, *, max_side: int = MAX_SIDE, max_pixels: int = MAX_PIXELS) -> None:
    """Refuse (BadFrame) an image file whose header says it is empty or too large; OSError if it cannot be read."""
    with open(path, "rb") as stream:
        size = image_size(stream)
    check_size(size, str(path), max_side=max_side, max_pixels=max_pixels)


def check_image_bytes(data: bytes | bytearray | memoryview, what: str = "image", *, max_side: int = MAX_SIDE,
                      max_pixels: int = MAX_PIXELS) -> None:
    """The same check on an encoded image in memory (``screencap -p`` output, a PNG from a client)."""
    check_size(image_size(io.BytesIO(bytes(data[:65536]) if len(data) > 65536 else bytes(data))), what,
               max_side=max_side, max_pixels=max_pixels)
