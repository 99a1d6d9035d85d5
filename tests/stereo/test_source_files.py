"""Source files are read once: streamed .npy depth hashed while encoded, hard links copied."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dataset_devkit.integrity import hash_file
from dataset_devkit.stereo import build_stereo_dataset
from dataset_devkit.stereo.errors import SourceError
from dataset_devkit.stereo.source_files import StreamedNpy, copy_and_hash


def _npy(tmp_path: Path, name: str = "d.npy") -> tuple[Path, np.ndarray]:  # type: ignore[type-arg]
    depth = np.arange(5 * 3 * 4, dtype=np.float32).reshape(5, 3, 4)
    path = tmp_path / name
    np.save(path, depth)
    return path, depth


def test_streamed_frames_equal_np_load_and_the_hash_equals_hash_file(tmp_path):
    path, depth = _npy(tmp_path)
    with StreamedNpy(path) as streamed:
        assert streamed.shape == (5, 3, 4) and streamed.dtype == np.float32
        assert np.array_equal(streamed[0:4], depth[:4])
        assert np.array_equal(streamed[4:5], depth[4:])
        assert streamed.finish() == hash_file(path)


def test_frames_must_be_read_in_order(tmp_path):
    path, _ = _npy(tmp_path)
    with StreamedNpy(path) as streamed, pytest.raises(ValueError, match="in order, from 0"):
        streamed[4:5]


def test_a_truncated_npy_names_the_frame_range(tmp_path):
    path, _ = _npy(tmp_path)
    path.write_bytes(path.read_bytes()[:-10])
    with StreamedNpy(path) as streamed:
        streamed[0:4]
        with pytest.raises(SourceError, match=r"d\.npy: is truncated inside frame range 4\.\.4"):
            streamed[4:5]


def test_a_fortran_ordered_or_non_npy_file_is_a_source_error(tmp_path):
    path = tmp_path / "f.npy"
    np.save(path, np.asfortranarray(np.ones((2, 3, 4), dtype=np.float32)))
    with pytest.raises(SourceError, match="Fortran-ordered"):
        StreamedNpy(path)
    (tmp_path / "x.npy").write_bytes(b"plain text")
    with pytest.raises(SourceError, match=r"x\.npy: is not a \.npy file"):
        StreamedNpy(tmp_path / "x.npy")


def test_copy_and_hash_refuses_a_symlink(tmp_path):
    path, _ = _npy(tmp_path)
    (tmp_path / "link.npy").symlink_to(path)
    with pytest.raises(PermissionError, match="symbolic link"):
        copy_and_hash(tmp_path / "link.npy", None, "x")


def test_the_build_reads_each_depth_file_once(source, tmp_path, monkeypatch):
    import dataset_devkit.stereo.writer as writer

    hashed: list[Path] = []
    original = copy_and_hash

    def recording(path: Path, *args: object) -> tuple[int, str]:
        hashed.append(path)
        return original(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "copy_and_hash", recording)
    result = build_stereo_dataset(source, tmp_path / "out")
    assert result.has_depth and hashed
    assert not [p for p in hashed if p.suffix == ".npy"]  # hashed while encoded instead
