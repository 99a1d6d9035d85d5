"""Hash a whole tree once, on every core, without following links.

The walk pins each directory by a no-follow descriptor and hands each regular file, already
opened, to a small thread pool: ``hashlib`` and ``read`` release the GIL on large buffers,
so two threads keep two cores busy on large files while the walker keeps going on small
ones. A bounded window of in-flight files keeps the number of open descriptors at the tree
depth plus a constant, and memory flat whatever the file sizes.

Every file's identity is compared at three points: the directory entry seen by the walk,
the opened descriptor before the read, and both again after the read. Any difference
(another inode, another size, another mtime, a byte count that disagrees) is reported as a
race rather than hashed into a manifest.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from dataset_devkit.errors import UnsafePathError
from dataset_devkit.integrity.issues import Issue, IssueKind
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate
from dataset_devkit.integrity.reads import FdReader, fill, read_expected
from dataset_devkit.integrity.safefs import (
    COPY_BLOCK_SIZE,
    SafeDir,
    describe_mode,
    open_dir_nofollow,
)
from dataset_devkit.integrity.tree_size import tree_totals

__all__ = ["MAX_IN_FLIGHT", "ScanResult", "default_workers", "hash_fd", "hash_file", "scan_tree"]

#: ``advance(nbytes)``: the byte counter of :func:`hash_fd`'s read loop.
ByteCounter = Callable[[int], None]

_SMALL_FILE: Final = 1 << 20
#: Files handed to the pool and not yet hashed. Each holds its file's descriptor and keeps
#: its directory's open, so this is the constant in "descriptors <= depth + constant": it
#: must not grow with the number of cores (64 cores must still fit ``ulimit -n 256``).
MAX_IN_FLIGHT: Final = 32
_OPEN_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def default_workers() -> int:
    """Hashing threads: one per available core, at least two so I/O overlaps hashing."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        cores = os.cpu_count() or 2
    return max(2, cores)


@dataclass
class ScanResult:
    """Sizes and digests of every regular file found, plus every issue met on the way.

    ``sized`` holds the regular files a sampled scan listed but did not hash (their size).
    """

    files: dict[str, tuple[int, str]] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    sized: dict[str, int] = field(default_factory=dict)


class _DirRef:
    """A directory descriptor shared by the walker and pending file tasks; closed at zero."""

    __slots__ = ("_count", "_lock", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._count = 1
        self._lock = threading.Lock()

    def acquire(self) -> None:
        with self._lock:
            self._count += 1

    def release(self) -> None:
        with self._lock:
            self._count -= 1
            done = self._count == 0
        if done:
            os.close(self.fd)


def hash_fd(fd: int, size_hint: int, progress: ByteCounter | None = None) -> tuple[int, str]:
    """Read *fd* to its end once, returning ``(bytes read, sha256 hex)``.

    *progress* is called with the byte count of each block read.
    """
    digest = hashlib.sha256()
    total = 0
    if size_hint < _SMALL_FILE:
        # Small files: the cost is syscalls, so ask for one byte more than expected; fewer
        # than that (the common case: one call) has met the end of the file.
        data = read_expected(fd, size_hint)
        digest.update(data)
        total = len(data)
        if progress is not None:
            progress(total)
        if total <= size_hint:
            return total, digest.hexdigest()
        # It grew while it was read: on to its end, as for a large file.
    view = memoryview(bytearray(COPY_BLOCK_SIZE))
    reader = FdReader(fd)
    while count := fill(reader, view):
        digest.update(view[:count])
        total += count
        if progress is not None:
            progress(count)
        if count < len(view):
            break  # the end
    return total, digest.hexdigest()


def hash_file(path: str | os.PathLike[str]) -> tuple[int, str]:
    """Hash one single-link regular file without following links: ``(size, sha256 hex)``.

    Raises :class:`UnsafePathError` for a link or special file, or a file that changed
    while it was read.
    """
    target = Path(path)
    with SafeDir.open(target.parent) as parent, parent.open_read(target.name) as handle:
        fd = handle.fileno()
        before = os.fstat(fd)
        size, digest = hash_fd(fd, before.st_size)
        after = os.fstat(fd)
    if _identity(before) != _identity(after) or size != before.st_size:
        raise UnsafePathError("changed while it was hashed", path=target)
    return size, digest


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class _Reporter:
    """Turns the scan's reads into :class:`ProgressUpdate` values: bytes and files done.

    A large file reports each block as it is read (a bar keeps moving through a 40 GB
    video) and then counts as one file; a small file reports its bytes and itself at once,
    one call per file.
    """

    __slots__ = ("progress", "stage")

    def __init__(self, progress: OnProgress, stage: str) -> None:
        self.progress, self.stage = progress, stage

    def bytes_read(self, nbytes: int) -> None:
        self.progress(ProgressUpdate(self.stage, nbytes=nbytes))

    def file_done(self, nbytes: int) -> None:
        self.progress(ProgressUpdate(self.stage, nbytes=nbytes, items=1))


def _hash_entry(
    parent: _DirRef, name: str, rel: str, seen: os.stat_result, reporter: _Reporter | None
) -> tuple[str, tuple[int, str] | Issue]:
    """Hash one file (see :func:`_hash_checked`), then count it as done, whatever came out."""
    if reporter is None:
        return _hash_checked(parent, name, rel, seen, None)
    streamed = seen.st_size >= _SMALL_FILE
    outcome = _hash_checked(parent, name, rel, seen, reporter.bytes_read if streamed else None)
    found = outcome[1]
    reporter.file_done(found[0] if isinstance(found, tuple) and not streamed else 0)
    return outcome


def _hash_checked(
    parent: _DirRef, name: str, rel: str, seen: os.stat_result, progress: ByteCounter | None
) -> tuple[str, tuple[int, str] | Issue]:
    """Open, hash and identity-check one file relative to its pinned directory."""
    try:
        try:
            fd = os.open(name, _OPEN_FLAGS, dir_fd=parent.fd)
        except OSError as exc:
            return rel, Issue(rel, IssueKind.RACED, f"could not be opened: {exc.strerror}")
        try:
            before = os.fstat(fd)
            if (before.st_dev, before.st_ino) != (seen.st_dev, seen.st_ino):
                return rel, Issue(rel, IssueKind.RACED, "replaced between listing and opening")
            if not stat.S_ISREG(before.st_mode) or before.st_nlink != 1:
                return rel, Issue(rel, IssueKind.RACED, "changed kind or links after listing")
            # O_NONBLOCK only guarded the open against a swapped-in FIFO; it has no effect
            # on reads of the regular file we now know this is.
            size, digest = hash_fd(fd, before.st_size, progress)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        relisted = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
    except OSError as exc:
        return rel, Issue(rel, IssueKind.RACED, f"vanished or failed while hashed: {exc}")
    finally:
        parent.release()
    ident_before = (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns)
    ident_after = (after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns)
    if ident_before != ident_after or size != before.st_size:
        return rel, Issue(
            rel,
            IssueKind.RACED,
            f"identity or size changed while hashed (size {before.st_size} before, "
            f"{after.st_size} after, {size} bytes read)",
        )
    if (relisted.st_dev, relisted.st_ino, relisted.st_size) != ident_after[:3]:
        return rel, Issue(rel, IssueKind.RACED, "directory entry replaced while hashed")
    return rel, (size, digest)


def scan_tree(
    root: Path,
    *,
    exclude: frozenset[str] = frozenset(),
    progress: OnProgress | None = None,
    workers: int | None = None,
    stage: str = "hash",
    totals: tuple[int, int] | None = None,
    select: Callable[[str], bool] | None = None,
) -> ScanResult:
    """Hash every regular file below *root*; report links, special files and races.

    Parameters
    ----------
    root
        A real directory (not a symlink).
    exclude
        Relative POSIX paths, at any depth, that are skipped when they name anything but a
        directory (the content manifest itself). Only that exact path is skipped: a file of
        the same name elsewhere is hashed like any other, and a directory at an excluded
        path is walked, so an exclusion can never hide a subtree.
    progress
        Hears of the scan as *stage*: first its totals, then, from worker threads, bytes
        as they are hashed and each file done (``items``, unit ``files``).
    workers
        Hashing threads; :func:`default_workers` when ``None``.
    totals
        ``(bytes, files)`` the caller already knows (a manifest's); otherwise, and only
        when there is a *progress* listener, a stat walk counts them first so a bar can
        show an ETA (a few percent of the hashing time, paid by no silent caller).
    select
        Hash only the regular files whose path it accepts; the others are checked as
        everything is (type, links) and their size recorded in ``sized``.
    """
    result = ScanResult()
    reporter = None
    if progress is not None:
        reporter = _Reporter(progress, stage)
        known = totals if totals is not None else tree_totals(root, exclude)
        bytes_total, files_total = known if known is not None else (None, None)
        progress(ProgressUpdate(stage, total_bytes=bytes_total, total_items=files_total))
    nworkers = min(workers or default_workers(), MAX_IN_FLIGHT)
    window = threading.BoundedSemaphore(min(nworkers * 4, MAX_IN_FLIGHT))
    pending: list[Future[tuple[str, tuple[int, str] | Issue]]] = []
    inline: list[tuple[str, tuple[int, str] | Issue]] = []
    root_ref = _DirRef(open_dir_nofollow(root))

    def finished(_: Future[tuple[str, tuple[int, str] | Issue]]) -> None:
        window.release()

    def walk(ref: _DirRef, prefix: str, pool: ThreadPoolExecutor) -> None:
        try:
            try:
                with os.scandir(ref.fd) as scan:
                    entries = sorted(scan, key=lambda entry: entry.name)
            except OSError as exc:
                where = prefix.rstrip("/") or "."
                result.issues.append(Issue(where, IssueKind.RACED, f"cannot list: {exc}"))
                return
            for entry in entries:
                rel = prefix + entry.name
                if rel in exclude and not entry.is_dir(follow_symlinks=False):
                    continue
                try:
                    rel.encode("utf-8")
                except UnicodeEncodeError:
                    result.issues.append(
                        Issue(
                            rel.encode("utf-8", "replace").decode(),
                            IssueKind.UNSAFE,
                            "file name is not valid UTF-8",
                        )
                    )
                    continue
                try:
                    seen = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    result.issues.append(Issue(rel, IssueKind.RACED, "vanished while listed"))
                    continue
                mode = seen.st_mode
                if stat.S_ISDIR(mode):
                    try:
                        sub = _DirRef(open_dir_nofollow(entry.name, dir_fd=ref.fd))
                    except OSError as exc:
                        result.issues.append(Issue(rel, IssueKind.RACED, f"directory: {exc}"))
                        continue
                    pinned = os.fstat(sub.fd)
                    if (pinned.st_dev, pinned.st_ino) != (seen.st_dev, seen.st_ino):
                        sub.release()
                        result.issues.append(Issue(rel, IssueKind.RACED, "directory replaced"))
                        continue
                    walk(sub, rel + "/", pool)
                elif stat.S_ISLNK(mode):
                    result.issues.append(Issue(rel, IssueKind.LINKED, "is a symlink"))
                elif not stat.S_ISREG(mode):
                    result.issues.append(
                        Issue(rel, IssueKind.NOT_REGULAR, f"is a {describe_mode(mode)}")
                    )
                elif seen.st_nlink > 1:
                    result.issues.append(
                        Issue(rel, IssueKind.LINKED, f"is a hard link ({seen.st_nlink} links)")
                    )
                elif select is not None and not select(rel):
                    result.sized[rel] = seen.st_size
                elif seen.st_size < _SMALL_FILE:
                    # Small files are hashed right here: a task hand-off costs more than
                    # the hash, and the pool stays free for large files.
                    ref.acquire()
                    inline.append(_hash_entry(ref, entry.name, rel, seen, reporter))
                else:
                    window.acquire()
                    ref.acquire()
                    future = pool.submit(_hash_entry, ref, entry.name, rel, seen, reporter)
                    future.add_done_callback(finished)
                    pending.append(future)
        finally:
            ref.release()

    with ThreadPoolExecutor(max_workers=nworkers, thread_name_prefix="hash") as pool:
        walk(root_ref, "", pool)
    for rel, outcome in [*inline, *(future.result() for future in pending)]:
        if isinstance(outcome, Issue):
            result.issues.append(outcome)
        else:
            result.files[rel] = outcome
    result.issues.sort()
    return result
