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
def per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The portable mode (no ``syncfs``): each file fsynced, each directory after it."""
    monkeypatch.setattr(unpack, "_syncfs_cache", [None])


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch, per_file: None) -> list[Event]:
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
    release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_file: None
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


@pytest.fixture
def batched(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """Linux's batched mode: record temporary files created, syncfs calls, placements."""
    log: list[Event] = []
    real_syncfs = unpack._syncfs_function()
    assert real_syncfs is not None, "syncfs is available on Linux"
    real_open_new, real_place = unpack.PinnedDir.open_new, unpack._place_noreplace

    def syncfs(fd: int, where: str) -> None:
        log.append(("syncfs", 0, 0))
        real_syncfs(fd, where)

    def open_new(self: unpack.PinnedDir, name: str, mode: int = 0o644) -> int:
        fd = real_open_new(self, name, mode)
        log.append(("create", os.fstat(fd).st_ino, 0))
        return fd

    def place(dir_fd: int | None, src: str, dst: str) -> None:
        assert dir_fd is not None
        ino = os.stat(src, dir_fd=dir_fd, follow_symlinks=False).st_ino
        log.append(("place", os.fstat(dir_fd).st_ino, ino))
        real_place(dir_fd, src, dst)

    monkeypatch.setattr(unpack, "_syncfs_cache", [syncfs])
    monkeypatch.setattr(unpack.PinnedDir, "open_new", open_new)
    monkeypatch.setattr(unpack, "_place_noreplace", place)
    return log


def test_batched_mode_makes_every_file_durable_before_its_name_and_names_before_ok(
    release: Path, tmp_path: Path, batched: list[Event]
) -> None:
    data = tmp_path / "data"
    summary = unpack.unpack_release(str(release), str(data), everything=True)
    assert read_tree(data / "ds") == SAMPLE
    placed = [(i, e) for i, e in enumerate(batched) if e[0] == "place"]
    assert len(placed) == summary.written == len(SAMPLE)
    for index, (_kind, _folder, ino) in placed:
        created = max(i for i, e in enumerate(batched[:index]) if e == ("create", ino, 0))
        between = batched[created:index]
        assert ("syncfs", 0, 0) in between, "file named before a syncfs made its data durable"
    last_place = placed[-1][0]
    assert ("syncfs", 0, 0) in batched[last_place:], "names not made durable before OK"
    assert len([e for e in batched if e[0] == "syncfs"]) < len(SAMPLE)


def test_batched_mode_a_failing_syncfs_fails_the_restore_and_names_nothing(
    release: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def failing(fd: int, where: str) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO), where)

    monkeypatch.setattr(unpack, "_syncfs_cache", [failing])
    data = tmp_path / "data"
    argv = ["--all", "--quiet", "--release-dir", str(release), "--output", str(data)]
    assert unpack.main(argv) == 1
    assert capsys.readouterr().err.startswith(f"FAILED: Input/output error: {data / 'ds'}")
    assert [p.name for p in (data / "ds").rglob("*") if p.is_file()] == [] or all(
        p.name.startswith(".unpack-") for p in (data / "ds").rglob("*") if p.is_file()
    )
    assert not (data / "ds.unpack-state.json").exists()
    monkeypatch.setattr(unpack, "_syncfs_cache", [])
    assert unpack.main(argv) == 0  # the re-run removes the leftovers and finishes
    assert read_tree(data / "ds") == SAMPLE
