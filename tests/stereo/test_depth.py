"""Depth encoding, the Zarr v2 group written through zarr, and chunk-aligned reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numcodecs import Blosc

from dataset_devkit.stereo.depth import (
    DepthReader,
    chunk_names,
    depth_problems,
    encode_depth_mm,
    write_depth_group,
)
from dataset_devkit.stereo.errors import DepthOverflowError, SourceError


def _write(
    tmp_path: Path, frames: int, far: float | None = None
) -> tuple[Path, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(frames)
    depth = rng.uniform(0.3, 80.0, size=(frames, 3, 5)).astype(np.float32)
    depth[:, 0, 0] = np.nan
    path = tmp_path / "group.zarr"
    write_depth_group(
        path,
        {"left": depth, "right": depth * 2},
        far,
        {"kind": "z"},
        {"left": "l.npy", "right": "r.npy"},
    )
    return path, depth


@given(hnp.arrays(np.float32, (2, 3, 4), elements=st.floats(0.0625, 4.0e6, width=32)))
def test_valid_depth_round_trips_within_half_a_millimetre(depth):
    encoded, invalid = encode_depth_mm(depth, None, where="x", first=0)
    assert invalid == 0
    decoded = encoded.astype(np.float32) / 1000
    assert np.array_equal(encoded, np.rint(depth.astype(np.float64) * 1000))
    # the documented float32 decode adds at most two float32 roundings on top of 0.5 mm
    error = np.abs(decoded.astype(np.float64) - depth.astype(np.float64))
    assert (error <= 0.0005 + 2.5e-7 * depth.astype(np.float64)).all()


def test_nan_inf_non_positive_and_far_depth_become_zero():
    depth = np.full((1, 1, 6), 5.0, dtype=np.float32)
    depth[0, 0, :5] = [np.nan, np.inf, -1.0, 0.0, 2000.0]
    encoded, invalid = encode_depth_mm(depth, 1000.0, where="x", first=0)
    assert encoded.tolist() == [[[0, 0, 0, 0, 0, 5000]]]
    assert invalid == 5


def test_depth_beyond_uint32_millimetres_is_an_error_not_a_wrap():
    depth = np.full((1, 1, 2), 5.0, dtype=np.float64)
    depth[0, 0, 1] = 5.0e6
    with pytest.raises(DepthOverflowError, match=r"frame 7, pixel \(0, 1\)"):
        encode_depth_mm(depth, None, where="left.npy", first=7)


def test_a_frame_without_any_valid_pixel_is_a_broken_render():
    depth = np.full((2, 2, 2), 3.0, dtype=np.float32)
    depth[1] = np.nan
    with pytest.raises(SourceError, match=r"frame 1 has no valid depth pixel \(4 NaN"):
        encode_depth_mm(depth, None, where="left.npy", first=0)


def test_241_frames_give_61_chunk_files_per_eye_including_empty_ones(tmp_path):
    assert len(chunk_names(241)) == 61 and chunk_names(241)[-1] == "60.0.0"
    path = tmp_path / "g.zarr"
    depth = np.zeros((241, 2, 3), dtype=np.float32)
    depth[:, 0, 0] = 1.0  # one valid pixel per frame, everything else fill value 0
    write_depth_group(path, {"left": depth, "right": depth}, None, {}, {"left": "", "right": ""})
    for eye in ("left", "right"):
        names = sorted(p.name for p in (path / eye).iterdir() if not p.name.startswith("."))
        assert len(names) == 61
    assert depth_problems(path, 241, 2, 3) == []


def test_plain_zarr_reads_the_exact_v2_metadata_and_values(tmp_path):
    path, depth = _write(tmp_path, 10)
    meta = json.loads((path / "left" / ".zarray").read_text())
    assert meta["compressor"] == {
        "id": "blosc",
        "cname": "zstd",
        "clevel": 5,
        "shuffle": 1,
        "blocksize": 0,
    }
    assert (meta["dtype"], meta["chunks"], meta["fill_value"]) == ("<u4", [4, 3, 5], 0)
    group = zarr.open_group(str(path), mode="r", zarr_format=2)
    array = group["left"]
    assert isinstance(array, zarr.Array)
    stored = np.asarray(array[:])
    assert stored.dtype == np.dtype("<u4") and stored.shape == (10, 3, 5)
    expected, _ = encode_depth_mm(depth, None, where="", first=0)
    assert np.array_equal(stored, expected)
    raw = Blosc().decode((path / "left" / "2.0.0").read_bytes())
    chunk = np.frombuffer(raw, dtype="<u4").reshape(4, 3, 5)
    assert np.array_equal(chunk[:2], expected[8:10])


def test_reader_decodes_requested_frames_in_order_to_float32_metres(tmp_path):
    path, depth = _write(tmp_path, 10)
    frames = [9, 0, 5, 5]
    got = DepthReader(path, 10, 3, 5).read("right", frames)
    expected, _ = encode_depth_mm(depth * 2, None, where="", first=0)
    assert got.dtype == np.float32
    assert np.array_equal(got, expected[frames].astype(np.float32) / 1000)
    assert got[0, 0, 0] == 0.0


def test_depth_problems_reports_every_missing_chunk_and_metadata_difference(tmp_path):
    path, _ = _write(tmp_path, 10)
    (path / "left" / "1.0.0").unlink()
    (path / "right" / "0.0.0").unlink()
    meta = json.loads((path / "right" / ".zarray").read_text())
    meta["compressor"]["clevel"] = 3
    (path / "right" / ".zarray").write_text(json.dumps(meta))
    problems = depth_problems(path, 10, 3, 5)
    assert any(p.endswith("left/1.0.0: chunk file missing") for p in problems)
    assert any(p.endswith("right/0.0.0: chunk file missing") for p in problems)
    assert any("right/.zarray at $.compressor" in p for p in problems)
    with pytest.raises(ValueError, match=r"\.zarray"):
        DepthReader(path, 10, 3, 5).read("left", [0])
