"""Total bytes of the regular files of a tree, for progress bars (a cheap stat walk)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dataset_devkit.integrity.safefs import open_dir_nofollow

__all__ = ["tree_size", "tree_totals"]


def tree_size(root: Path) -> int | None:
    """Sum the sizes of regular files below *root* without following links.

    Returns ``None`` when the tree cannot be walked; the real operation then reports why.
    """
    totals = tree_totals(root)
    return None if totals is None else totals[0]


def tree_totals(root: Path, exclude: frozenset[str] = frozenset()) -> tuple[int, int] | None:
    """``(bytes, files)`` of the regular files below *root*, or ``None`` (see tree_size).

    *exclude* holds relative POSIX paths left out, as the hashing scan leaves out the
    manifest's own location: the totals then count exactly the files the scan will hash.
    """
    try:
        fd = open_dir_nofollow(root)
    except Exception:
        return None
    counts = [0, 0]
    try:
        _size(fd, "", exclude, counts)
    except OSError:
        return None
    finally:
        os.close(fd)
    return counts[0], counts[1]


def _size(dir_fd: int, prefix: str, exclude: frozenset[str], counts: list[int]) -> None:
    with os.scandir(dir_fd) as scan:
        entries = list(scan)
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            sub = open_dir_nofollow(entry.name, dir_fd=dir_fd)
            try:
                _size(sub, f"{prefix}{entry.name}/", exclude, counts)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode) and prefix + entry.name not in exclude:
            counts[0] += st.st_size
            counts[1] += 1
