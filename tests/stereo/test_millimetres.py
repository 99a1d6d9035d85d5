"""The blocked conversion gives exactly the float64 ``rint(depth * 1000)`` millimetres.

Every float32 bit pattern was compared once (far limits 1000 and 4294967 m: no difference);
these tests keep the cases that decide it: half-millimetre ties, the far limit between two
float32 values, signed zeros and NaNs, subnormals, block edges and other input types.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataset_devkit.stereo.errors import DepthOverflowError
from dataset_devkit.stereo.millimetres import BLOCK_VALUES, MillimetreEncoder


def _reference(metres: np.ndarray[Any, Any], far: float | None) -> np.ndarray[Any, Any]:
    """The float64 conversion the stored bytes were defined by."""
    depth = np.asarray(metres, dtype=np.float64)
    valid = np.isfinite(depth) & (depth > 0)
    if far is not None:
        valid &= depth <= far
    millimetres: np.ndarray[Any, Any] = np.rint(np.where(valid, depth, 0.0) * 1000)
    return millimetres.astype(np.uint32)


def _encode(metres: np.ndarray[Any, Any], far: float | None) -> tuple[np.ndarray[Any, Any], int]:
    depth = metres.reshape(1, 1, -1)
    out = np.empty(depth.shape, dtype=np.uint32)
    invalid = MillimetreEncoder(depth.dtype, far).encode(depth, out, where="d.npy", first=0)
    return out.reshape(-1), invalid


def _edges() -> np.ndarray[Any, Any]:
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, 1e-40, 0.0005, 0.0015]
    values += [423.3045, 821.4195, 81.5255, 0.1, 999.9999, 1000.0, 1000.0001, 1e9, -3.0]
    ties = np.arange(0.5, 5000.5, 1.0) / 1000  # k + 0.5 millimetres, as float32
    table = np.concatenate([np.array(values, dtype=np.float32), ties.astype(np.float32)])
    return np.concatenate([table, np.nextafter(table, np.float32(np.inf))])


@pytest.mark.parametrize("far", [None, 1000.0, 0.1, 1000.00001])
def test_float32_edges_match_the_float64_conversion(far):
    depth = _edges()
    if far is None:  # 1e9 m would not fit: an error, tested below
        depth = depth[~(np.abs(depth) > 4e6)]
    encoded, invalid = _encode(depth, far)
    with np.errstate(invalid="ignore"):
        expected = _reference(depth, far)
    assert np.array_equal(encoded, expected)
    assert invalid == int((expected == 0).sum())


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300), st.sampled_from([1.5, 80.0]))
def test_any_float32_bit_pattern_matches_the_float64_conversion(bits, far):
    depth = np.array(bits, dtype=np.uint32).view(np.float32)
    encoded, _ = _encode(depth, far)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(encoded, _reference(depth, far))


@pytest.mark.parametrize("dtype", ["<f2", "<f8", ">f4", ">f8"])
def test_other_float_types_go_through_float64_to_the_same_values(dtype):
    depth = _edges()
    depth = depth[np.abs(depth) < 6e4].astype(dtype)  # within float16's range
    encoded, _ = _encode(depth, 1000.0)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(encoded, _reference(depth, 1000.0))


def test_values_across_block_edges_land_where_they_belong():
    depth = np.linspace(0.3, 80.0, 2 * BLOCK_VALUES + 17, dtype=np.float32)
    encoded, invalid = _encode(depth, None)
    assert invalid == 0 and np.array_equal(encoded, _reference(depth, None))


def test_the_first_overflowing_pixel_is_named_even_in_a_later_block():
    depth = np.ones((3, 2, BLOCK_VALUES), dtype=np.float32)
    depth[1, 1, 5] = depth[2, 0, 0] = 5.0e6
    out = np.empty(depth.shape, dtype=np.uint32)
    with pytest.raises(DepthOverflowError, match=r"5000000\.0 m at frame 11, pixel \(1, 5\)"):
        MillimetreEncoder(np.float32, None).encode(depth, out, where="d.npy", first=10)


def test_the_largest_value_that_fits_is_kept_and_the_next_is_an_error():
    top = np.float64(4294967.295)  # rint(top * 1000) is 2**32 - 1 in float64
    fits = np.array([[[top]]])
    out = np.empty((1, 1, 1), dtype=np.uint32)
    MillimetreEncoder(np.float64, None).encode(fits, out, where="d.npy", first=0)
    assert int(out[0, 0, 0]) == 2**32 - 1
    with pytest.raises(DepthOverflowError):
        MillimetreEncoder(np.float64, None).encode(fits + 0.001, out, where="d.npy", first=0)


def test_a_wrong_shape_or_type_is_refused():
    encoder = MillimetreEncoder(np.float32, None)
    with pytest.raises(ValueError, match="expected float32"):
        encoder.encode(np.ones((1, 2, 2)), np.empty((1, 2, 2), np.uint32), where="", first=0)
    with pytest.raises(ValueError, match="must be a float array"):
        MillimetreEncoder(np.int32, None)
