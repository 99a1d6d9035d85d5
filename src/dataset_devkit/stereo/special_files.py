"""Refuse FIFOs, sockets, devices and links in a dataset before anything opens them.

Every reader here opens files with a plain ``open()`` (``Path.read_bytes``, FFmpeg): a FIFO
swapped in for a video or a JSON file would block that open forever. A published dataset
holds only regular files and directories, so anything else is reported, never opened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity.safefs import describe_mode

__all__ = ["require_regular", "special_files"]


def require_regular(path: Path) -> None:
    """Raise :class:`FormatError` if *path* exists and is not (a link to) a regular file.

    A missing path passes: the caller's own open names it with its usual message.
    """
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise FormatError(f"expected a regular file, found a {describe_mode(mode)}", path=path)


def special_files(root: Path) -> list[str]:
    """``"rel: expected ..."`` for every entry below *root* that is not a file or directory.

    Symbolic links are listed too: a published dataset has none, and one may point at a FIFO
    or out of the root.
    """
    found = []
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(dirpath) / name
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                rel = path.relative_to(root).as_posix()
                found.append(
                    f"{rel}: expected a regular file or directory, found a {describe_mode(mode)}"
                )
    return sorted(found)
