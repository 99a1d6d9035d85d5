"""Room in a shared cache directory: a byte limit kept by evicting least-recently-used files.

Every process and rank that shares a cache directory keeps the same books, with no daemon:
the books are the directory itself. A verified file has a *stamp* (``KEY/stamps/NAME.json``:
its relative path, size and identity) whose modification time is the file's last use; a
download in flight is ``KEY/tmp/NAME.SIZE.part``, counted at its full size from the moment
it is created. One ``flock`` on ``cache.lock`` serializes the decisions: making room for a
download (evicting the oldest files until the stamps plus the parts in flight plus the new
file fit the limit), creating its part, and later renaming it into place with its stamp.
So two processes never both admit downloads into the same room, and a scan never misses a
file between its part and its stamp.

A file is never evicted while a process holds its object lock (``KEY/locks/NAME``): a
downloader holds it exclusively, and a reader holds it shared while it opens and maps the
file. After that a reader keeps its mapping, and the file may be evicted under it: on POSIX
an unlinked file stays readable through every existing mapping (its blocks are freed when
the last one goes), so no reader ever breaks, and readers drop mappings of evicted files
(see :meth:`CacheSpace.generation`). Lock holders never wait for each other while holding
``cache.lock`` (object locks are only *tried* under it), so there is no deadlock.

Removals walk the cache directory without following links (a link planted in it cannot
redirect a removal elsewhere) and touch only files named by a stamp under ``KEY/tree/``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import mmap
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dataset_devkit.errors import MissingPathError, UnsafePathError
from dataset_devkit.integrity.safefs import SafeDir, check_relative_path

__all__ = [
    "LOCK_NAME",
    "SOURCE_NAME",
    "CacheSpace",
    "CacheUsage",
    "CachedFile",
    "object_name",
    "read_source",
    "tree_key",
    "write_source",
]

#: The cache's one lock file; its first 8 bytes count evictions (little-endian uint64).
LOCK_NAME: Final = "cache.lock"
#: ``KEY/source.json``: the URL a tree folder mirrors (for ``cache ls``).
SOURCE_NAME: Final = "source.json"
_COUNTER = struct.Struct("<Q")
_KEY = re.compile(r"[0-9a-f]{24}")
_PART = re.compile(r"([0-9a-f]{64})\.(\d+)\.part")
_FLAGS: Final = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC


def tree_key(url: str) -> str:
    """The folder name of *url*'s mirror in a cache directory."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:24]


def object_name(rel: str) -> str:
    """The name of *rel*'s stamp, lock and part files (a hash: any path fits one name)."""
    return hashlib.sha256(rel.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedFile:
    """One verified file in a cache: which tree, which path, how big, when last used."""

    key: str
    rel: str
    size: int
    last_used_ns: int


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """What a cache holds right now: verified files and bytes of downloads in flight."""

    files: tuple[CachedFile, ...]
    in_flight_bytes: int

    @property
    def total_bytes(self) -> int:
        """Verified bytes plus the full size of every download in flight."""
        return sum(f.size for f in self.files) + self.in_flight_bytes


def _try_lock(path: Path) -> int | None:
    """An exclusive lock on *path* if nobody holds one (its descriptor), else None."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, _FLAGS, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class CacheSpace:
    """The books of one cache directory (see the module docstring).

    Parameters
    ----------
    cache_dir
        The cache directory shared by every process that reads through it.
    """

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = Path(cache_dir)
        self._lock_path = self.cache_dir / LOCK_NAME
        self._counter: mmap.mmap | None = None
        # stamp path -> (inode, stamp bytes, rel, size): stamps are rewritten, never edited
        self._read: dict[str, tuple[int, int, str, int]] = {}

    # ---- the lock and the eviction counter --------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[int]:
        """Hold ``cache.lock`` (a fresh descriptor each time: never shared across a fork)."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, _FLAGS, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)

    def generation(self) -> int:
        """How many evictions this cache has seen: a reader whose count changed checks its
        mappings. One memory read (the lock file's first bytes, mapped once per process)."""
        if self._counter is None:
            with self.locked() as fd:
                if os.fstat(fd).st_size < _COUNTER.size:
                    os.pwrite(fd, bytes(_COUNTER.size), 0)
            # A descriptor of its own: mmap keeps a duplicate of it, which would keep the
            # lock of a shared open file description held for as long as the map lives.
            fd = os.open(self._lock_path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                self._counter = mmap.mmap(fd, _COUNTER.size, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
        value: int = _COUNTER.unpack_from(self._counter)[0]
        return value

    def _bump(self, fd: int) -> None:
        raw = os.pread(fd, _COUNTER.size, 0).ljust(_COUNTER.size, b"\0")
        os.pwrite(fd, _COUNTER.pack(_COUNTER.unpack(raw)[0] + 1), 0)

    # ---- the books ------------------------------------------------------------------------
    def usage(self) -> CacheUsage:
        """Scan the books (hold :meth:`locked` for numbers that stay true); parts left by a
        process that died mid-download are removed on the way."""
        files: list[CachedFile] = []
        in_flight = 0
        try:
            tops = sorted(os.scandir(self.cache_dir), key=lambda e: e.name)
        except FileNotFoundError:
            return CacheUsage((), 0)
        for top in tops:
            if not _KEY.fullmatch(top.name) or not top.is_dir(follow_symlinks=False):
                continue
            files.extend(self._stamped_files(top.name))
            in_flight += self._parts_in_flight(top.name)
        return CacheUsage(tuple(files), in_flight)

    def _stamped_files(self, key: str) -> Iterator[CachedFile]:
        folder = self.cache_dir / key / "stamps"
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            if not entry.name.endswith(".json"):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            known = self._read.get(entry.path)
            if known is None or known[:2] != (st.st_ino, st.st_size):
                try:
                    record = json.loads(Path(entry.path).read_bytes())
                    rel, size = str(record["path"]), int(record["size"])
                except (OSError, ValueError, KeyError, TypeError):
                    continue  # a stamp of an older layout or being replaced: not counted
                known = self._read[entry.path] = (st.st_ino, st.st_size, rel, size)
            yield CachedFile(key, known[2], known[3], st.st_mtime_ns)

    def _parts_in_flight(self, key: str) -> int:
        folder = self.cache_dir / key / "tmp"
        try:
            names = sorted(entry.name for entry in os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return 0
        total = 0
        for name in names:
            found = _PART.fullmatch(name)
            if found is None:
                continue
            fd = _try_lock(self.cache_dir / key / "locks" / found.group(1))
            if fd is None:  # its downloader is alive and holds the object
                total += int(found.group(2))
                continue
            try:
                (folder / name).unlink(missing_ok=True)  # nobody writes it any more
            finally:
                os.close(fd)
        return total

    # ---- making room ----------------------------------------------------------------------
    def make_room(self, need: int, limit: int, lock_fd: int) -> list[CachedFile]:
        """Evict least-recently-used files until *need* more bytes fit *limit*.

        Call under :meth:`locked` (*lock_fd* is its descriptor). Files whose object lock
        someone holds are skipped; when they are all that is left, the download goes ahead
        anyway (the limit is then exceeded by files in use, never waited for). Returns the
        files evicted.
        """
        return self._evict_for(need, limit, lock_fd)[0]

    def room_within(self, need: int, limit: int, lock_fd: int) -> bool:
        """Like :meth:`make_room`, for a download that may wait (a prefetch): whether
        *need* more bytes now fit *limit*; if not, the caller does not download (the limit
        is never exceeded for a file nobody needs yet)."""
        return self._evict_for(need, limit, lock_fd)[1]

    def _evict_for(self, need: int, limit: int, lock_fd: int) -> tuple[list[CachedFile], bool]:
        usage = self.usage()
        total = usage.total_bytes
        evicted: list[CachedFile] = []
        for cached in sorted(usage.files, key=lambda f: (f.last_used_ns, f.key, f.rel)):
            if total + need <= limit:
                break
            if self.evict(cached):
                total -= cached.size
                evicted.append(cached)
        if evicted:
            self._bump(lock_fd)
        return evicted, total + need <= limit

    def evict(self, cached: CachedFile) -> bool:
        """Remove one cached file and its stamp unless its object lock is held.

        Under :meth:`locked`. The file goes first, then the stamp: a crash between the two
        leaves a stamp without a file, counted until the next eviction removes it, never a
        file nobody counts.
        """
        name = object_name(cached.rel)
        fd = _try_lock(self.cache_dir / cached.key / "locks" / name)
        if fd is None:
            return False
        try:
            try:
                check_relative_path(cached.rel)
                self._remove(cached.key, cached.rel)
            except UnsafePathError:
                pass  # a link or an odd name in the way is not ours to follow: drop the stamp
            stamp = self.cache_dir / cached.key / "stamps" / f"{name}.json"
            self._read.pop(str(stamp), None)
            stamp.unlink(missing_ok=True)
        finally:
            os.close(fd)
        return True

    def _remove(self, key: str, rel: str) -> None:
        try:
            top = os.open(self.cache_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        with SafeDir(top, self.cache_dir) as cache:
            try:
                tree = cache.opendir(f"{key}/tree")
            except MissingPathError:
                return
            with tree:
                tree.unlink(rel)


def write_source(cache_dir: Path, key: str, url: str) -> None:
    """Record which URL folder *key* mirrors, once (``cache ls`` shows it)."""
    target = cache_dir / key / SOURCE_NAME
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{SOURCE_NAME}.{os.getpid()}.part")
    temporary.write_text(json.dumps({"url": url}), "utf-8")
    temporary.replace(target)


def read_source(cache_dir: Path, key: str) -> str | None:
    """The URL folder *key* mirrors, if recorded."""
    try:
        record = json.loads((cache_dir / key / SOURCE_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    url = record.get("url") if isinstance(record, dict) else None
    return url if isinstance(url, str) else None
