"""Total bytes of the regular files of a tree, for progress bars (a cheap stat walk)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dataset_devkit.integrity.safefs import open_dir_nofollow

__all__ = ["tree_size"]


def tree_size(root: Path) -> int | None:
    """Sum the sizes of regular files below *root* without following links.

    Returns ``None`` when the tree cannot be walked; the real operation then reports why.
    """
    try:
        fd = open_dir_nofollow(root)
    except Exception:
        return None
    try:
        return _size(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def _size(dir_fd: int) -> int:
    total = 0
    with os.scandir(dir_fd) as scan:
        entries = list(scan)
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            sub = open_dir_nofollow(entry.name, dir_fd=dir_fd)
            try:
                total += _size(sub)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode):
            total += st.st_size
    return total
