"""JPEG checks: header dimensions without decoding, and a real (reduced-scale) decode."""

from __future__ import annotations

import io
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError

__all__ = ["decode_jpeg", "encode_jpeg", "jpeg_dimensions"]

_DCT_SCALE = 8  # libjpeg's smallest scale: 1/8


def _simplejpeg() -> Any:
    try:
        import simplejpeg
    except ImportError as exc:  # pragma: no cover - simplejpeg ships with every extra that reads
        raise MissingDependencyError("simplejpeg", extra="nuscenes", purpose="JPEG checks") from exc
    return simplejpeg


def jpeg_dimensions(data: bytes | memoryview, what: str = "image") -> tuple[int, int]:
    """``(width, height)`` from the frame header, without decoding; FormatError if not a JPEG.

    libjpeg-turbo reads the header (``simplejpeg.decode_jpeg_header``): the same parser
    that :func:`decode_jpeg` and every consumer of the image use, so the size we record is
    the size they see. The SOI check first only gives foreign bytes (a PNG) a clear message.
    """
    view = memoryview(data)
    if len(view) < 4 or view[0] != 0xFF or view[1] != 0xD8:
        raise FormatError(f"{what} is not a JPEG (no SOI marker)")
    try:
        height, width, _, _ = _simplejpeg().decode_jpeg_header(view)
    except (ValueError, TypeError) as exc:
        raise FormatError(f"{what} is a malformed JPEG (header: {exc})") from exc
    if width <= 0 or height <= 0:
        raise FormatError(f"{what} is a JPEG with zero dimensions")
    return (int(width), int(height))


def decode_jpeg(data: bytes | memoryview, what: str = "image") -> tuple[int, int]:
    """Decode *data* for real and return its ``(width, height)``.

    Why this decode: verification has to prove that every entropy-coded block of the frame
    decodes, but it does not need the pixels. libjpeg-turbo (through simplejpeg, which
    releases the GIL) decodes at its smallest DCT scale (1/8) to grayscale, so the inverse
    transform, upsampling and colour conversion run on 1/64 of the pixels while the Huffman
    decoding of the whole stream still happens. The decode is strict: a stream libjpeg has
    to repair (premature end, extraneous bytes, corrupt data) is refused rather than
    silently patched, and the decoded size must be the full frame at 1/8 scale.
    """
    simplejpeg = _simplejpeg()
    try:
        height, width, _, _ = simplejpeg.decode_jpeg_header(data)
        pixels = simplejpeg.decode_jpeg(
            data, colorspace="GRAY", min_width=1, min_height=1, strict=True
        )
    except (ValueError, TypeError) as exc:
        raise FormatError(f"{what} does not decode ({exc})") from exc
    if width <= 0 or height <= 0:
        raise FormatError(f"{what} is a JPEG with zero dimensions")
    expected = (-(-height // _DCT_SCALE), -(-width // _DCT_SCALE))
    if tuple(pixels.shape[:2]) != expected:
        raise FormatError(
            f"{what} decoded to {pixels.shape[1]}x{pixels.shape[0]} pixels at 1/8 scale, "
            f"expected {expected[1]}x{expected[0]} for a {width}x{height} frame"
        )
    return (int(width), int(height))


def encode_jpeg(image: object, quality: int) -> bytes:
    """Encode a PIL image as baseline JPEG at *quality* (deterministic for the same pixels)."""
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=quality, optimize=False, subsampling=0)  # type: ignore[attr-defined]
    return buf.getvalue()
