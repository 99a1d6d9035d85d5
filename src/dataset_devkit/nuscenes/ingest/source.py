"""Opening source recordings safely and fingerprinting their exact bytes."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from dataset_devkit.errors import MissingPathError, UnsafePathError

__all__ = [
    "MemberHash",
    "SourceDigest",
    "SourceIdentity",
    "content_sha256",
    "open_regular",
    "source_identity",
]

#: ``(st_ino, st_size, st_mtime_ns)``: no device number, which differs between the machines
#: of a cluster that mount the same shared filesystem (the inode number does not).
SourceIdentity = tuple[int, int, int]

_BLOCK = 1 << 20
#: Bytes hashed per read: the per-call cost vanishes, and the block is still in the cache
#: when it is hashed.
_HASH_BLOCK = 1 << 20


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
    file, a decoded folder) never share a fingerprint. The members are remembered with their
    identities, so :func:`content_sha256` can hash their bytes alone later, and only when a
    build needs it (two recordings of the same sizes): most builds never do, and hashing
    every byte a second time cost a fifth of a raw-camera ingest.
    """

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._h = hashlib.sha256(b"dataset-devkit/nuscenes/source/v1\0" + backend.encode() + b"\0")
        #: Bytes hashed so far, over every member.
        self.size = 0
        #: ``(path, identity)`` of each member, in the order hashed.
        self.members: list[tuple[Path, SourceIdentity]] = []

    def _begin(self, name: str, f: BinaryIO, path: Path) -> int:
        size = os.fstat(f.fileno()).st_size
        raw = name.encode()
        self._h.update(len(raw).to_bytes(8, "big") + raw + size.to_bytes(8, "big"))
        self.members.append((path, source_identity(f)))
        return size

    def add_file(self, name: str, f: BinaryIO, path: Path) -> int:
        """Hash one member (the open file *f* of *path*) from its start; returns its size."""
        size = self._begin(name, f, path)
        done = _hash_fd(f.fileno(), self._h.update, threading.Event())
        if done != size:
            raise UnsafePathError(f"{name} changed size while hashing ({size} → {done} bytes)")
        self.size += size
        return size

    def add_file_beside(self, name: str, f: BinaryIO, path: Path) -> MemberHash:
        """Hash one member on a thread of its own while the caller reads *f*.

        SHA-256 releases the GIL, so the digest of a large recording costs the first pass
        no time on a second core. The thread reads by offset (``preadv``), never moving
        *f*'s position. The returned hash must be waited for (or cancelled, when reading
        fails) before the next member and before *f* is closed.
        """
        size = self._begin(name, f, path)
        return MemberHash(self, name, f.fileno(), size)

    def hexdigest(self) -> str:
        return f"{self.backend}:sha256:{self._h.hexdigest()}"


class MemberHash:
    """One member of a :class:`SourceDigest` being hashed on its own thread."""

    def __init__(self, digest: SourceDigest, name: str, fd: int, size: int) -> None:
        self._digest, self._name, self._size = digest, name, size
        self._stop = threading.Event()
        self._result: list[int | BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(fd, digest._h.update), name="source-digest", daemon=True
        )
        self._thread.start()

    def _run(self, fd: int, update: Callable[[memoryview], object]) -> None:
        try:
            self._result.append(_hash_fd(fd, update, self._stop))
        except BaseException as exc:  # handed to the waiter
            self._result.append(exc)

    def wait(self) -> int:
        """The member's size once it is hashed; its read error, or UnsafePathError when it
        changed size meanwhile."""
        self._thread.join()
        done = self._result[0]
        if isinstance(done, BaseException):
            raise done
        if done != self._size:
            raise UnsafePathError(
                f"{self._name} changed size while hashing ({self._size} → {done} bytes)"
            )
        self._digest.size += self._size
        return self._size

    def cancel(self) -> None:
        """Stop hashing (reading the member failed) and wait for the thread to end."""
        self._stop.set()
        self._thread.join()


def _hash_fd(fd: int, update: Callable[[memoryview], object], stop: threading.Event) -> int:
    """Feed the bytes of *fd* from offset 0 to *update* in blocks; returns how many."""
    buffer = bytearray(_HASH_BLOCK)
    view = memoryview(buffer)
    done = 0
    while not stop.is_set():
        n = os.preadv(fd, [buffer], done)
        if n == 0:
            break
        update(view[:n])
        done += n
    return done


def content_sha256(members: Sequence[tuple[Path, SourceIdentity]]) -> str:
    """SHA-256 of the members' sizes and bytes only, in order (names do not count): the same
    recording copied under another name has the same value. Each member must still be the
    file that was ingested."""
    h = hashlib.sha256()
    for path, identity in members:
        with open_regular(path) as f:
            if source_identity(f) != identity:
                raise UnsafePathError("recording changed since it was ingested", path=path)
            h.update(identity[1].to_bytes(8, "big"))
            done = _hash_fd(f.fileno(), h.update, threading.Event())
        if done != identity[1]:
            raise UnsafePathError("recording changed size while hashing", path=path)
    return h.hexdigest()
