"""Refuse a store file that is not a regular file before anything opens it.

``np.load`` and ``Path.read_bytes`` open with a plain ``open()``: a FIFO swapped in for a
store file would block that open forever, and a symlink would be followed out of the store.
A published store holds only regular files, so anything else is a format error named here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dataset_devkit.integrity.safefs import describe_mode
from dataset_devkit.vin_store.errors import VinOfflineFormatError

__all__ = ["require_regular"]


def require_regular(path: Path | str) -> None:
    """Raise :class:`VinOfflineFormatError` if *path* exists and is not a regular file.

    A missing path passes: the caller's own open reports it with its usual message.
    """
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise VinOfflineFormatError(
            f"expected a regular file, found a {describe_mode(mode)}", path=path
        )
