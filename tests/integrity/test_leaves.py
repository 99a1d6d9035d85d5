"""Whole-file primitives: a read that proves the file held still, an exclusive write."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from dataset_devkit.errors import DestinationExistsError, MissingPathError, UnsafePathError
from dataset_devkit.integrity import SafeDir, read_stable, write_new, write_new_read_back


def test_a_file_is_read_whole_with_the_stat_taken_before_the_read(tmp_path: Path) -> None:
    data = os.urandom(70_000)
    (tmp_path / "frame.jpg").write_bytes(data)
    with SafeDir.open(tmp_path) as root:
        got, st = read_stable(root, "frame.jpg")
    assert got == data
    assert (st.st_size, st.st_ino) == (len(data), (tmp_path / "frame.jpg").stat().st_ino)


def test_links_special_files_and_missing_names_are_refused(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    os.link(tmp_path / "real", tmp_path / "hard")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    with SafeDir.open(tmp_path) as root:
        for name, message in [
            ("link", "symlink"),
            ("hard", "hard link"),
            ("fifo", "FIFO"),
            ("dir", "directory"),
            ("a/b", "one path component"),
            ("..", "one path component"),
        ]:
            with pytest.raises(UnsafePathError, match=message):
                read_stable(root, name)
        with pytest.raises(MissingPathError):
            read_stable(root, "absent")


def _during_read(monkeypatch: pytest.MonkeyPatch, act: Callable[[], object]) -> None:
    """Run *act* right after the first read of the file, as a concurrent writer would."""
    real_read = os.read
    done: list[bool] = []

    def read(fd: int, n: int) -> bytes:
        chunk = real_read(fd, n)
        if not done:
            done.append(True)
            act()
        return chunk

    monkeypatch.setattr(os, "read", read)


def test_a_file_that_grows_while_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "frame.jpg"
    target.write_bytes(b"a" * 1000)

    def grow() -> None:
        with target.open("ab") as f:
            f.write(b"b" * 10)

    _during_read(monkeypatch, grow)
    with SafeDir.open(tmp_path) as root, pytest.raises(UnsafePathError, match="while it was"):
        read_stable(root, "frame.jpg")


def test_a_file_replaced_while_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "frame.jpg"
    target.write_bytes(b"a" * 1000)
    (tmp_path / "other").write_bytes(b"a" * 1000)
    _during_read(monkeypatch, lambda: (tmp_path / "other").replace(target))
    with SafeDir.open(tmp_path) as root, pytest.raises(UnsafePathError, match="replaced"):
        read_stable(root, "frame.jpg")


def test_a_new_file_is_created_exclusively_and_nothing_is_overwritten(tmp_path: Path) -> None:
    (tmp_path / "taken").write_bytes(b"keep")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with SafeDir.open(tmp_path) as root:
        st = write_new(root, "new.jpg", b"payload", 0o600)
        assert st.st_size == 7
        for name in ("taken", "dangling"):
            with pytest.raises(DestinationExistsError, match="already exists"):
                write_new(root, name, b"other")
        with pytest.raises(UnsafePathError, match="one path component"):
            write_new(root, "sub/x", b"other")
    assert (tmp_path / "new.jpg").read_bytes() == b"payload"
    assert (tmp_path / "new.jpg").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "taken").read_bytes() == b"keep"
    assert not (tmp_path / "nowhere").exists()


def test_a_copy_read_back_through_its_descriptor_is_its_bytes_and_never_overwrites(
    tmp_path: Path,
) -> None:
    (tmp_path / "taken").write_bytes(b"keep")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    payload = bytes(range(256)) * 300
    with SafeDir.open(tmp_path) as root:
        assert write_new_read_back(root, "new.jpg", payload, 0o600) == payload
        for name in ("taken", "dangling"):
            with pytest.raises(DestinationExistsError, match="already exists"):
                write_new_read_back(root, name, b"other")
        with pytest.raises(UnsafePathError, match="one path component"):
            write_new_read_back(root, "sub/x", b"other")
    assert (tmp_path / "new.jpg").read_bytes() == payload
    assert (tmp_path / "new.jpg").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "taken").read_bytes() == b"keep"
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("change", ["replaced", "linked"])
def test_a_copy_replaced_or_linked_after_it_was_written_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    real_pread = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        if change == "replaced":
            (tmp_path / "other").write_bytes(b"x" * 10)
            (tmp_path / "other").replace(tmp_path / "new.jpg")
        else:
            os.link(tmp_path / "new.jpg", tmp_path / "second-name")
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", pread)
    with SafeDir.open(tmp_path) as root, pytest.raises(UnsafePathError, match="replaced, linked"):
        write_new_read_back(root, "new.jpg", b"payload")


def test_a_failed_write_of_a_copy_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    def full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with SafeDir.open(tmp_path) as root, pytest.raises(OSError) as caught:
        write_new_read_back(root, "new.jpg", b"payload")
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(tmp_path / "new.jpg")


def test_a_short_write_is_continued_until_the_copy_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:100])))
    payload = bytes(range(256)) * 10
    with SafeDir.open(tmp_path) as root:
        assert write_new_read_back(root, "new.jpg", payload) == payload
        write_new(root, "other.jpg", payload)
    assert (tmp_path / "other.jpg").read_bytes() == payload


def test_a_read_refused_for_want_of_blocking_is_retried_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(5000)
    (tmp_path / "frame.jpg").write_bytes(data)
    real_read = os.read

    def read(fd: int, n: int) -> bytes:
        if not os.get_blocking(fd):
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", read)
    with SafeDir.open(tmp_path) as root:
        assert read_stable(root, "frame.jpg")[0] == data
