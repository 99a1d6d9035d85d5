"""unpack.py makes each file durable before its name, and each directory after its entries."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from dataset_devkit.release import unpack
from tests.release.helpers import SAMPLE, make_tree, pack, read_tree

Event = tuple[str, int, int]  # ("fsync", inode, 0) or ("place", directory inode, file inode)


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="none")


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """Record every fsync (by inode) and every placement (directory and file inode)."""
    log: list[Event] = []
    real_fsync, real_place = os.fsync, unpack._place_noreplace

    def fsync(fd: int) -> None:
        log.append(("fsync", os.fstat(fd).st_ino, 0))
        real_fsync(fd)

    def place(dir_fd: int | None, src: str, dst: str) -> None:
        assert dir_fd is not None
        ino = os.stat(src, dir_fd=dir_fd, follow_symlinks=False).st_ino
        log.append(("place", os.fstat(dir_fd).st_ino, ino))
        real_place(dir_fd, src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(unpack, "_place_noreplace", place)
    return log


def test_every_file_is_fsynced_before_it_is_placed_and_every_directory_after(
    release: Path, tmp_path: Path, events: list[Event]
) -> None:
    data = tmp_path / "data"
    summary = unpack.unpack_release(str(release), str(data), everything=True)
    assert read_tree(data / "ds") == SAMPLE
    placements = [(i, e) for i, e in enumerate(events) if e[0] == "place"]
    assert len(placements) == summary.written == len(SAMPLE)
    for index, (_kind, _folder, ino) in placements:
        assert ("fsync", ino, 0) in events[:index], "file placed before its data was fsynced"
    last_entry: dict[int, int] = {}
    for index, (_kind, folder, _ino) in placements:
        last_entry[folder] = index
    for dirpath, _dirs, _files in os.walk(data):
        ino = os.lstat(dirpath).st_ino
        assert ("fsync", ino, 0) in events, f"{dirpath} was never fsynced"
        if ino in last_entry:
            later = events[last_entry[ino] + 1 :]
            assert ("fsync", ino, 0) in later, f"{dirpath} not fsynced after its last entry"
    assert ("fsync", os.lstat(data / "ds.unpack-state.json").st_ino, 0) in events


def test_no_fsync_option_skips_every_fsync_and_still_restores(
    release: Path, tmp_path: Path, events: list[Event]
) -> None:
    data = tmp_path / "data"
    argv = ["--all", "--quiet", "--no-fsync", "--release-dir", str(release), "--output", str(data)]
    assert unpack.main(argv) == 0
    assert read_tree(data / "ds") == SAMPLE
    assert [e for e in events if e[0] == "fsync"] == []
    assert len([e for e in events if e[0] == "place"]) == len(SAMPLE)


def test_a_failing_fsync_fails_the_restore_and_leaves_no_temporary_file(
    release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync

    def failing_disk(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(errno.EIO, "I/O error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_disk)
    data = tmp_path / "data"
    argv = ["--all", "--quiet", "--release-dir", str(release), "--output", str(data)]
    assert unpack.main(argv) == 1
    assert read_tree(data) == {}
    assert not (data / "ds.unpack-state.json").exists()
