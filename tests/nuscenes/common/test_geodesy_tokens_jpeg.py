"""Geodesy, deterministic identities and JPEG checks."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.geodesy import LocalEnu, to_web_mercator, wgs84_to_ecef
from dataset_devkit.nuscenes.common.jpeg import decode_jpeg, encode_jpeg, jpeg_dimensions
from dataset_devkit.nuscenes.common.tokens import (
    TokenChain,
    encode_canonical,
    make_token,
    normalize_channel,
)
from dataset_devkit.nuscenes.export.dataset import scaffold_png


def test_ecef_of_the_equator_and_the_pole_match_the_wgs84_ellipsoid() -> None:
    assert wgs84_to_ecef(0.0, 0.0, 0.0) == pytest.approx((6378137.0, 0.0, 0.0), abs=1e-6)
    assert wgs84_to_ecef(90.0, 0.0, 0.0)[2] == pytest.approx(6356752.314245, abs=1e-4)


def test_web_mercator_reaches_its_published_bounds() -> None:
    assert to_web_mercator(0.0, 180.0)[0] == pytest.approx(20037508.342789244)
    assert to_web_mercator(0.0, 0.0) == pytest.approx((0.0, 0.0), abs=1e-9)


@given(
    e=st.floats(-5000, 5000, allow_nan=False),
    n=st.floats(-5000, 5000, allow_nan=False),
    u=st.floats(-100, 100, allow_nan=False),
)
def test_local_enu_round_trips_through_wgs84(e: float, n: float, u: float) -> None:
    frame = LocalEnu(48.137, 11.575, 520.0)
    assert frame.from_wgs84(*frame.to_wgs84(e, n, u)) == pytest.approx((e, n, u), abs=1e-5)


def test_enu_is_not_a_flat_earth_shortcut() -> None:
    frame = LocalEnu(48.0, 11.0, 0.0)
    east, north, up = frame.from_wgs84(48.0, 12.0, 0.0)
    assert east == pytest.approx(74_565.0, rel=1e-3)
    assert north > 400  # a parallel curves north of the tangent plane's east axis
    assert up < -400  # the ellipsoid curves away from the tangent plane


def test_out_of_range_fixes_are_refused() -> None:
    with pytest.raises(FormatError, match="out of range"):
        to_web_mercator(91.0, 0.0)


def test_tokens_are_32_hex_deterministic_and_namespaced() -> None:
    a = make_token("ns", "scene", "digest", 3)
    assert len(a) == 32 and int(a, 16) >= 0
    assert a == make_token("ns", "scene", "digest", 3)
    assert a != make_token("other", "scene", "digest", 3)
    assert make_token("ns", "ab", "c") != make_token("ns", "a", "bc")


@given(
    st.lists(st.one_of(st.text(), st.integers()), max_size=3),
    st.lists(st.one_of(st.text(), st.integers()), max_size=3),
)
def test_a_token_chain_names_what_make_token_names(
    shared: list[str | int], rest: list[str | int]
) -> None:
    chain = TokenChain("ns", "sample_data", *shared)
    assert chain.token(*rest) == make_token("ns", "sample_data", *shared, *rest)
    assert chain.token(*rest) == chain.token(*rest)  # the kept state is copied, not spent


@pytest.mark.parametrize(
    ("source", "channel"),
    [
        ("cam_front", "CAM_FRONT"),
        ("/camera/front-left", "CAM_FRONT_LEFT"),
        ("CAM_BACK", "CAM_BACK"),
        ("rear wide 2", "CAM_REAR_WIDE_2"),
    ],
)
def test_camera_names_normalize_to_cam_channels(source: str, channel: str) -> None:
    assert normalize_channel(source) == channel


def test_a_name_without_words_is_refused() -> None:
    with pytest.raises(FormatError, match="does not normalize"):
        normalize_channel("camera")


def test_canonical_encoding_is_sorted_compact_and_refuses_nan() -> None:
    assert encode_canonical({"b": 1, "a": [1.5]}) == b'{"a":[1.5],"b":1}'
    with pytest.raises(FormatError, match="non-finite"):
        encode_canonical({"a": float("nan")})


def test_jpeg_header_dimensions_and_a_real_decode_agree() -> None:
    data = encode_jpeg(Image.new("RGB", (40, 24), (200, 10, 10)), 95)
    assert jpeg_dimensions(data) == decode_jpeg(data) == (40, 24)


def test_truncated_or_foreign_images_are_refused() -> None:
    data = encode_jpeg(Image.new("RGB", (40, 24), (200, 10, 10)), 95)
    with pytest.raises(FormatError, match="does not decode"):
        decode_jpeg(data[: len(data) // 2])
    png = io.BytesIO()
    Image.new("L", (4, 4)).save(png, format="PNG")
    with pytest.raises(FormatError, match="not a JPEG"):
        jpeg_dimensions(png.getvalue())


def test_scaffold_map_is_a_1x1_black_grayscale_png() -> None:
    with Image.open(io.BytesIO(scaffold_png())) as img:
        assert (img.format, img.mode, img.size) == ("PNG", "L", (1, 1))
        assert img.getpixel((0, 0)) == 0
    assert scaffold_png() == scaffold_png()


@pytest.mark.parametrize(
    ("source", "channel"),
    [
        ("Rückfahr kamera", "CAM_RUCKFAHR_KAMERA"),
        ("caméra-avant", "CAM_AVANT"),
        ("Camera Ｆront", "CAM_FRONT"),
    ],
)
def test_accented_camera_names_are_transliterated(source: str, channel: str) -> None:
    assert normalize_channel(source) == channel


@pytest.mark.parametrize("source", ["Straße", "前カメラ", "cam ø"])
def test_camera_names_without_an_ascii_form_are_refused_naming_the_letters(source: str) -> None:
    with pytest.raises(FormatError, match="has letters without an ASCII form"):
        normalize_channel(source)
