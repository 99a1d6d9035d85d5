"""Whole small files in one go: a read that proves the file held still, an exclusive write.

Exports copy thousands of small files (camera frames) and must prove each one: the source
did not change or get replaced while it was read, the destination is a new file nobody else
holds. :class:`~dataset_devkit.integrity.safefs.SafeDir` streams through buffered file
objects; these two functions do the same checks with the fewest system calls (one ``read``,
one ``write``), because each call releases and retakes the GIL, and with several copying
threads every extra handoff costs more than the call itself.
"""

from __future__ import annotations

import os

from dataset_devkit.errors import DestinationExistsError, UnsafePathError
from dataset_devkit.integrity.oserrors import named, naming_in
from dataset_devkit.integrity.reads import read_expected
from dataset_devkit.integrity.safefs import (
    _CREATE_FLAGS,
    SafeDir,
    _create_leaf,
    _identity,
    _open_regular_stat,
)

__all__ = ["read_stable", "write_new", "write_new_read_back"]


def _check_leaf(name: str, parent: SafeDir) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise UnsafePathError("expected one path component", path=parent.path / name)


def read_stable(parent: SafeDir, name: str) -> tuple[bytes, os.stat_result]:
    """Read the single-link regular file *name* of *parent* whole, without following links.

    Returns the bytes and the file's ``fstat`` taken before the read. The device, inode,
    size and mtime must be the same after the read, the bytes must number exactly the size,
    and *name* must still be that inode afterwards: a file rewritten, grown, truncated or
    replaced while read raises :class:`UnsafePathError` rather than yielding mixed bytes.
    """
    _check_leaf(name, parent)
    fd, before = _open_regular_stat(name, parent.fd, lambda: parent.path / name)
    try:
        try:
            data = read_expected(fd, before.st_size)  # one byte more reveals a file that grew
        except BlockingIOError:  # no local filesystem honours it for files; a FUSE one may
            os.set_blocking(fd, True)  # the open's O_NONBLOCK: see _open_regular_stat
            data = read_expected(fd, before.st_size, offset=0)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    current = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
    if (
        len(data) != before.st_size
        or _identity(before) != _identity(after)
        or (current.st_dev, current.st_ino) != (before.st_dev, before.st_ino)
    ):
        raise UnsafePathError("changed or was replaced while it was read", path=parent.path / name)
    return data, before


def write_new(parent: SafeDir, name: str, data: bytes, mode: int = 0o644) -> os.stat_result:
    """Create *name* in *parent* exclusively (no-follow), write *data*, return its ``fstat``.

    Raises
    ------
    DestinationExistsError
        Anything already has that name: nothing is ever overwritten.
    """
    _check_leaf(name, parent)
    fd = _create_leaf(parent, name, mode)
    try:
        # a full disk names the file, not just the errno (a str: see naming_in)
        with naming_in(parent.path, name):
            _write_all(fd, data)
        return os.fstat(fd)
    finally:
        os.close(fd)


def write_new_read_back(parent: SafeDir, name: str, data: bytes, mode: int = 0o644) -> bytes:
    """:func:`write_new`, then read the file back whole through the descriptor that wrote it.

    A copy is proven from what its file holds. Reading through the descriptor of the file
    just created exclusively needs no second open by name (no link or replacement can come
    between), so it costs five system calls fewer than ``write_new`` + ``read_stable``; the
    name is then checked to still be that single-link file, as ``read_stable`` does.

    Raises
    ------
    DestinationExistsError
        Anything already has that name: nothing is ever overwritten.
    UnsafePathError
        The file was replaced, linked or changed size after it was written.
    """
    _check_leaf(name, parent)
    flags = (_CREATE_FLAGS & ~os.O_WRONLY) | os.O_RDWR
    try:
        fd = os.open(name, flags, mode, dir_fd=parent.fd)
    except FileExistsError as exc:
        raise DestinationExistsError(
            f"{parent.path / name}: already exists; nothing is ever overwritten"
        ) from exc
    try:
        try:
            _write_all(fd, data)
        except OSError as exc:  # a full disk names the file (as naming_in does, see there)
            renamed = named(exc, os.path.join(parent.path, name))  # noqa: PTH118
            if renamed is exc:
                raise
            raise renamed from exc
        written = os.fstat(fd)
        copy = read_expected(fd, written.st_size, offset=0)
    finally:
        os.close(fd)
    current = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
    if (
        (current.st_dev, current.st_ino) != (written.st_dev, written.st_ino)
        or current.st_nlink != 1
        or len(copy) != written.st_size
    ):
        raise UnsafePathError(
            "staged copy was replaced, linked or changed after it was written",
            path=parent.path / name,
        )
    return copy


def _write_all(fd: int, data: bytes) -> None:
    """Write *data* whole: one ``write`` in the common case, continued after a short one."""
    done = os.write(fd, data)
    if done < len(data):
        view = memoryview(data)[done:]
        while view:
            view = view[os.write(fd, view) :]
