"""Depth encoding, the Zarr v2 group written through zarr, and chunk-aligned reads."""

from __future__ import annotations

import hashlib
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

from dataset_devkit.errors import FormatError
from dataset_devkit.stereo.depth import (
    DepthReader,
    chunk_names,
    depth_problems,
    encode_depth_mm,
)
from dataset_devkit.stereo.depth_writer import write_depth_group
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


def test_a_frame_without_any_valid_pixel_is_stored_as_zeros():
    depth = np.full((2, 2, 2), 3.0, dtype=np.float32)
    depth[1] = np.nan  # e.g. a camera facing the sky
    encoded, invalid = encode_depth_mm(depth, None, where="left.npy", first=0)
    assert invalid == 4 and not encoded[1].any() and (encoded[0] == 3000).all()


def test_an_eye_without_any_valid_pixel_is_a_broken_render(tmp_path):
    depth = np.full((5, 2, 2), np.nan, dtype=np.float32)
    depth[:, 0, 0] = 2000.0  # beyond the far limit: invalid too
    good = np.ones((5, 2, 2), dtype=np.float32)
    with pytest.raises(SourceError, match=r"r\.npy: no valid depth pixel in any of its 5 frames"):
        write_depth_group(
            tmp_path / "g.zarr",
            {"left": good, "right": depth},
            1000.0,
            {},
            {"left": "l.npy", "right": "r.npy"},
        )


def test_241_frames_give_61_chunk_files_per_eye_including_empty_ones(tmp_path):
    assert len(chunk_names(241)) == 61 and chunk_names(241)[-1] == "60.0.0"
    path = tmp_path / "g.zarr"
    depth = np.zeros((241, 2, 3), dtype=np.float32)  # all invalid (fill value 0) ...
    depth[:8, 0, 0] = 1.0  # ... except frames 0-7: chunks 2..60 hold nothing but fill
    write_depth_group(path, {"left": depth, "right": depth}, None, {}, {"left": "", "right": ""})
    empty = np.zeros((4, 2, 3), dtype="<u4")
    for eye in ("left", "right"):
        names = sorted(p.name for p in (path / eye).iterdir() if not p.name.startswith("."))
        assert len(names) == 61
        chunk = Blosc().decode((path / eye / "37.0.0").read_bytes())
        assert np.array_equal(np.frombuffer(chunk, dtype="<u4").reshape(4, 2, 3), empty)
    assert depth_problems(path, 241, 2, 3) == []
    stored = zarr.open_group(str(path), mode="r", zarr_format=2)["left"]
    assert isinstance(stored, zarr.Array)
    assert int(np.asarray(stored[:]).sum()) == 8 * 1000


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


def test_a_corrupt_chunk_is_a_format_error_naming_the_file_and_frames(tmp_path):
    path, _ = _write(tmp_path, 10)
    (path / "left" / "1.0.0").write_bytes(b"not blosc" * 4)
    reader = DepthReader(path, 10, 3, 5)
    with pytest.raises(FormatError, match=r"left/1\.0\.0: depth chunk of frames 4\.\.7 is not"):
        reader.read("left", [5])
    assert reader.read("left", [0]).shape == (1, 3, 5)


def test_a_zarray_that_is_not_an_object_is_a_problem_not_a_crash(tmp_path):
    path, _ = _write(tmp_path, 10)
    (path / "left" / ".zarray").write_text("[1, 2]")
    problems = depth_problems(path, 10, 3, 5)
    assert any("left/.zarray: is a JSON list, expected an object" in p for p in problems)


def test_each_needed_chunk_file_is_read_once_per_call(tmp_path, monkeypatch):
    path, _ = _write(tmp_path, 10)
    reader = DepthReader(path, 10, 3, 5)
    calls: list[int] = []
    read_chunk = reader.read_chunk

    def counting(eye: str, chunk: int) -> Any:
        calls.append(chunk)
        return read_chunk(eye, chunk)

    monkeypatch.setattr(reader, "read_chunk", counting)
    reader.read("left", [9, 1, 0, 8, 3, 2])
    assert calls == [0, 2]  # frames 0-3 share chunk 0, 8-9 are chunk 2; chunk 1 not needed


def test_xarray_opens_both_eyes_lazily_with_named_dimensions(tmp_path):
    import xarray as xr

    path, depth = _write(tmp_path, 10)
    dataset = xr.open_zarr(path, zarr_format=2, consolidated=False, chunks=None)
    assert sorted(dataset.data_vars) == ["left", "right"]
    assert dataset["left"].dims == ("frame", "y", "x")
    assert dict(dataset.sizes) == {"frame": 10, "y": 3, "x": 5}
    assert not dataset["left"].variable._in_memory  # lazy until asked
    expected, _ = encode_depth_mm(depth * 2, None, where="", first=0)
    # xarray reads the fill value (0 = invalid) as missing: NaN in float, as the docs say
    masked = dataset["right"].isel(frame=[9, 2]).values
    np.testing.assert_array_equal(masked, np.where(expected == 0, np.nan, expected)[[9, 2]])
    raw = xr.open_zarr(path, zarr_format=2, consolidated=False, mask_and_scale=False)
    assert raw["right"].dtype == np.dtype("<u4")
    np.testing.assert_array_equal(raw["right"].isel(frame=[9, 2]).values, expected[[9, 2]])


def _drop_dimension_names(path: Path) -> None:
    """Make *path* a depth group as written before the axes were named."""
    for eye in ("left", "right"):
        attrs = path / eye / ".zattrs"
        document = json.loads(attrs.read_text())
        del document["_ARRAY_DIMENSIONS"]
        attrs.write_text(json.dumps(document))


def test_depth_written_without_dimension_names_still_checks_and_reads(tmp_path):
    import tensorstore as ts

    path, depth = _write(tmp_path, 10)
    _drop_dimension_names(path)
    assert depth_problems(path, 10, 3, 5) == []
    expected, _ = encode_depth_mm(depth, None, where="", first=0)
    got = DepthReader(path, 10, 3, 5).read("left", [7])
    assert np.array_equal(got, expected[[7]].astype(np.float32) / 1000)
    array = zarr.open_group(str(path), mode="r", zarr_format=2)["left"]
    assert isinstance(array, zarr.Array)
    np.testing.assert_array_equal(array[7], expected[7])
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(path / "left")}}
    np.testing.assert_array_equal(ts.open(spec, read=True).result()[7].read().result(), expected[7])


def test_dimension_names_other_than_the_formats_are_a_problem(tmp_path):
    path, _ = _write(tmp_path, 10)
    attrs = path / "right" / ".zattrs"
    document = json.loads(attrs.read_text())
    document["_ARRAY_DIMENSIONS"] = ["t", "h", "w"]
    attrs.write_text(json.dumps(document))
    (path / "left" / ".zattrs").write_text("[]")
    problems = depth_problems(path, 10, 3, 5)
    assert any(
        "right/.zattrs at $._ARRAY_DIMENSIONS: found ['t', 'h', 'w'], expected" in p
        for p in problems
    ), problems
    assert any("left/.zattrs: is a JSON list, expected an object" in p for p in problems)


#: SHA-256 of every file of the depth group below, the same with zarr 3.1 and numcodecs 0.16
#: (Python 3.11, numpy 1.26) and zarr 3.4 and numcodecs 0.17 (Python 3.13, numpy 2.5): zarr
#: writes the metadata, numcodecs' Blosc the chunks. A version that changed one byte of a
#: published depth family fails here.
_GOLDEN_DEPTH = {
    ".zattrs": "9d63d360439c1f38555c98c7e906ca807fb8fec0c5b1395ed447881f22dfc117",
    ".zgroup": "7c578b275a7ccb234a2427d173bed71c9e7dc5d413052265b68ab5f9b2812ff3",
    "left/.zarray": "c0a98c0c8479d3fbfc5e68016014d8dab41e14ba05bd98218d19a642045bc452",
    "left/.zattrs": "e905ebeeedae0cffec87b129559b2f689a4b4d0c70054d8c3aca79b775d217ff",
    "left/0.0.0": "9f675be30a74c29898a46330095bab42a8c21ad894179d81d00102d9e12c2cd4",
    "left/1.0.0": "efddbdd4b15724cf1127c07a797ec223e5dec380cfefd9bc54a499de8b7a5170",
    "left/2.0.0": "5383ccf2d28a0a425a0b48db789a153f6e7af520598d1e45ef1e069ade8383f4",
    "right/.zarray": "c0a98c0c8479d3fbfc5e68016014d8dab41e14ba05bd98218d19a642045bc452",
    "right/.zattrs": "268d212bc695a6e2f8761fc0760583d0de461c142bbb7eb4579516ad77247da7",
    "right/0.0.0": "b16fffdf1fc62f6a854b14a38c63a07da3e02f48b47b205123c69ec652a6c277",
    "right/1.0.0": "dc2868671a3cac42d0f786b9682351e8db6fee7172977d0535143f4755e7ad6b",
    "right/2.0.0": "74cafeb6f1d038378c76e28d9e2f42306ccb53469b80cd2794cad78ebb6dd8af",
}


def test_a_depth_group_has_the_same_bytes_on_every_tested_zarr_and_numcodecs(tmp_path):
    depth = np.arange(10 * 3 * 5, dtype=np.float64).reshape(10, 3, 5) * 0.37 + 0.5
    depth = depth.astype(np.float32)
    depth[:, 0, 0] = np.nan
    path = tmp_path / "group.zarr"
    attributes = {"kind": "camera_z_depth", "units": "millimetre", "scale": 1000}
    sources = {"left": depth, "right": depth * 2}
    write_depth_group(path, sources, None, attributes, {"left": "l.npy", "right": "r.npy"})
    found = {
        p.relative_to(path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }
    assert found == _GOLDEN_DEPTH
