"""Sibling staging directories: created private, locked while alive, removable when stale.

Each staging directory is held under an exclusive ``flock`` by the process that created it
until it is published or removed. A process killed mid-build releases its lock with its
descriptors, so :func:`remove_stale_staging` can tell an abandoned staging tree from one a
live builder is still writing, and remove only the former.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import threading
from pathlib import Path

from dataset_devkit.errors import DestinationExistsError, PublicationError
from dataset_devkit.integrity.oserrors import creating_in
from dataset_devkit.integrity.safefs import open_dir_nofollow

__all__ = [
    "new_staging_dir",
    "pin_parent",
    "release_staging_lock",
    "remove_staging",
    "remove_stale_staging",
]

_held: dict[Path, int] = {}
_held_guard = threading.Lock()


def pin_parent(final: Path) -> int:
    """Pin the real parent directory of *final* and check *final* does not exist."""
    try:
        parent_fd = open_dir_nofollow(final.parent)
    except FileNotFoundError as exc:
        raise PublicationError(f"{final.parent}: parent directory does not exist") from exc
    try:
        os.stat(final.name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return parent_fd
    os.close(parent_fd)
    raise DestinationExistsError(f"{final}: already exists; a published tree is never replaced")


def _staging_prefix(final: Path) -> str:
    return f".{final.name}.staging-"


def new_staging_dir(final: Path) -> Path:
    """Create a fresh private staging directory beside *final* (same filesystem), locked."""
    final = Path(final).absolute()
    parent_fd = pin_parent(final)
    try:
        name = _staging_prefix(final) + secrets.token_hex(6)
        with creating_in(final.parent, final):
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        lock_fd = open_dir_nofollow(name, dir_fd=parent_fd)
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(parent_fd)
    staging = final.parent / name
    with _held_guard:
        _held[staging] = lock_fd
    return staging


def release_staging_lock(staging: Path) -> None:
    """Drop this process's lock on *staging* (after it was published or removed)."""
    with _held_guard:
        fd = _held.pop(Path(staging).absolute(), None)
    if fd is not None:
        os.close(fd)


def _remove_contents(dir_fd: int) -> None:
    with os.scandir(dir_fd) as scan:
        entries = list(scan)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            sub = open_dir_nofollow(entry.name, dir_fd=dir_fd)
            try:
                os.fchmod(sub, 0o700)
                _remove_contents(sub)
            finally:
                os.close(sub)
            os.rmdir(entry.name, dir_fd=dir_fd)
        else:
            os.unlink(entry.name, dir_fd=dir_fd)


def _remove_pinned(parent_fd: int, name: str, fd: int) -> None:
    os.fchmod(fd, 0o700)
    _remove_contents(fd)
    os.rmdir(name, dir_fd=parent_fd)


def remove_staging(path: Path) -> None:
    """Remove a staging tree left by a failed attempt (sealed modes are lifted first).

    Links inside are unlinked, never followed. A missing path is not an error.
    """
    path = Path(path).absolute()
    try:
        parent_fd = open_dir_nofollow(path.parent)
    except FileNotFoundError:
        release_staging_lock(path)
        return
    try:
        try:
            fd = open_dir_nofollow(path.name, dir_fd=parent_fd)
        except FileNotFoundError:
            return
        try:
            _remove_pinned(parent_fd, path.name, fd)
        finally:
            os.close(fd)
    finally:
        os.close(parent_fd)
        release_staging_lock(path)


def remove_stale_staging(final: Path) -> list[Path]:
    """Remove staging trees of *final* whose builder is gone; return what was removed.

    A staging directory still locked by a live process (this one included) is left alone.
    Rejected trees (``.NAME.rejected-*``) are kept for audit.
    """
    final = Path(final).absolute()
    prefix = _staging_prefix(final)
    try:
        parent_fd = open_dir_nofollow(final.parent)
    except FileNotFoundError:
        return []
    removed: list[Path] = []
    try:
        with os.scandir(parent_fd) as scan:
            names = sorted(
                e.name
                for e in scan
                if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)
            )
        for name in names:
            try:
                fd = open_dir_nofollow(name, dir_fd=parent_fd)
            except (OSError, PublicationError):
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live builder holds it
                _remove_pinned(parent_fd, name, fd)
                removed.append(final.parent / name)
            finally:
                os.close(fd)
    finally:
        os.close(parent_fd)
    return removed
