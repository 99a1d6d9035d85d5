"""unpack.py's journal is on disk before any file it covers, and every file, name and
directory is on disk before the journal goes and before ``OK``."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from dataset_devkit.release import unpack
from tests.release.helpers import SAMPLE, make_tree, pack, read_tree

# ("fsync", path), ("create", path), ("syncfs", "") or ("syncfs", "early") for the background
# head start, ("journal", ...)
Event = tuple[str, str]


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="none")


def _path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """Record every fsync and file creation (by path), syncfs call and journal change."""
    log: list[Event] = []
    real_fsync, real_open_new = os.fsync, unpack.PinnedDir.open_new
    real_syncfs = unpack._syncfs_function()
    real_write, real_remove = unpack._write_journal, unpack._remove_journal

    def fsync(fd: int) -> None:
        log.append(("fsync", _path(fd)))
        real_fsync(fd)

    def open_new(self: unpack.PinnedDir, name: str, mode: int = 0o644) -> int:
        fd = real_open_new(self, name, mode)
        log.append(("create", _path(fd)))
        return fd

    def syncfs(fd: int, where: str) -> None:
        early = threading.current_thread().name == "unpack-early-sync"
        log.append(("syncfs", "early" if early else ""))
        assert real_syncfs is not None
        real_syncfs(fd, where)

    def write_journal(*args: object) -> None:
        real_write(*args)  # type: ignore[arg-type]
        log.append(("journal", "written"))

    def remove_journal(*args: object) -> None:
        log.append(("journal", "removed"))
        real_remove(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(unpack.PinnedDir, "open_new", open_new)
    monkeypatch.setattr(unpack, "_syncfs_cache", [syncfs if real_syncfs else None])
    monkeypatch.setattr(unpack, "_write_journal", write_journal)
    monkeypatch.setattr(unpack, "_remove_journal", remove_journal)
    return log


def _restored(events: list[Event], data: Path) -> list[int]:
    """Indexes of the creations of restored files (not the journal's or state's temps)."""
    root = str(data / "ds") + "/"
    return [
        i for i, (kind, path) in enumerate(events) if kind == "create" and path.startswith(root)
    ]


def test_syncfs_mode_journal_first_then_one_syncfs_after_every_file_then_journal_removed(
    release: Path, tmp_path: Path, events: list[Event]
) -> None:
    if unpack._syncfs_function() is None:
        pytest.skip("syncfs is Linux only")
    data = tmp_path / "data"
    summary = unpack.unpack_release(str(release), str(data), everything=True)
    assert read_tree(data / "ds") == SAMPLE
    created = _restored(events, data)
    assert len(created) == summary.written == len(SAMPLE)
    journal = events.index(("journal", "written"))
    assert journal < created[0], "a file was created before the journal was on disk"
    syncs = [i for i, e in enumerate(events) if e == ("syncfs", "")]
    assert len(syncs) == 1, "one syncfs for the whole restore (a small one: no early start)"
    removed = events.index(("journal", "removed"))
    assert created[-1] < syncs[0] < removed
    journal_fsync = [i for i, (k, p) in enumerate(events) if k == "fsync" and "journal" in p]
    assert journal_fsync and journal_fsync[0] < created[0], "journal not fsynced first"
    assert any(
        kind == "fsync" and "ds.unpack-state.json" in path for kind, path in events[syncs[0] :]
    )
    assert not (data / "ds.unpack-journal.json").exists()


def test_per_file_mode_fsyncs_each_file_and_directory_before_the_journal_goes(
    release: Path, tmp_path: Path, events: list[Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without syncfs (macOS, BSD): each file fsynced after its data, each directory after
    its entries, all before the journal is removed."""
    monkeypatch.setattr(unpack, "_syncfs_cache", [None])
    data = tmp_path / "data"
    unpack.unpack_release(str(release), str(data), everything=True)
    assert read_tree(data / "ds") == SAMPLE
    removed = events.index(("journal", "removed"))
    created = _restored(events, data)
    assert events.index(("journal", "written")) < created[0]
    for index in created:
        path = events[index][1]
        assert ("fsync", path) in events[index:removed], f"{path} not fsynced before the end"
        folder = os.path.dirname(path)
        assert ("fsync", folder) in events[index:removed], f"{folder} not fsynced after {path}"


def test_no_fsync_option_skips_every_fsync_and_still_restores(
    release: Path, tmp_path: Path, events: list[Event]
) -> None:
    data = tmp_path / "data"
    argv = ["--all", "--quiet", "--no-fsync", "--release-dir", str(release), "--output", str(data)]
    assert unpack.main(argv) == 0
    assert read_tree(data / "ds") == SAMPLE
    assert [e for e in events if e[0] in ("fsync", "syncfs")] == []
    assert len(_restored(events, data)) == len(SAMPLE)


def test_a_failing_fsync_fails_the_restore_and_the_rerun_finishes(
    release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unpack, "_syncfs_cache", [None])
    real_fsync = os.fsync
    data = tmp_path / "data"

    def failing_disk(fd: int) -> None:
        if _path(fd).startswith(str(data / "ds") + "/"):
            raise OSError(errno.EIO, "I/O error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_disk)
    argv = ["--all", "--quiet", "--release-dir", str(release), "--output", str(data)]
    assert unpack.main(argv) == 1
    assert not [p for p in (data / "ds").rglob("*") if p.is_file()], "a failed file kept"
    assert not (data / "ds.unpack-state.json").exists()
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert unpack.main(argv) == 0
    assert read_tree(data / "ds") == SAMPLE


def test_a_failing_syncfs_fails_the_restore_keeps_the_journal_and_the_rerun_finishes(
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
    assert (data / "ds.unpack-journal.json").exists(), "the journal says the files may be partial"
    assert not (data / "ds.unpack-state.json").exists()
    monkeypatch.setattr(unpack, "_syncfs_cache", [])
    assert unpack.main(argv) == 0  # the re-run checks what is there and finishes
    assert read_tree(data / "ds") == SAMPLE
    assert not (data / "ds.unpack-journal.json").exists()


def test_writeback_starts_in_the_background_and_the_last_syncfs_still_follows_every_file(
    release: Path, tmp_path: Path, events: list[Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    if unpack._syncfs_function() is None:
        pytest.skip("syncfs is Linux only")
    monkeypatch.setattr(unpack, "EARLY_SYNC_BYTES", 1)  # a head start after every file
    data = tmp_path / "data"
    # A restore this small can end before the background thread ever runs (it then skips
    # the head start, rightly): the files after the first wait for its first syncfs.
    synced, lock, made = threading.Event(), threading.Lock(), [0]
    logged_syncfs, logged_open_new = unpack._syncfs_cache[0], unpack.PinnedDir.open_new
    assert logged_syncfs is not None

    def syncfs(fd: int, where: str) -> None:
        logged_syncfs(fd, where)
        if threading.current_thread().name == "unpack-early-sync":
            synced.set()

    def open_new(self: unpack.PinnedDir, name: str, mode: int = 0o644) -> int:
        if str(self.path).startswith(str(data / "ds")):
            with lock:
                made[0] += 1
                later = made[0] > 1
            if later:
                assert synced.wait(30), "the first file's head start never ran"
        return logged_open_new(self, name, mode)

    monkeypatch.setattr(unpack, "_syncfs_cache", [syncfs])
    monkeypatch.setattr(unpack.PinnedDir, "open_new", open_new)
    unpack.unpack_release(str(release), str(data), everything=True)
    assert read_tree(data / "ds") == SAMPLE
    created = _restored(events, data)
    early = [i for i, e in enumerate(events) if e == ("syncfs", "early")]
    final = [i for i, e in enumerate(events) if e == ("syncfs", "")]
    assert early and early[0] > created[0], "no background syncfs while restoring"
    assert len(final) == 1 and created[-1] < final[0] < events.index(("journal", "removed"))
    assert max(early) < final[0], "a background syncfs outlived the restore"


def test_a_failing_background_syncfs_fails_the_restore_and_keeps_the_journal(
    release: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """syncfs reports a writeback error once: the background call's error is the run's."""
    real = unpack._syncfs_function()
    if real is None:
        pytest.skip("syncfs is Linux only")

    def failing_early(fd: int, where: str) -> None:
        if threading.current_thread().name == "unpack-early-sync":
            raise OSError(errno.EIO, os.strerror(errno.EIO), where)
        real(fd, where)

    monkeypatch.setattr(unpack, "_syncfs_cache", [failing_early])
    monkeypatch.setattr(unpack, "EARLY_SYNC_BYTES", 1)
    data = tmp_path / "data"
    argv = ["--all", "--quiet", "--release-dir", str(release), "--output", str(data)]
    assert unpack.main(argv) == 1
    assert capsys.readouterr().err.startswith(f"FAILED: Input/output error: {data / 'ds'}")
    assert (data / "ds.unpack-journal.json").exists()
    assert not (data / "ds.unpack-state.json").exists()
    monkeypatch.setattr(unpack, "_syncfs_cache", [real])
    assert unpack.main(argv) == 0
    assert read_tree(data / "ds") == SAMPLE
