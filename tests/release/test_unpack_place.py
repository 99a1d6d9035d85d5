"""unpack.py puts verified files into place with a no-replace primitive, on every tier."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dataset_devkit.release import unpack
from tests.release.helpers import SAMPLE, make_tree, pack, read_tree

TIERS = ("renameat", "link", "placeholder", "paths")


@pytest.fixture(params=TIERS)
def tier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Force one placement primitive: renameat2, hard link, O_EXCL placeholder, or paths."""
    name: str = request.param
    if name == "renameat":
        assert sys.platform.startswith("linux")
        assert unpack._renameat_noreplace() is not None  # glibc >= 2.28 exports renameat2
    if name in ("link", "placeholder"):
        monkeypatch.setattr(unpack, "_renameat_cache", [None])
    if name == "placeholder":

        def no_hard_links(*_args: object, **_kwargs: object) -> None:
            raise OSError(errno.EPERM, "hard links not supported here")

        monkeypatch.setattr(os, "link", no_hard_links)
    if name == "paths":
        monkeypatch.setattr(unpack, "_DIR_FD", False)
    yield name


def _dir(path: Path) -> tuple[int | None, str]:
    if unpack._DIR_FD:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY), ""
    return None, str(path) + os.sep


def test_placing_a_file_moves_it_to_a_free_name(tier: str, tmp_path: Path) -> None:
    (tmp_path / "tmp").write_bytes(b"verified")
    fd, prefix = _dir(tmp_path)
    try:
        unpack._place_noreplace(fd, prefix + "tmp", prefix + "final")
    finally:
        if fd is not None:
            os.close(fd)
    assert (tmp_path / "final").read_bytes() == b"verified"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]


def test_placing_onto_an_existing_name_fails_and_keeps_both_files(
    tier: str, tmp_path: Path
) -> None:
    (tmp_path / "tmp").write_bytes(b"verified")
    (tmp_path / "final").write_bytes(b"theirs")
    fd, prefix = _dir(tmp_path)
    try:
        with pytest.raises(FileExistsError):
            unpack._place_noreplace(fd, prefix + "tmp", prefix + "final")
    finally:
        if fd is not None:
            os.close(fd)
    assert (tmp_path / "final").read_bytes() == b"theirs"
    assert (tmp_path / "tmp").read_bytes() == b"verified"


def test_a_file_created_after_the_existence_check_is_kept_and_reported(
    tier: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="none")
    data = tmp_path / "data"
    real = unpack._place_noreplace
    raced = []

    def concurrent_writer(dir_fd: int | None, src: str, dst: str) -> None:
        # Another process creates the final name after unpack.py checked it was free and
        # after the member was written and verified: the last moment before placement.
        if dst.endswith("README.md"):
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
            fd = os.open(dst, flags, 0o644, dir_fd=dir_fd)
            os.write(fd, b"their README\n")
            os.close(fd)
            raced.append(dst)
        real(dir_fd, src, dst)

    monkeypatch.setattr(unpack, "_place_noreplace", concurrent_writer)
    with pytest.raises(unpack.UnpackError, match=r"README.md: appeared while restoring.*kept"):
        unpack.unpack_release(str(release), str(data), everything=True)
    assert raced
    restored = read_tree(data / "ds")
    assert restored.pop("README.md") == b"their README\n"
    assert restored == {p: b for p, b in SAMPLE.items() if p != "README.md"}
    assert not (data / "ds.unpack-state.json").exists()
