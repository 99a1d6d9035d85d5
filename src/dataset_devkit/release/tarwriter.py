"""Deterministic plain tar packages: fixed headers, streamed members, hashed as read.

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
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Final

from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.integrity.reads import ReadInto, read_exactly
from dataset_devkit.release.unpack import byte_sum

__all__ = [
    "BUFFER_SIZE",
    "END_OF_ARCHIVE",
    "ReadInto",
    "TarPackageWriter",
    "member_header",
    "member_span",
]

BLOCK: Final = 512
BUFFER_SIZE: Final = 1 << 20  # 4 MiB writes measured 3-5x slower into the page cache here
END_OF_ARCHIVE: Final = bytes(2 * BLOCK)
_ZEROS: Final = bytes(BLOCK)


def _tarfile_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="strict")


#: The header ``tarfile`` writes for a one-block member, as this interpreter writes it: a
#: member whose name and size fit plain ustar fields differs from it only in those fields
#: and the checksum, so :func:`member_header` patches a copy instead of calling ``tarfile``
#: (its pax logic was a third of the packing time of 50,000 small files).
_TEMPLATE: Final = _tarfile_header("x", 0)
_USTAR_NAME: Final = 100
_USTAR_SIZE: Final = 8**11  # 11 octal digits


def _fits_ustar(name: str, size: int) -> bool:
    return size < _USTAR_SIZE and len(name) <= _USTAR_NAME and name.isascii()


#: The template's bytes around the name (0:100), size (124:136) and checksum (148:156)
#: fields, and the checksum of the template with those three fields blank (the checksum
#: counts its own field as spaces): a header's checksum is this plus its name and size bytes.
_MIDDLE: Final = _TEMPLATE[_USTAR_NAME:124]
_BEFORE_CHECKSUM: Final = _TEMPLATE[136:148]
_AFTER_CHECKSUM: Final = _TEMPLATE[156:BLOCK]
_BLANK_SUM: Final = sum(_MIDDLE) + sum(_BEFORE_CHECKSUM) + 8 * ord(" ") + sum(_AFTER_CHECKSUM)


def member_header(name: str, size: int) -> bytes:
    """Return the header block(s) of a regular-file member, identical for identical input.

    Byte for byte what :meth:`tarfile.TarInfo.tobuf` writes in pax format with every variable
    field pinned: one ustar block when the name is ASCII of at most 100 bytes and the size
    fits 11 octal digits (built here from :data:`_TEMPLATE`), else ``tarfile``'s pax header
    and ustar block. ``tests/release/test_tarwriter.py`` checks the identity on random names
    and sizes, so a ``tarfile`` that changed its output would fail there, not ship.
    """
    if not _fits_ustar(name, size):
        return _tarfile_header(name, size)
    encoded = name.encode("ascii")
    size_field = b"%011o\0" % size
    checksum = _BLANK_SUM + byte_sum(encoded) + sum(size_field)
    return b"".join(
        (
            encoded.ljust(_USTAR_NAME, b"\0"),
            _MIDDLE,
            size_field,
            _BEFORE_CHECKSUM,
            b"%06o\0 " % checksum,
            _AFTER_CHECKSUM,
        )
    )


def member_span(name: str, size: int) -> int:
    """Return how many bytes a member takes in the archive: headers plus padded data."""
    head = BLOCK if _fits_ustar(name, size) else len(_tarfile_header(name, size))
    return head + -(-size // BLOCK) * BLOCK


class TarPackageWriter:
    """Write one package exclusively through one aligned buffer, hashing as it goes.

    Headers, member data and padding are laid out in a 1 MiB buffer that is written out
    whole, so the kernel sees large writes at aligned offsets; member data is read straight
    into the buffer (:meth:`add_member`) and hashed there, without an intermediate copy.
    The package hash is taken of each full buffer as it is written out: one call per MiB,
    where hashing each member's header and data took two per file.
    Use as a context manager; the archive is complete (end marker written) only after a
    clean exit, and :attr:`sha256`/:attr:`size` are set then. With ``hash_package=False``
    the caller takes the package hash from its read-back instead, so the bytes are not
    hashed twice; with ``fsync=False`` the caller fsyncs the finished file itself (the
    packer does it in the read-back job, off the writing thread).
    """

    def __init__(
        self,
        path: Path,
        *,
        hash_package: bool = True,
        fsync: bool = True,
        buffer_size: int = BUFFER_SIZE,
    ) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        if buffer_size <= 0 or buffer_size % BLOCK:
            raise ValueError(f"buffer size must be a positive multiple of {BLOCK}")
        self.path = path
        self._fd = os.open(path, flags, 0o644)
        self._hash = hashlib.sha256() if hash_package else None
        self._fsync = fsync
        self._buffer = memoryview(bytearray(buffer_size))
        self._fill = 0
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
                self._flush()
                if self._fsync:
                    with naming(self.path):
                        os.fsync(self._fd)
                self.sha256 = self._hash.hexdigest() if self._hash is not None else ""
        finally:
            os.close(self._fd)
            self._buffer.release()

    def _flush(self) -> None:
        view = self._buffer[: self._fill]
        if self._hash is not None:  # every byte passes through the buffer, in order
            self._hash.update(view)
        with naming(self.path):  # a full disk names the package, not just the errno
            while view:
                view = view[os.write(self._fd, view) :]
        self._fill = 0

    def write(self, data: bytes | memoryview) -> None:
        """Append raw bytes (a header, member data or padding)."""
        src = memoryview(data)
        self.size += len(src)
        while src:
            take = min(len(src), len(self._buffer) - self._fill)
            self._buffer[self._fill : self._fill + take] = src[:take]
            self._fill += take
            src = src[take:]
            if self._fill == len(self._buffer):
                self._flush()

    def begin_member(self, name: str, size: int) -> None:
        """Write a member's header; its data follows through :meth:`write`."""
        self.write(member_header(name, size))
        self.members += 1

    def end_member(self, size: int) -> None:
        """Pad the member's data to the next 512-byte block."""
        padding = -size % BLOCK
        if padding:
            self.write(bytes(padding))

    def add_member(
        self, name: str, size: int, source: ReadInto, progress: Callable[[int], None] | None = None
    ) -> str:
        """Copy exactly *size* bytes of *source* in as member *name*; return their SHA-256.

        The bytes are read into the buffer where they will be written from, and hashed
        there: one read, one hash per file (plus the package hash if enabled).

        Raises
        ------
        EOFError
            *source* ended before *size* bytes (the file shrank after it was listed).
        """
        header = member_header(name, size)
        span = len(header) + size + -size % BLOCK
        if span <= len(self._buffer) - self._fill:
            return self._add_small_member(header, span, name, size, source, progress)
        self.write(header)
        self.members += 1
        hasher = hashlib.sha256()
        left = size
        while left:
            room = self._buffer[self._fill : self._fill + min(left, len(self._buffer) - self._fill)]
            read_exactly(source, room, name)  # EOFError: the file shrank after it was listed
            count = len(room)
            hasher.update(room)
            self._fill += count
            self.size += count
            left -= count
            if self._fill == len(self._buffer):
                self._flush()
            if progress is not None:
                progress(count)
        self.end_member(size)
        return hasher.hexdigest()

    def add_bytes(
        self, name: str, data: bytes, progress: Callable[[int], None] | None = None
    ) -> None:
        """Add *data* (a small file already read, see ``source.read_ahead``) as member
        *name*: the same bytes :meth:`add_member` writes for it."""
        size = len(data)
        header = member_header(name, size)
        span = len(header) + size + -size % BLOCK
        buffer, start = self._buffer, self._fill
        if span > len(buffer) - start:
            self.write(header)
            self.members += 1
            self.write(data)
            self.end_member(size)
        else:
            end = start + len(header) + size
            buffer[start : end - size] = header
            buffer[end - size : end] = data
            buffer[end : start + span] = _ZEROS[: start + span - end]
            self._fill += span
            self.size += span
            self.members += 1
            if self._fill == len(buffer):
                self._flush()
        if progress is not None and size:
            progress(size)

    def _add_small_member(
        self,
        header: bytes,
        span: int,
        name: str,
        size: int,
        source: ReadInto,
        progress: Callable[[int], None] | None,
    ) -> str:
        """:meth:`add_member` for a member that fits the buffer whole: header, data and
        padding are placed with one copy each and hashed once, the same bytes in the same
        order as the general path (most members of a small-file tree take this one)."""
        buffer, start = self._buffer, self._fill
        data = start + len(header)
        end = data + size
        buffer[start:data] = header
        read_exactly(source, buffer[data:end], name)  # EOFError: the file shrank
        if progress is not None and size:
            progress(size)
        buffer[end : start + span] = _ZEROS[: start + span - end]
        self._fill += span
        self.size += span
        self.members += 1
        digest = hashlib.sha256(buffer[data:end]).hexdigest()
        if self._fill == len(buffer):
            self._flush()
        return digest
