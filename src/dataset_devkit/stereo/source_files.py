"""Reading export files byte for byte: no symlinks followed, hard links accepted.

A render export on NTFS holds hard-linked duplicates (the seed's export did). The dataset
stores plain copies of their bytes, so a hard link in the *source* is harmless; what matters
is that the bytes hashed are the bytes copied, which the identity check before and after
each copy proves. The integrity core's ``copy_from``/``hash_file`` refuse every multiply
linked file because they guard published trees; this module is their source-side sibling.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from dataset_devkit.errors import UnsafePathError
from dataset_devkit.integrity import SafeDir
from dataset_devkit.stereo.errors import SourceError

_BLOCK = 1 << 20
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _open(path: Path) -> tuple[int, os.stat_result]:
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if path.is_symlink():
            raise UnsafePathError("is a symbolic link; export the file itself", path=path) from exc
        raise SourceError(f"cannot be read ({exc.strerror})", path=path) from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafePathError("is not a regular file", path=path)
    return fd, st


def copy_and_hash(path: Path, folder: SafeDir | None, rel: str) -> tuple[int, str]:
    """Stream ``path`` (hashing it) into a new file ``rel`` of ``folder``, or only hash it.

    Returns ``(size, sha256 hex)``; raises :class:`UnsafePathError` when the source is a
    symlink or special file, or changed while it was read.
    """
    fd, before = _open(path)
    digest, size = hashlib.sha256(), 0
    buffer = bytearray(_BLOCK)
    view = memoryview(buffer)
    try:
        out = folder.open_write(rel) if folder is not None else None
        try:
            while count := os.readv(fd, [buffer]):
                digest.update(view[:count])
                if out is not None:
                    out.write(view[:count])
                size += count
        finally:
            if out is not None:
                out.close()
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if _identity(before) != _identity(after) or size != after.st_size:
        raise UnsafePathError("changed while it was read", path=path)
    return size, digest.hexdigest()
