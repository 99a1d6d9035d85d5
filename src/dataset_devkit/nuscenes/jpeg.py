"""JPEG checks: header dimensions without decoding, and a real (reduced-scale) decode."""

from __future__ import annotations

import io

from dataset_devkit.errors import FormatError, MissingDependencyError

__all__ = ["decode_jpeg", "encode_jpeg", "jpeg_dimensions"]

_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


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


def decode_jpeg(data: bytes, what: str = "image") -> tuple[int, int]:
    """Decode *data* for real and return its ``(width, height)``.

    The decode runs in libjpeg's DCT-scaling draft mode (1/8 scale): every entropy-coded
    block is still decoded, so a corrupt or truncated stream fails, at a fraction of the cost
    of a full-size decode.
    """
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover - Pillow ships with the mcap/video extras
        raise MissingDependencyError("PIL", extra="mcap", purpose="JPEG verification") from exc
    try:
        with Image.open(io.BytesIO(data), formats=["JPEG"]) as img:
            size = img.size
            img.draft(img.mode, (max(1, size[0] // 8), max(1, size[1] // 8)))
            img.load()
    except (OSError, ValueError, SyntaxError) as exc:
        raise FormatError(f"{what} does not decode as a JPEG: {exc}") from exc
    return (int(size[0]), int(size[1]))


def encode_jpeg(image: object, quality: int) -> bytes:
    """Encode a PIL image as baseline JPEG at *quality* (deterministic for the same pixels)."""
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=quality, optimize=False, subsampling=0)  # type: ignore[attr-defined]
    return buf.getvalue()
