"""JPEG checks: header dimensions without decoding, and a real (reduced-scale) decode."""

from __future__ import annotations

import io

from dataset_devkit.errors import FormatError, MissingDependencyError

__all__ = ["decode_jpeg", "encode_jpeg", "jpeg_dimensions"]

_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_DCT_SCALE = 8  # libjpeg's smallest scale: 1/8


def jpeg_dimensions(data: bytes | memoryview, what: str = "image") -> tuple[int, int]:
    """``(width, height)`` from the first SOF segment; FormatError when *data* is not a JPEG."""
    view = memoryview(data)
    if len(view) < 4 or view[0] != 0xFF or view[1] != 0xD8:
        raise FormatError(f"{what} is not a JPEG (no SOI marker)")
    pos = 2
    n = len(view)
    while pos + 4 <= n:
        if view[pos] != 0xFF:
            raise FormatError(f"{what} is a malformed JPEG (bad marker at byte {pos})")
        marker = view[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        length = (view[pos + 2] << 8) | view[pos + 3]
        if marker in _SOF_MARKERS:
            if pos + 9 > n:
                break
            height = (view[pos + 5] << 8) | view[pos + 6]
            width = (view[pos + 7] << 8) | view[pos + 8]
            if width == 0 or height == 0:
                raise FormatError(f"{what} is a JPEG with zero dimensions")
            return (width, height)
        if marker == 0xDA:  # start of scan before any frame header
            break
        pos += 2 + length
    raise FormatError(f"{what} is a truncated or malformed JPEG (no frame header)")


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
    try:
        import simplejpeg
    except ImportError as exc:  # pragma: no cover - simplejpeg ships with the mcap/video extras
        raise MissingDependencyError(
            "simplejpeg", extra="mcap", purpose="JPEG verification"
        ) from exc
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
