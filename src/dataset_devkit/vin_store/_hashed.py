"""A new file that hashes exactly the bytes written to it, for manifests made as we write.

Created exclusively and without following links (a file is never replaced). Nothing here
waits for the disk: publication seals the whole tree with one ``syncfs`` (or an fsync per
file where that is unavailable) before anything becomes visible, which is the durability a
store promises. An fsync per shard file in the workers only duplicated that wait, one
journal commit each, on the build's critical path. Instead, Linux is asked to *start*
writing a large file back every few MB as it grows, and the rest when it is closed
(``sync_file_range(SYNC_FILE_RANGE_WRITE)``, which does not wait for the disk), so the disk
works while the build goes on and the seal's sync finds little left to do.
A resume record never relies on a shard being durable: a re-run re-hashes a shard's files
against its record before reusing it.

What the digest covers is what the file holds: every byte is hashed from the very memory
that ``write`` copies into the file, and that memory does not change during the call (the
caller's contract: a row block the build owns, an immutable ``bytes``, or a sample's array,
which its producer is done with until it is asked for the next sample). On close, the
file's :func:`~dataset_devkit.integrity.stamps.file_stamp` is taken after its last write,
so publication can tell the sealed file is still the one hashed without reading it again.

A large row written by the thread that produced it goes through a two-stage pipeline, a
MiB at a time: that thread hashes a piece, then a helper thread writes it while the next
piece is hashed (both release the GIL; one helper per process, made on first use and
dropped in a forked child, whose copy of it would have no thread behind it). The hash
always reads a piece first: a freshly mapped source (a memmap a worker just opened) is
faulted in by the hash, and the write copies the piece from the cache. Writing the whole
buffer while hashing it from the start, as before, let the write meet unmapped pages:
each short copy made ext4 zero the new page-cache blocks before the retry
(``folio_zero_new_buffers``, 8% of a build from sources), and the two threads read the
same memory from DRAM at once. In two interleaved micro-benchmarks of 2 MiB rows from a
fresh mapping on a loaded machine, the pipeline took 13-28% less CPU time and 8-32% less
wall time. Everything else (row blocks, records, index files) is hashed, then written, by
the calling thread, a piece at a time too: a streamed shard's writer already runs beside
the producer, and a third thread would only add GIL hand-offs.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any, Final

from dataset_devkit.errors import DestinationExistsError
from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.integrity.stamps import FileStamp, file_stamp

__all__ = ["HashedFile", "start_writeback"]

_OPEN_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_WRITEBACK_FROM: Final = 1 << 20
#: Written bytes whose write-back is started at once, as a file grows.
_WRITEBACK_EVERY: Final = 8 << 20
_SYNC_FILE_RANGE_WRITE: Final = 2
#: Pieces of the hash-then-write pipeline of a large buffer (two or more of them).
_PIECE: Final = 1 << 20

_helper: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def _write_helper() -> ThreadPoolExecutor:
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(1, thread_name_prefix="vin-write")
        return _helper


def _forget_helper() -> None:
    global _helper, _helper_lock
    _helper, _helper_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_helper)


@cache
def _sync_file_range() -> Any:
    """libc's ``sync_file_range`` (Linux; the standard library has no binding), or None."""
    if not sys.platform.startswith("linux"):
        return None
    func = getattr(ctypes.CDLL(None, use_errno=True), "sync_file_range", None)
    if func is not None:
        func.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
        func.restype = ctypes.c_int
    return func


def start_writeback(fd: int, start: int = 0, nbytes: int = 0) -> None:
    """Start writing *fd*'s dirty pages back without waiting (a hint: errors surface at the
    seal's sync, which is what durability relies on); *nbytes* 0: to the end."""
    func = _sync_file_range()
    if func is not None:
        func(fd, start, nbytes, _SYNC_FILE_RANGE_WRITE)


class HashedFile:
    """A new file (exclusive, no-follow) that hashes exactly the bytes written to it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.fd = os.open(path, _OPEN_FLAGS, 0o644)
        except FileExistsError:
            raise DestinationExistsError(f"{path}: already exists") from None
        self.sha = hashlib.sha256()
        self.size = 0
        #: Set by :meth:`close`: the file as its last write left it.
        self.stamp: FileStamp | None = None
        self._written_back = 0

    def write(
        self, data: bytes | memoryview, *, hashed: bool = False, overlap: bool = False
    ) -> None:
        """Write all of *data*; ``hashed=True``: ``sha`` already holds it (see prehashed).

        *overlap*: a large buffer goes through the pipeline (see the module doc). Only for
        a caller that has nothing else to do meanwhile, such as a producer writing its own
        sample's row: a thread that already runs beside a producer (a streamed shard's
        writer) only gains GIL hand-offs from a third thread.
        """
        view = memoryview(data).cast("B")
        if hashed:
            self._write_all(view)
        elif overlap and len(view) >= 2 * _PIECE:
            self._pipelined(view)
        else:  # a piece at a time, so the write copies what the hash left in the cache
            for start in range(0, len(view), _PIECE):
                piece = view[start : start + _PIECE]
                self.sha.update(piece)
                self._write_all(piece)

    def _pipelined(self, view: memoryview) -> None:
        """Hash each piece, then write it on the helper while the next one is hashed; on
        return (or an error) no write is left using *view*."""
        helper = _write_helper()
        written: Future[None] | None = None
        try:
            for start in range(0, len(view), _PIECE):
                piece = view[start : start + _PIECE]
                self.sha.update(piece)
                if written is not None:
                    previous, written = written, None
                    previous.result()
                written = helper.submit(self._write_all, piece)
        finally:
            if written is not None:
                written.result()

    def _write_all(self, view: memoryview) -> None:
        with naming(self.path):  # a full disk names the file, not just the errno
            while view:
                written = os.write(self.fd, view)
                view = view[written:]
                self.size += written
        if self.size - self._written_back >= _WRITEBACK_EVERY:
            start_writeback(self.fd, self._written_back, self.size - self._written_back)
            self._written_back = self.size

    def abandon(self) -> None:
        """Close without a result (a shard that failed or was cut short); idempotent."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def close(self) -> tuple[int, str]:
        """Close (starting the write-back of a large file's rest), set :attr:`stamp`, and
        return (size, SHA-256 hex)."""
        try:
            self.stamp = file_stamp(self.fd)
            if self.size >= _WRITEBACK_FROM:
                start_writeback(self.fd, self._written_back)
        finally:
            self.abandon()
        return self.size, self.sha.hexdigest()
