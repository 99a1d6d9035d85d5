"""Opening source recordings safely and fingerprinting their exact bytes."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

from dataset_devkit.errors import MissingPathError, UnsafePathError

__all__ = ["SourceDigest", "SourceIdentity", "open_regular", "source_identity"]

#: ``(st_ino, st_size, st_mtime_ns)``: no device number, which differs between the machines
#: of a cluster that mount the same shared filesystem (the inode number does not).
SourceIdentity = tuple[int, int, int]

_BLOCK = 1 << 20


def open_regular(path: Path, what: str = "recording") -> BinaryIO:
    """Open *path* for reading without following a final symlink; it must be a regular file.

    *what* names the file in errors (``recording``, ``label file``, ``video``).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise MissingPathError(f"{what} not found", path=path) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(
                f"{what} is a symlink; refusing to follow it", path=path
            ) from None
        raise UnsafePathError(f"cannot open the {what}: {exc.strerror}", path=path) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafePathError(f"{what} is not a regular file", path=path)
    return os.fdopen(fd, "rb", buffering=_BLOCK)


def source_identity(f: BinaryIO) -> SourceIdentity:
    """``(st_ino, st_size, st_mtime_ns)`` of an open file, to detect a changed source.

    Frames may be extracted on another machine of a cluster than the one that ingested the
    recording, so the identity leaves out the device number (local to each mount).
    """
    st = os.fstat(f.fileno())
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class SourceDigest:
    """``sha256(backend, then each member's name, size and bytes)`` as ``backend:sha256:hex``.

    The backend name is part of the digest, so the same bytes read by two backends (an MCAP
    file, a decoded folder) never share a fingerprint.
    """

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._h = hashlib.sha256(b"dataset-devkit/nuscenes/source/v1\0" + backend.encode() + b"\0")
        self._content = hashlib.sha256()
        #: Bytes hashed so far, over every member.
        self.size = 0

    def add_file(self, name: str, f: BinaryIO) -> int:
        """Hash one member from the start of *f*; returns its size."""
        f.seek(0)
        size = os.fstat(f.fileno()).st_size
        raw = name.encode()
        self._h.update(len(raw).to_bytes(8, "big") + raw + size.to_bytes(8, "big"))
        done = 0
        self._content.update(size.to_bytes(8, "big"))
        while chunk := f.read(_BLOCK):
            self._h.update(chunk)
            self._content.update(chunk)
            done += len(chunk)
        if done != size:
            raise UnsafePathError(f"{name} changed size while hashing ({size} → {done} bytes)")
        f.seek(0)
        self.size += size
        return size

    def hexdigest(self) -> str:
        return f"{self.backend}:sha256:{self._h.hexdigest()}"

    def content_hexdigest(self) -> str:
        """SHA-256 of the members' sizes and bytes only, in order: names do not count."""
        return self._content.hexdigest()
