"""Read the files of the source tree once each, never following a link.

The tree is listed first (:mod:`.scan`); each file is then opened through its pinned chain
of directories and checked around its read against what the listing found.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future
from pathlib import Path
from types import TracebackType
from typing import Final, TypeVar

from dataset_devkit.integrity.reads import FdReader, ReadInto, read_exactly, read_expected
from dataset_devkit.release import unpack
from dataset_devkit.release.errors import UnsafeTreeError
from dataset_devkit.release.scan import SourceFile

__all__ = [
    "SourceReader",
    "read_ahead",
    "read_each",
]

CHUNK: Final = 1 << 20
#: Files up to this size are read whole on a pool thread, many to a batch (:func:`read_ahead`);
#: larger ones are streamed by the caller in :data:`CHUNK` pieces.
SMALL_FILE: Final = 1 << 20
#: A batch ends at this many files or bytes; at most :data:`BATCHES_AHEAD` batches are read
#: ahead of the writer, so memory stays under ``BATCHES_AHEAD * BATCH_BYTES + SMALL_FILE``.
BATCH_FILES: Final = 256
BATCH_BYTES: Final = 2 << 20
BATCHES_AHEAD: Final = 3
_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
_HAS_READV: Final = hasattr(os, "readv")  # not on Windows: io.FileIO there
T = TypeVar("T")


class SourceReader:
    """Open files of a tree one directory level at a time, never following a link.

    Files are expected in sorted order, so the chain of open directories is reused (and the
    parent folder of the previous file is reused as is).
    """

    def __init__(self, root: Path) -> None:
        self._root = unpack.PinnedDir.open_root(str(root), create=False)
        self._chain = unpack.DirChain(self._root)
        self._label = root
        self._buffer = memoryview(bytearray(CHUNK))
        self._parent: str | None = ""  # the folder of the previous file, kept open
        self._folder = self._root

    def __enter__(self) -> SourceReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._chain.close()
        self._root.close()

    def _open_fd(self, path: str) -> int:
        parent, _, leaf = path.rpartition("/")
        if parent != self._parent:
            self._parent = None  # a failed walk leaves no stale folder behind
            self._folder = self._chain.goto(parent.split("/") if parent else [], create=False)
            self._parent = parent
        folder = self._folder
        try:
            if folder.fd is not None:
                return os.open(leaf, _READ_FLAGS, dir_fd=folder.fd)
            return os.open(Path(folder.path, leaf), _READ_FLAGS)  # no descriptors (Windows)
        except OSError as exc:
            raise UnsafeTreeError(
                f"cannot open without following links ({exc})", path=self._label / path
            ) from None

    def read(self, item: SourceFile, consume: Callable[[ReadInto], T]) -> T:
        """Open the file and let *consume* read exactly ``item.size`` bytes of it, checked
        around the read; return what *consume* returns.

        The identity and size are compared before and after the read, so a file replaced,
        grown or shrunk while it is packed is an error rather than a silently different
        package. *consume* must read exactly ``item.size`` bytes or raise :class:`EOFError`
        (which becomes :class:`UnsafeTreeError` here).
        """
        fd = self._open_fd(item.path)
        try:
            before = self._stat_before(fd, item)
            try:
                result = consume(FdReader(fd) if _HAS_READV else io.FileIO(fd, "rb", closefd=False))
            except EOFError:
                raise self._shorter(item) from None
            after = os.fstat(fd)
        finally:
            os.close(fd)
        self._check_after(item, before, after)
        return result

    def read_small(self, items: Iterable[SourceFile]) -> list[tuple[bytes, str]]:
        """Return each file's bytes and SHA-256, with the checks of :meth:`read` (one read
        call where :meth:`read` takes one per buffer; a grown file is caught by its size).

        The loop of :meth:`read` written out for a run of small files: on a tree of 50,000
        of them the Python calls around the five system calls per file (open, ``fstat``,
        read, ``fstat``, close) were as much again as the calls themselves.
        """
        out = []
        fstat, close, sha256, is_regular = os.fstat, os.close, hashlib.sha256, stat.S_ISREG
        for item in items:
            size = item.size
            fd = self._open_fd(item.path)
            try:
                before = fstat(fd)
                if not is_regular(before.st_mode) or before.st_size != size:
                    raise self._not_as_listed(item)
                data = read_expected(fd, size)
                after = fstat(fd)
            finally:
                close(fd)
            if (
                len(data) != size
                or before.st_ino != after.st_ino
                or before.st_dev != after.st_dev
                or after.st_size != size
                or before.st_mtime_ns != after.st_mtime_ns
            ):
                if len(data) < size:
                    raise self._shorter(item)
                self._check_after(item, before, after, grown=len(data) > size)
            out.append((data, sha256(data).hexdigest()))
        return out

    def _stat_before(self, fd: int, item: SourceFile) -> os.stat_result:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode) or before.st_size != item.size:
            raise self._not_as_listed(item)
        return before

    def _not_as_listed(self, item: SourceFile) -> UnsafeTreeError:
        return UnsafeTreeError(
            f"changed while packing: expected a regular file of {item.size} bytes",
            path=self._label / item.path,
        )

    def _shorter(self, item: SourceFile) -> UnsafeTreeError:
        return UnsafeTreeError(
            "changed while packing: shorter than listed", path=self._label / item.path
        )

    def _check_after(
        self, item: SourceFile, before: os.stat_result, after: os.stat_result, grown: bool = False
    ) -> None:
        if (
            grown
            or before.st_ino != after.st_ino
            or before.st_dev != after.st_dev
            or before.st_size != after.st_size
            or before.st_mtime_ns != after.st_mtime_ns
        ):
            raise UnsafeTreeError(
                f"changed while packing ({item.size} bytes read)", path=self._label / item.path
            )

    def sha256(self, item: SourceFile, progress: Callable[[int], None] | None = None) -> str:
        """Hash a file that is not archived (a pending family), with the same checks."""
        return self.read(item, lambda source: self._hash(source, item.size, progress))

    def _hash(self, source: ReadInto, size: int, progress: Callable[[int], None] | None) -> str:
        hasher = hashlib.sha256()
        left = size
        while left:
            room = self._buffer[: min(left, len(self._buffer))]
            read_exactly(source, room)  # EOFError: the file shrank (named by read())
            hasher.update(room)
            left -= len(room)
            if progress is not None:
                progress(len(room))
        return hasher.hexdigest()


def _read_batch(root: Path, batch: list[SourceFile]) -> list[tuple[bytes, str]]:
    """Read and hash a run of small files on a pool thread, through a reader of its own
    (a directory chain is not shared between threads)."""
    with SourceReader(root) as reader:
        return reader.read_small(batch)


def _batches(items: Iterable[SourceFile]) -> Iterator[list[SourceFile] | None]:
    """Runs of consecutive small files (at most :data:`BATCH_FILES` / :data:`BATCH_BYTES`);
    None for each large file, in its place."""
    batch: list[SourceFile] = []
    size = 0
    for item in items:
        if item.size > SMALL_FILE:
            if batch:
                yield batch
                batch, size = [], 0
            yield None
            continue
        if batch and (len(batch) >= BATCH_FILES or size + item.size > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += item.size
    if batch:
        yield batch


def read_each(
    reader: SourceReader, items: Sequence[SourceFile]
) -> Iterator[tuple[bytes, str] | None]:
    """:func:`read_ahead` in this thread: for each of *items*, in order, its bytes and
    SHA-256 (runs of small files read in one loop), or None for a large file (the caller
    streams it). A package writer in a worker process reads this way: its process is its
    own core, threads would add nothing."""
    for batch in _batches(items):
        if batch is None:
            yield None
        else:
            yield from reader.read_small(batch)


def read_ahead(
    root: Path, items: Iterable[SourceFile], pool: Executor
) -> Generator[tuple[bytes, str] | None, None, None]:
    """For each of *items*, in order: its bytes and SHA-256, read ahead on *pool*'s threads
    in batches, or None for a file larger than :data:`SMALL_FILE` (the caller streams it).

    On a tree of small files the cost is system calls (open, two ``fstat``, read, close per
    file): made on pool threads, they overlap the writer's work instead of adding to it.
    At most :data:`BATCHES_AHEAD` batches are read ahead; each running batch holds one
    descriptor per level of its current path, plus its file's. A file that fails its checks
    raises :class:`UnsafeTreeError` where its turn comes, as :meth:`SourceReader.read` would.
    """
    ahead: deque[Future[list[tuple[bytes, str]]] | None] = deque()
    try:
        for batch in _batches(items):
            ahead.append(None if batch is None else pool.submit(_read_batch, root, batch))
            while len(ahead) > BATCHES_AHEAD:
                yield from _results(ahead.popleft())
        while ahead:
            yield from _results(ahead.popleft())
    finally:
        for future in ahead:
            if future is not None:
                future.cancel()


def _results(
    future: Future[list[tuple[bytes, str]]] | None,
) -> Iterator[tuple[bytes, str] | None]:
    if future is None:
        yield None
    else:
        yield from future.result()
