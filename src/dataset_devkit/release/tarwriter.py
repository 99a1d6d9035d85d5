"""Deterministic plain tar packages: fixed headers, streamed members, hashed as written.

Headers come from :meth:`tarfile.TarInfo.tobuf` in pax format with every variable field
pinned (mtime 0, uid/gid 0, empty user/group names, mode 0644, regular files only), so a pax
extended header appears only where ustar cannot hold the name or size. The archive ends with
the two zero blocks of the standard and is not padded to a 10 KiB record: GNU tar, bsdtar and
Python read it, and the package size is exactly what the plan computed.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["END_OF_ARCHIVE", "TarPackageWriter", "member_header", "member_span"]

BLOCK: Final = 512
END_OF_ARCHIVE: Final = bytes(2 * BLOCK)


def member_header(name: str, size: int) -> bytes:
    """Return the header block(s) of a regular-file member, identical for identical input."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="strict")


def member_span(name: str, size: int) -> int:
    """Return how many bytes a member takes in the archive: headers plus padded data."""
    return len(member_header(name, size)) + -(-size // BLOCK) * BLOCK


class TarPackageWriter:
    """Write one package exclusively, hashing every byte as it is written.

    Use as a context manager; the archive is complete (end marker written, fsynced) only
    after a clean exit, and :attr:`sha256`/:attr:`size` are set then. With
    ``hash_package=False`` the caller takes the package hash from its read-back instead, so
    the bytes are not hashed twice.
    """

    def __init__(self, path: Path, *, hash_package: bool = True) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        self.path = path
        self._fd = os.open(path, flags, 0o644)
        self._hash = hashlib.sha256() if hash_package else None
        self.size = 0
        self.members = 0
        self.sha256 = ""

    def __enter__(self) -> TarPackageWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                self.write(END_OF_ARCHIVE)
                os.fsync(self._fd)
                self.sha256 = self._hash.hexdigest() if self._hash is not None else ""
        finally:
            os.close(self._fd)

    def write(self, data: bytes | memoryview) -> None:
        """Append raw bytes (a header, member data or padding) and hash them."""
        if self._hash is not None:
            self._hash.update(data)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self.size += len(data)

    def begin_member(self, name: str, size: int) -> None:
        """Write a member's header; its data follows through :meth:`write`."""
        self.write(member_header(name, size))
        self.members += 1

    def end_member(self, size: int) -> None:
        """Pad the member's data to the next 512-byte block."""
        padding = -size % BLOCK
        if padding:
            self.write(bytes(padding))
