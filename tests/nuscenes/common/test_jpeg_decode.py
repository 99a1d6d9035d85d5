"""The strict reduced-scale JPEG decode that export, evidence and validation share."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.jpeg import decode_jpeg, jpeg_dimensions
from dataset_devkit.nuscenes.validation.images import decode_jpeg_size


def _jpeg(mode: str, size: tuple[int, int], **save: object) -> bytes:
    rng = np.random.default_rng(7)
    channels = {"L": 1, "RGB": 3, "CMYK": 4}[mode]
    pixels = rng.integers(0, 255, size=(size[1], size[0], channels), dtype=np.uint8)
    image = Image.fromarray(pixels[..., 0] if channels == 1 else pixels, mode)
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=90, **save)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("mode", "save"),
    [
        ("RGB", {}),
        ("RGB", {"subsampling": 0}),
        ("RGB", {"progressive": True}),
        ("L", {}),
        ("CMYK", {}),
    ],
)
def test_every_common_jpeg_kind_decodes_to_its_header_size(
    mode: str, save: dict[str, object]
) -> None:
    data = _jpeg(mode, (61, 37), **save)
    assert decode_jpeg(data) == jpeg_dimensions(data) == (61, 37)
    assert decode_jpeg_size(data) == (61, 37)


def test_a_stream_libjpeg_would_have_to_repair_is_refused() -> None:
    data = _jpeg("RGB", (64, 48))
    scan = data.index(b"\xff\xda")
    damaged = {
        "truncated": data[: len(data) // 2],
        "no end-of-image marker": data[:-2],
        "garbage inside the headers": data[:scan] + b"\x00\x01" + data[scan:],
    }
    for what, bad in damaged.items():
        with pytest.raises(FormatError, match=rf"^{what} does not decode \(.+\)$"):
            decode_jpeg(bad, what)
        with pytest.raises(ValueError, match="does not decode"):
            decode_jpeg_size(bad)


def test_corrupt_entropy_data_is_caught_even_when_the_headers_are_intact() -> None:
    data = bytearray(_jpeg("RGB", (64, 48)))
    sos = data.index(b"\xff\xda")
    start = sos + 2 + int.from_bytes(data[sos + 2 : sos + 4], "big")
    # A marker planted in the middle of the entropy-coded segment ends the scan early.
    data[start + 40 : start + 42] = b"\xff\xd9"
    assert jpeg_dimensions(bytes(data)) == (64, 48)
    with pytest.raises(FormatError, match="does not decode"):
        decode_jpeg(bytes(data))


def test_bytes_that_are_not_a_jpeg_are_refused_by_both_checks() -> None:
    png = io.BytesIO()
    Image.new("L", (4, 4)).save(png, format="PNG")
    with pytest.raises(FormatError, match="does not decode"):
        decode_jpeg(png.getvalue())
    with pytest.raises(ValueError, match="not a JPEG stream"):
        decode_jpeg_size(png.getvalue())


def test_a_header_read_before_counts_and_a_stream_of_another_size_is_refused() -> None:
    data = _jpeg("RGB", (61, 37))
    assert decode_jpeg(data, header=(61, 37)) == (61, 37)
    damaged = data[: len(data) // 2]
    with pytest.raises(FormatError, match="does not decode"):
        decode_jpeg(damaged, "half", header=(61, 37))  # still decoded in full, strictly
    with pytest.raises(FormatError, match=r"^other decoded to 8x5 pixels at 1/8 scale"):
        decode_jpeg(data, "other", header=(160, 96))
