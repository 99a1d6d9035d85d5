"""Raw camera encodings to pixels: every encoding from a known image, layouts, refusals."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.pixels import RAW_ENCODINGS, mono16_to_mono8, raw_to_pixels
from tests.nuscenes.camera_content import Array, psnr, scene

WHAT = "/cam/image_raw at 17 ns"


def _rows(pixels: npt.NDArray[np.generic], padding: int, *, cut_last: bool = False) -> bytes:
    """*pixels* as a message's rows: each padded with *padding* junk bytes (0xA5)."""
    height = pixels.shape[0]
    flat = pixels.reshape(height, -1).view(np.uint8).reshape(height, -1)
    junk = np.full((height, padding), 0xA5, dtype=np.uint8)
    data: bytes = np.concatenate([flat, junk], axis=1).tobytes()
    return data[:-padding] if cut_last and padding else data


def _decode(data: bytes, encoding: str, width: int, height: int, step: int, **kw: bool) -> Array:
    return raw_to_pixels(
        data,
        encoding=encoding,
        width=width,
        height=height,
        step=step,
        is_bigendian=kw.get("is_bigendian", False),
        what=WHAT,
    )


# ------------------------------------------------------------------ byte-aligned encodings
def _packed(rgb: Array, encoding: str, seed: int) -> Array:
    """The source image packed in *encoding*'s byte order (alpha random: it must be dropped)."""
    alpha = np.random.default_rng(seed).integers(0, 256, (*rgb.shape[:2], 1), dtype=np.uint8)
    packed: dict[str, Array] = {
        "rgb8": rgb,
        "bgr8": rgb[:, :, ::-1],
        "8UC3": rgb[:, :, ::-1],
        "rgba8": np.concatenate([rgb, alpha], axis=2),
        "bgra8": np.concatenate([rgb[:, :, ::-1], alpha], axis=2),
    }
    return packed[encoding]


@settings(max_examples=60, deadline=None)
@given(
    encoding=st.sampled_from(["rgb8", "bgr8", "8UC3", "rgba8", "bgra8"]),
    height=st.integers(1, 9),
    width=st.integers(1, 13),
    padding=st.integers(0, 7),
    cut_last=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_colour_encodings_round_trip_exactly_from_a_known_image(
    encoding: str, height: int, width: int, padding: int, cut_last: bool, seed: int
) -> None:
    rgb = scene(height, width, seed)
    packed = _packed(rgb, encoding, seed)
    step = width * packed.shape[2] + padding
    data = _rows(np.ascontiguousarray(packed), padding, cut_last=cut_last)
    out = _decode(data, encoding, width, height, step)
    assert out.dtype == np.uint8 and out.shape == (height, width, 3)
    np.testing.assert_array_equal(out, rgb)


@settings(max_examples=40, deadline=None)
@given(
    encoding=st.sampled_from(["mono8", "8UC1"]),
    height=st.integers(1, 9),
    width=st.integers(1, 13),
    padding=st.integers(0, 5),
    seed=st.integers(0, 2**16),
)
def test_mono8_round_trips_exactly(
    encoding: str, height: int, width: int, padding: int, seed: int
) -> None:
    grey = scene(height, width, seed)[:, :, 1].copy()
    out = _decode(_rows(grey, padding), encoding, width, height, width + padding)
    assert out.shape == (height, width)
    np.testing.assert_array_equal(out, grey)


@settings(max_examples=60, deadline=None)
@given(
    encoding=st.sampled_from(["mono16", "16UC1"]),
    height=st.integers(1, 9),
    width=st.integers(1, 13),
    padding=st.integers(0, 5),
    big_endian=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_mono16_keeps_the_high_byte_in_either_byte_order(
    encoding: str, height: int, width: int, padding: int, big_endian: bool, seed: int
) -> None:
    samples = np.random.default_rng(seed).integers(0, 65536, (height, width), dtype=np.uint16)
    stored = samples.astype(">u2" if big_endian else "<u2")
    data = _rows(stored, padding)
    out = _decode(data, encoding, width, height, 2 * width + padding, is_bigendian=big_endian)
    np.testing.assert_array_equal(out, (samples >> 8).astype(np.uint8))


def test_mono16_undoes_the_usual_widening_of_8_bit_grey_and_keeps_both_ends() -> None:
    grey = np.arange(256, dtype=np.uint8).reshape(16, 16)
    widened = grey.astype(np.uint16) * 257  # 0x00 -> 0x0000, 0xFF -> 0xFFFF
    out = _decode(widened.astype("<u2").tobytes(), "mono16", 16, 16, 32)
    np.testing.assert_array_equal(out, grey)
    np.testing.assert_array_equal(mono16_to_mono8(widened), grey)
    ends = np.array([[0, 65535]], dtype=np.uint16)
    assert _decode(ends.astype(">u2").tobytes(), "mono16", 2, 1, 4, is_bigendian=True).tolist() == [
        [0, 255]
    ]


@pytest.mark.parametrize("encoding", ["rgb8", "bgra8", "mono8", "mono16"])
def test_byte_aligned_encodings_are_read_only_views_of_the_message(encoding: str) -> None:
    bytes_per_pixel = {"rgb8": 3, "bgra8": 4, "mono8": 1, "mono16": 2}[encoding]
    data = bytes(range(256)) * 40
    out = _decode(data, encoding, 16, 8, 16 * bytes_per_pixel + 3)
    assert np.shares_memory(out, np.frombuffer(data, dtype=np.uint8))
    assert not out.flags.writeable


# ---------------------------------------------------------------------------------- Bayer
_BAYER_CHANNEL = {"r": 0, "g": 1, "b": 2}


def _mosaic(rgb: Array, pattern: str) -> Array:
    """Sample *rgb* through a colour filter array whose top-left 2x2 block is *pattern*."""
    mosaic = np.empty(rgb.shape[:2], dtype=np.uint8)
    for site, colour in enumerate(pattern):
        dy, dx = divmod(site, 2)
        mosaic[dy::2, dx::2] = rgb[dy::2, dx::2, _BAYER_CHANNEL[colour]]
    return mosaic


@pytest.mark.parametrize("pattern", ["rggb", "bggr", "gbrg", "grbg"])
def test_bayer_demosaic_of_a_smooth_image_is_close_to_it_and_exact_on_a_flat_one(
    pattern: str,
) -> None:
    rgb = scene(96, 128)
    mosaic = _mosaic(rgb, pattern)
    out = _decode(mosaic.tobytes(), f"bayer_{pattern}8", 128, 96, 128)
    assert out.shape == (96, 128, 3)
    # The known sample of each site is kept exactly; the interpolated ones are close.
    np.testing.assert_array_equal(_mosaic(out, pattern), mosaic)
    assert psnr(out, rgb) >= 36.0
    flat = np.empty((7, 9, 3), dtype=np.uint8)
    flat[...] = (200, 90, 31)
    got = _decode(_mosaic(flat, pattern).tobytes(), f"bayer_{pattern}8", 9, 7, 9)
    np.testing.assert_array_equal(got, flat)


@pytest.mark.parametrize(
    ("pattern", "opencv"),
    [
        ("rggb", cv2.COLOR_BayerRGGB2RGB),
        ("bggr", cv2.COLOR_BayerBGGR2RGB),
        ("gbrg", cv2.COLOR_BayerGBRG2RGB),
        ("grbg", cv2.COLOR_BayerGRBG2RGB),
    ],
)
def test_bayer_demosaic_is_opencvs_bilinear_one_away_from_the_border(
    pattern: str, opencv: int
) -> None:
    mosaic = np.random.default_rng(3).integers(0, 256, (31, 42), dtype=np.uint8)
    ours = _decode(mosaic.tobytes(), f"bayer_{pattern}8", 42, 31, 42)
    theirs = cv2.cvtColor(mosaic, opencv)
    np.testing.assert_array_equal(ours[1:-1, 1:-1], theirs[1:-1, 1:-1])


@settings(max_examples=40, deadline=None)
@given(
    pattern=st.sampled_from(["rggb", "bggr", "gbrg", "grbg"]),
    height=st.integers(2, 11),
    width=st.integers(2, 11),
    padding=st.integers(0, 4),
    seed=st.integers(0, 2**16),
)
def test_bayer_keeps_every_sample_for_any_size_including_odd_ones(
    pattern: str, height: int, width: int, padding: int, seed: int
) -> None:
    rgb = scene(height, width, seed)
    mosaic = _mosaic(rgb, pattern)
    out = _decode(_rows(mosaic, padding), f"bayer_{pattern}8", width, height, width + padding)
    np.testing.assert_array_equal(_mosaic(out, pattern), mosaic)


# ------------------------------------------------------------------------------ YUV 4:2:2
@settings(max_examples=60, deadline=None)
@given(
    encoding=st.sampled_from(["uyvy", "yuv422", "yuyv", "yuv422_yuy2"]),
    height=st.integers(1, 9),
    pairs=st.integers(1, 8),
    padding=st.integers(0, 6),
    seed=st.integers(0, 2**16),
)
def test_yuv422_converts_as_opencv_does(
    encoding: str, height: int, pairs: int, padding: int, seed: int
) -> None:
    width = 2 * pairs
    packed = np.random.default_rng(seed).integers(0, 256, (height, width, 2), dtype=np.uint8)
    code = cv2.COLOR_YUV2RGB_UYVY if encoding in ("uyvy", "yuv422") else cv2.COLOR_YUV2RGB_YUY2
    expected = cv2.cvtColor(packed, code)
    out = _decode(_rows(packed, padding), encoding, width, height, 2 * width + padding)
    # Same constants and rounding as OpenCV, so not merely within 1: equal.
    np.testing.assert_array_equal(out, expected)


def test_yuv422_of_a_known_image_comes_back_within_chroma_subsampling_error() -> None:
    rgb = scene(48, 64)
    # Build UYVY from the image with BT.601 limited-range coefficients, chroma averaged per pair.
    r, g, b = (rgb[:, :, k].astype(np.float64) for k in range(3))
    y = 16 + 0.257 * r + 0.504 * g + 0.098 * b
    u = 128 - 0.148 * r - 0.291 * g + 0.439 * b
    v = 128 + 0.439 * r - 0.368 * g - 0.071 * b
    u2 = (u[:, 0::2] + u[:, 1::2]) / 2
    v2 = (v[:, 0::2] + v[:, 1::2]) / 2
    packed = np.stack([u2, y[:, 0::2], v2, y[:, 1::2]], axis=-1)
    data = np.clip(np.rint(packed), 0, 255).astype(np.uint8).tobytes()
    out = _decode(data, "uyvy", 64, 48, 128)
    assert psnr(out, rgb) >= 38.0


# ------------------------------------------------------------------------------- refusals
def _refusal(data: bytes, **layout: object) -> str:
    arguments: dict[str, object] = {
        "encoding": "rgb8",
        "width": 4,
        "height": 2,
        "step": 12,
        "is_bigendian": False,
    }
    arguments.update(layout)
    with pytest.raises(FormatError) as info:
        raw_to_pixels(data, what=WHAT, **arguments)  # type: ignore[arg-type]
    return str(info.value)


def test_an_unknown_encoding_is_refused_with_the_near_miss_and_the_supported_list() -> None:
    message = _refusal(bytes(24), encoding="rgb9")
    assert message.startswith(
        f"{WHAT}: raw image encoding 'rgb9' is not supported; did you mean 'rgb8'"
    )
    aliased = {"8UC1", "8UC3", "16UC1", "yuv422", "yuv422_yuy2"}
    every = ", ".join(sorted(RAW_ENCODINGS - aliased))
    aliases = "16UC1 (mono16), 8UC1 (mono8), 8UC3 (bgr8), yuv422 (uyvy), yuv422_yuy2 (yuyv)"
    assert message.endswith(f"(supported: {every}); aliases: {aliases}")
    assert _refusal(bytes(24), encoding="32FC1") == (
        f"{WHAT}: raw image encoding '32FC1' is not supported; supported: {every}; "
        f"aliases: {aliases}"
    )


def test_every_layout_mistake_is_refused_naming_what_was_found_and_expected() -> None:
    assert _refusal(bytes(24), step=11) == (
        f"{WHAT}: step 11 bytes is shorter than a row of 4 rgb8 pixels (12 bytes)"
    )
    assert _refusal(bytes(23)) == (
        f"{WHAT}: 23 bytes of pixel data, expected at least 24 for 2 rows of 12 bytes (4x2 rgb8)"
    )
    # The last row need not be padded: 16 + 12 bytes are enough for two rows of step 16.
    assert _refusal(bytes(27), step=16) == (
        f"{WHAT}: 27 bytes of pixel data, expected at least 28 for 2 rows of 16 bytes (4x2 rgb8)"
    )
    assert _refusal(bytes(24), width=0) == f"{WHAT}: width is 0, expected a positive integer"
    assert _refusal(bytes(24), height=-2) == f"{WHAT}: height is -2, expected a positive integer"
    assert _refusal(bytes(24), width=True) == f"{WHAT}: width is True, expected a positive integer"
    assert _refusal(bytes(24), step=12.0) == f"{WHAT}: step is 12.0, expected a positive integer"
    assert _refusal(bytes(12), encoding="uyvy", width=3, height=1, step=6) == (
        f"{WHAT}: uyvy is 4:2:2 (two pixels share one U and V) but the width is 3; "
        "expected an even width"
    )
    assert _refusal(bytes(8), encoding="bayer_grbg8", width=8, height=1, step=8) == (
        f"{WHAT}: a bayer_grbg8 mosaic of 8x1 pixels has no complete 2x2 colour pattern; "
        "expected at least 2x2"
    )


def test_numpy_integers_are_accepted_as_sizes() -> None:
    out = raw_to_pixels(
        bytes(range(24)),
        encoding="rgb8",
        width=np.uint32(4),  # type: ignore[arg-type]
        height=np.int64(2),  # type: ignore[arg-type]
        step=np.uint32(12),  # type: ignore[arg-type]
        is_bigendian=False,
        what=WHAT,
    )
    assert out.shape == (2, 4, 3)


def test_the_supported_list_is_what_the_contract_promises() -> None:
    assert {
        "rgb8",
        "bgr8",
        "rgba8",
        "bgra8",
        "mono8",
        "mono16",
        "8UC1",
        "8UC3",
        "16UC1",
        "bayer_rggb8",
        "bayer_bggr8",
        "bayer_gbrg8",
        "bayer_grbg8",
        "yuv422",
        "uyvy",
        "yuyv",
        "yuv422_yuy2",
    } == set(RAW_ENCODINGS)
