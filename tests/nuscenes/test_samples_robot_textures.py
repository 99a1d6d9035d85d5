"""The sample robot's camera content: pinned bytes, exact encodings, JPEG-friendly, moving."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.nuscenes.common.jpeg import encode_pixels
from dataset_devkit.nuscenes.common.pixels import raw_to_pixels
from dataset_devkit.nuscenes.samples_robot.textures import (
    TEXTURE_ENCODINGS,
    bytes_per_pixel,
    encoded_texture,
    frame_offset,
    rgb_texture,
)
from tests.nuscenes.robots import psnr

#: Integer arithmetic only: these bytes must not move with numpy, the CPU or the platform
#: (the demo's recording and its root hashes are made of them).
PINNED = "5919e6018af70f69a7eee3bceaaab1f9080f34a675a23c6fdf6eee4ce2e08ce2"


def test_the_texture_bytes_are_pinned() -> None:
    digest = hashlib.sha256()
    for encoding in TEXTURE_ENCODINGS:
        digest.update(encoded_texture(64, 48, "oakd_rgb", encoding).tobytes())
    digest.update(rgb_texture(320, 240, "rear").tobytes())
    assert digest.hexdigest() == PINNED


def _crop(width: int, height: int, name: str, encoding: str, k: int) -> bytes:
    x, y = frame_offset(width, k)
    bpp = bytes_per_pixel(encoding)
    rows = encoded_texture(width, height, name, encoding)[y : y + height]
    return rows[:, x * bpp : (x + width) * bpp].tobytes()


def _rgb(width: int, height: int, name: str, k: int) -> npt.NDArray[np.uint8]:
    x, y = frame_offset(width, k)
    return rgb_texture(width, height, name)[y : y + height, x : x + width]


def _decode(data: bytes, encoding: str, width: int, height: int) -> npt.NDArray[np.uint8]:
    return raw_to_pixels(
        data,
        encoding=encoding,
        width=width,
        height=height,
        step=width * bytes_per_pixel(encoding),
        is_bigendian=False,
        what="texture",
    )


sizes = st.tuples(st.integers(8, 48).map(lambda n: 2 * n), st.integers(8, 40).map(lambda n: 2 * n))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    size=sizes,
    k=st.integers(0, 5000),
    name=st.sampled_from(["oakd_rgb", "rear", "x"]),
    encoding=st.sampled_from(TEXTURE_ENCODINGS),
)
def test_every_encoded_frame_decodes_to_the_rgb_frame(
    size: tuple[int, int], k: int, name: str, encoding: str
) -> None:
    width, height = size
    rgb = _rgb(width, height, name, k)
    decoded = _decode(_crop(width, height, name, encoding, k), encoding, width, height)
    if encoding in ("rgb8", "bgr8", "rgba8", "bgra8"):
        assert np.array_equal(decoded, rgb)
    elif encoding in ("mono8", "mono16"):
        luma = rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
        assert np.abs(decoded - luma).max() <= 1.5
    elif encoding.startswith("bayer_"):
        mosaic = np.frombuffer(_crop(width, height, name, encoding, k), np.uint8)
        mosaic = mosaic.reshape(height, width)
        colours = {"r": 0, "g": 1, "b": 2}
        for i, colour in enumerate(encoding.removeprefix("bayer_").removesuffix("8")):
            dy, dx = divmod(i, 2)
            assert np.array_equal(mosaic[dy::2, dx::2], rgb[dy::2, dx::2, colours[colour]])
        assert psnr(decoded, rgb) > 25.0
    else:  # 4:2:2 halves the chroma across: a 16-pixel crop of saturated texture gave 29.4 dB
        assert psnr(decoded, rgb) > 25.0


def test_mono16_is_mono8_times_257() -> None:
    mono8 = np.frombuffer(_crop(64, 48, "rear", "mono8", 3), np.uint8)
    mono16 = np.frombuffer(_crop(64, 48, "rear", "mono16", 3), "<u2")
    assert np.array_equal(mono16, mono8.astype(np.uint16) * 257)


@pytest.mark.parametrize("size", [(64, 48), (320, 240), (1280, 720)])
def test_frames_stay_above_40_db_through_jpeg_q95_and_differ_from_the_next(
    size: tuple[int, int],
) -> None:
    width, height = size
    for name in ("oakd_rgb", "back_right"):
        for k in (0, 7, 301):
            frame = np.ascontiguousarray(_rgb(width, height, name, k))
            decoded = simplejpeg.decode_jpeg(encode_pixels(frame, 95))
            assert psnr(decoded, frame) >= 40.0
            assert psnr(_rgb(width, height, name, k + 1), frame) < 35.0


def test_the_texture_wraps_so_every_crop_is_one_slice() -> None:
    texture = rgb_texture(320, 240, "oakd_rgb")
    period = texture.shape[1] - 320
    assert np.array_equal(texture[:, period:], texture[:, :320])
    offsets = [frame_offset(320, k) for k in range(2000)]
    assert all(0 <= x < period and x % 2 == 0 and 0 <= y <= 16 and y % 2 == 0 for x, y in offsets)
    assert all(a != b for a, b in itertools.pairwise(offsets))
    runs = list(zip(offsets, offsets[1:], offsets[2:], strict=False))
    assert len(set(runs)) == len(runs)  # no run of views repeats within 2,000 frames


def test_textures_are_read_only() -> None:
    for array in (rgb_texture(64, 48, "rear"), encoded_texture(64, 48, "rear", "bgr8")):
        with pytest.raises(ValueError, match="read-only"):
            array[0, 0] = 1
