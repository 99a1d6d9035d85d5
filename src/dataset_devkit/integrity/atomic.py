"""Write a file under its final name all at once: a locked temp file, fsync, no-replace rename.

A manifest or index read by the next run must never be half written: a kill or a full disk
while it is written would otherwise leave a truncated file under the real name, which the
re-run then reads and refuses. The bytes go to ``.NAME.partial-<hex>`` next to it, held
under an exclusive ``flock`` while written, fsynced, and renamed to NAME without replacing
anything. A killed writer drops its lock with its descriptors, so a re-run recognises an
abandoned partial file by its name and a lock it can take, and removes it; a live writer's
file stays locked and is left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
from typing import Final

from dataset_devkit.errors import DestinationExistsError, PublicationError
from dataset_devkit.integrity.oserrors import creating_in, naming
from dataset_devkit.integrity.rename import rename_noreplace
from dataset_devkit.integrity.safefs import SafeDir

__all__ = ["partial_name", "remove_stale_partials", "write_atomic"]

_SUFFIX: Final = re.compile(r"\.partial-[0-9a-f]{12}")
_FLAGS: Final = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def partial_name(name: str) -> str:
    """A fresh temp name for *name* that :func:`remove_stale_partials` recognises."""
    return f".{name}.partial-{secrets.token_hex(6)}"


def _is_partial_of(entry: str, name: str) -> bool:
    prefix = f".{name}"
    return entry.startswith(prefix) and _SUFFIX.fullmatch(entry[len(prefix) :]) is not None


def remove_stale_partials(parent: SafeDir, name: str) -> list[str]:
    """Remove partial files of *name* in *parent* whose writer is gone; return their names.

    Only regular files named like :func:`partial_name` whose ``flock`` can be taken are
    removed: a writer still running holds its lock.
    """
    removed = []
    for entry in parent.listdir():
        if not _is_partial_of(entry, name):
            continue
        try:
            fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent.fd)
        except OSError:
            continue  # a symlink or gone: not ours to touch
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live writer holds it
            st = os.fstat(fd)
            current = os.stat(entry, dir_fd=parent.fd, follow_symlinks=False)
            if (st.st_dev, st.st_ino) == (current.st_dev, current.st_ino):
                os.unlink(entry, dir_fd=parent.fd)
                removed.append(entry)
        finally:
            os.close(fd)
    return removed


def _move_noreplace(parent: SafeDir, temp: str, name: str) -> None:
    """Give *temp* the name *name* without replacing anything.

    ``renameat2(RENAME_NOREPLACE)`` where Linux has it; elsewhere a hard link (which also
    fails on an existing name) and the removal of the temp name, so ``manifest`` keeps
    working on macOS.
    """
    try:
        rename_noreplace(parent.fd, temp, parent.fd, name)
    except PublicationError:  # no atomic no-replace rename on this platform or filesystem
        try:
            os.link(temp, name, src_dir_fd=parent.fd, dst_dir_fd=parent.fd, follow_symlinks=False)
        except FileExistsError as exc:
            raise DestinationExistsError(
                f"{parent.path / name}: already exists; it is never replaced"
            ) from exc
        os.unlink(temp, dir_fd=parent.fd)


def write_atomic(parent: SafeDir, name: str, data: bytes, mode: int = 0o644) -> None:
    """Create *name* in *parent* holding *data*, complete or not at all; never replace.

    Raises
    ------
    DestinationExistsError
        *name* already exists (the partial file is removed).
    OSError
        The write or fsync failed (a full disk): it names the final path, and the partial
        file is removed.
    """
    temp = partial_name(name)
    target = parent.path / name
    with creating_in(parent.path, target):
        fd = os.open(temp, _FLAGS, mode, dir_fd=parent.fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with naming(target):
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        _move_noreplace(parent, temp, name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=parent.fd)
        raise
    finally:
        os.close(fd)
