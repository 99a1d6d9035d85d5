"""The bounded read loop: the bytes a caller expects, a short read continued, EOF named.

A raw read (``os.read``, ``os.pread``, ``readinto``) may return fewer bytes than asked
without being at the end of the file (a signal, a network filesystem, a file still being
written), so every reader that needs *n* bytes loops until it has them or the file ends:
the packer filling its write buffer, the export reading a frame whole, validation reading a
table, the copy of a file into a staging tree. This module is that loop, written once.
``release/unpack.py`` keeps its own (a buffered reader's ``read(n)``): it ships alone and
runs on a bare Python, so it imports nothing of this package.
"""

from __future__ import annotations

import os
from typing import Protocol

__all__ = ["FdReader", "ReadInto", "fill", "read_exactly", "read_expected"]


class ReadInto(Protocol):
    """A raw binary source (``io.FileIO``): fills a caller's buffer, no copy in between."""

    def readinto(self, buffer: memoryview, /) -> int | None: ...


class FdReader:
    """A file descriptor read with ``readv`` straight into the caller's buffer.

    ``io.FileIO`` would do the same, at the price of one more object per file: on a tree of
    50,000 small files the per-file Python work is what a packer's time is made of.
    """

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def readinto(self, buffer: memoryview, /) -> int:
        return os.readv(self.fd, [buffer])


def fill(source: ReadInto, view: memoryview) -> int:
    """Read from *source* into *view* until it is full or the source ends; return the
    number of bytes read (fewer than ``len(view)`` only at the end)."""
    size = len(view)
    count = source.readinto(view) or 0
    while count < size:  # a short read: rare, but not the end by itself
        more = source.readinto(view[count:])
        if not more:
            break
        count += more
    return count


def read_exactly(source: ReadInto, view: memoryview, what: str = "source") -> None:
    """Fill *view* from *source*.

    Raises
    ------
    EOFError
        The source ended first (a file shrank after it was listed); *what* names it.
    """
    size = len(view)
    count = source.readinto(view) or 0  # the common case: one call fills it
    if count < size:
        count += fill(source, view[count:])
        if count != size:
            raise EOFError(f"{what}: ended after {count} of {size} bytes")


def read_expected(fd: int, size: int, offset: int | None = None) -> bytes:
    """The *size* bytes a file is expected to hold, read from *fd* (with *offset*: from
    there, by ``pread``, leaving the file position alone).

    One byte more is asked for, so a file that grew returns ``size + 1`` bytes and one that
    shrank fewer than *size*: the caller compares the length. A short read is continued
    until *size* bytes or the end; in the common case this is one system call.
    """
    data = os.read(fd, size + 1) if offset is None else os.pread(fd, size + 1, offset)
    while len(data) < size:  # a short read: continue where it stopped
        at, want = len(data), size + 1 - len(data)
        more = os.read(fd, want) if offset is None else os.pread(fd, want, offset + at)
        if not more:
            break
        data += more
    return data
