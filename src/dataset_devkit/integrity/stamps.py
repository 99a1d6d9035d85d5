"""A finished file's identity, taken by its writer and compared by publication.

Its own module, apart from :mod:`~dataset_devkit.integrity.publish`: the processes that
write shards take stamps but never publish, and a worker (or the fork server every worker
is forked from) should not import the whole publication and verification machinery, about
a third of a fork server's start-up, to call :func:`os.fstat`.
"""

from __future__ import annotations

import os

__all__ = ["FileStamp", "file_stamp"]

#: ``(st_dev, st_ino, st_size, st_mtime_ns)`` of a file its writer has finished.
FileStamp = tuple[int, int, int, int]


def file_stamp(fd: int) -> FileStamp:
    """The stamp of the file open at *fd*: take it after the last write, before closing."""
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
