"""The chunk pipeline: the same bytes on any number of threads, errors in file order."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dataset_devkit.stereo.depth_writer import write_depth_group, write_pair_depth
from dataset_devkit.stereo.errors import DepthOverflowError, SourceError
from dataset_devkit.stereo.source_files import StreamedNpy

_WHERE = {"left": "l.npy", "right": "r.npy"}


def _depth(frames: int, seed: int) -> np.ndarray[Any, Any]:
    depth = np.random.default_rng(seed).uniform(0.3, 80.0, size=(frames, 6, 7))
    depth[:, 0, 0] = np.nan
    return depth.astype(np.float32)


def _files(group: Path) -> dict[str, bytes]:
    return {
        p.relative_to(group).as_posix(): p.read_bytes() for p in group.rglob("*") if p.is_file()
    }


def test_any_number_of_threads_writes_the_same_files_and_hashes_what_it_wrote(tmp_path):
    sources = {"left": _depth(23, 1), "right": _depth(23, 2)}
    one = write_depth_group(tmp_path / "one", sources, None, {"k": 1}, _WHERE, threads=1)
    three = write_depth_group(tmp_path / "three", sources, None, {"k": 1}, _WHERE, threads=3)
    assert _files(tmp_path / "one") == _files(tmp_path / "three")
    assert one == three and len(one.chunks) == 2 * 6
    files = _files(tmp_path / "one")
    assert one.chunks == {
        name: (len(files[name]), hashlib.sha256(files[name]).hexdigest()) for name in one.chunks
    }
    assert one.invalid == {"left": 23, "right": 23}  # the NaN pixel of every frame


def test_a_pair_streamed_from_npy_files_is_read_and_hashed_once(tmp_path):
    npy = {eye: str(tmp_path / f"{eye}.npy") for eye in ("left", "right")}
    for seed, eye in enumerate(npy):
        np.save(npy[eye], _depth(9, seed))
    written = write_pair_depth(str(tmp_path / "g.zarr"), npy, 1000.0, threads=2)
    arrays = {"left": np.load(npy["left"]), "right": np.load(npy["right"])}
    again = write_depth_group(tmp_path / "a.zarr", arrays, 1000.0, {}, npy)
    assert written.chunks.keys() == again.chunks.keys()
    assert written.sources == {
        eye: (Path(path).stat().st_size, hashlib.sha256(Path(path).read_bytes()).hexdigest())
        for eye, path in npy.items()
    }


def test_an_earlier_chunks_error_comes_before_a_later_read_failure(tmp_path):
    left = _depth(12, 3)
    left[1, 2, 3] = 5.0e6  # does not fit uint32 millimetres: chunk 0
    np.save(tmp_path / "left.npy", left)
    np.save(tmp_path / "right.npy", _depth(12, 4))
    data = (tmp_path / "left.npy").read_bytes()
    (tmp_path / "left.npy").write_bytes(data[:-100])  # and chunk 2 is truncated
    npy = {eye: str(tmp_path / f"{eye}.npy") for eye in ("left", "right")}
    with pytest.raises(DepthOverflowError, match=r"frame 1, pixel \(2, 3\)"):
        write_pair_depth(str(tmp_path / "g.zarr"), npy, None, threads=2)


def test_an_eye_without_valid_depth_is_named_before_the_other_eyes_errors(tmp_path):
    right = _depth(8, 5)
    right[7, 1, 1] = 5.0e6
    sources = {"left": np.zeros((8, 6, 7), np.float32), "right": right}
    with pytest.raises(SourceError, match=r"l\.npy: no valid depth pixel"):
        write_depth_group(tmp_path / "g.zarr", sources, None, {}, _WHERE, threads=4)


def test_read_frames_fills_the_callers_buffer_and_refuses_one_that_does_not_fit(tmp_path):
    depth = _depth(6, 6)
    np.save(tmp_path / "d.npy", depth)
    buffer = np.empty((4, 6, 7), np.float32)
    with StreamedNpy(tmp_path / "d.npy") as streamed:
        frames = streamed.read_frames(0, 4, buffer)
        assert np.shares_memory(frames, buffer) and np.array_equal(
            frames, depth[:4], equal_nan=True
        )
        with pytest.raises(ValueError, match="room for 2 C-ordered float32 frames"):
            streamed.read_frames(4, 6, np.empty((2, 6, 7), np.float64))
        assert np.array_equal(streamed.read_frames(4, 6, buffer), depth[4:], equal_nan=True)
