"""A published tree in an object store, read through a local cache of verified whole files.

Readers (the VIN offline store, and any system whose files are read by path) ask for a
file by its relative path and get a local path they can ``mmap``. The first touch downloads
the whole object, hashing it on the way; only a file whose size and SHA-256 match the
remote ``content_manifest.json`` is renamed into the cache, so no partial or unverified file
is ever visible under its final name. Whole files, not byte ranges: on an S3 server one
ranged GET of a 24 KB row costs about as much as streaming several megabytes (see
``benchmarks/objectstore_remote_read.py``), and a whole file is checked against the
manifest the tree was published with, without any extra checksum in the format.

Concurrency: DataLoader workers (forked or spawned) and separate jobs share one cache
directory. One ``flock`` per object makes a file download once; the download goes to a
temporary file in the cache and is renamed over the final name; a *stamp* recorded after
verification (inode, size, mtimes, SHA-256) lets later processes trust the file without
rehashing it, while any change to the file (truncation, rewrite, replacement) changes the
inode or ctime and sends it back through a full hash, and a refetch when that fails.

A cache may have a byte limit (``limit``): downloads then make room first by evicting the
least recently used verified files of every tree in the directory, as the books of
:mod:`~dataset_devkit.integrity.bucket.cache_space` keep them for all processes at once.
A file is held (its object lock taken shared) while a reader opens it, so it cannot be
evicted between its check and its ``mmap``; once mapped it may be evicted, which POSIX
makes safe (an unlinked file stays readable through its mappings). A file evicted and
needed again is downloaded and verified again, like any other.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_devkit.errors import (
    ConfigError,
    IntegrityError,
    MissingPathError,
    ObjectStoreError,
)
from dataset_devkit.integrity.bucket.cache_space import (
    CacheSpace,
    object_name,
    tree_key,
    write_source,
)
from dataset_devkit.integrity.bucket.fork_helper import ForkHelper
from dataset_devkit.integrity.bucket.objects import read_small
from dataset_devkit.integrity.bucket.retry import RetryPolicy
from dataset_devkit.integrity.location import CONTENT_MANIFEST_NAME
from dataset_devkit.integrity.manifest import ContentManifest, ManifestEntry, parse_manifest
from dataset_devkit.integrity.numbers import format_size
from dataset_devkit.objectstore import (
    ObjectLocation,
    credentials_hint,
    forked_after_use,
    open_location,
)

if TYPE_CHECKING:
    from obstore.store import RetryConfig

__all__ = ["RETRY", "RemoteTree"]

#: How often one object is downloaded again after a dropped stream or a bad hash.
ATTEMPTS = 4
#: Overrides of obstore's retry policy for each request (5xx, connection errors): keys of
#: ``obstore.store.RetryConfig``. Empty means the policy in :func:`_retry_config`.
RETRY: dict[str, Any] = {}
_CHUNK = 8 << 20  # bytes per streamed piece: bounds memory per download
#: How often a file evicted between its download and its opening is fetched again before
#: the cache is declared too small for the processes that share it.
_HOLD_ATTEMPTS = 8
#: A file's last use is recorded at most this often per process (seconds): enough for
#: least-recently-used order, and one ``utime`` per file per second costs nothing.
_USE_INTERVAL = 1.0
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
#: Tries of the manifest read, backing off as :func:`_retry_config` does per request.
_MANIFEST_POLICY = RetryPolicy(attempts=ATTEMPTS, initial_backoff=0.05, max_backoff=2.0)


def _retry_config() -> RetryConfig:
    from datetime import timedelta

    config: RetryConfig = {
        "max_retries": 4,
        "retry_timeout": timedelta(seconds=30),
        "backoff": {
            "init_backoff": timedelta(milliseconds=50),
            "max_backoff": timedelta(seconds=2),
            "base": 2,
        },
    }
    config.update(RETRY)  # type: ignore[typeddict-item]
    return config


def _stamp_of(st: os.stat_result, sha256: str, rel: str) -> dict[str, Any]:
    return {
        "path": rel,
        "dev": st.st_dev,
        "ino": st.st_ino,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "sha256": sha256,
    }


def _hash_path(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as stream:
        while piece := stream.read(_CHUNK):
            digest.update(piece)
            size += len(piece)
    return digest.hexdigest(), size


class RemoteTree:
    """A tree published under an object store URL, cached file by file in *cache_dir*.

    Parameters
    ----------
    url
        ``s3://bucket/prefix`` (or any URL :func:`~dataset_devkit.objectstore.open_location`
        accepts): the tree's root, holding ``content_manifest.json``.
    cache_dir
        A local directory for verified copies; several trees and processes may share it.
    limit
        Bytes the whole cache directory may hold (every tree in it), or None for no limit.
        Downloads evict least-recently-used files to stay within it.

    Pickling keeps only the URL, cache directory and limit: a spawned worker opens its own
    client, and a forked child notices the new process id and does the same (obstore
    clients hold a runtime that must not cross a fork).
    """

    def __init__(self, url: str, cache_dir: Path, limit: int | None = None) -> None:
        self.url = url.rstrip("/")
        self.cache_dir = Path(cache_dir)
        self.limit = limit
        self.key = tree_key(self.url)
        #: The local mirror: every verified file at its relative path.
        self.root = self.cache_dir / self.key / "tree"
        self._meta = self.cache_dir / self.key
        self._space = CacheSpace(self.cache_dir)
        self._pid = -1
        self._location: ObjectLocation | None = None
        self._manifest: ContentManifest | None = None
        self._entries: dict[str, ManifestEntry] = {}
        self._trusted: set[str] = set()
        self._generation = -1
        self._names: dict[str, str] = {}
        self._used: dict[str, float] = {}
        self._locks_made = False
        self._helper: ForkHelper | None = None
        self._helper_pid = -1

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "cache_dir": self.cache_dir, "limit": self.limit}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], state["cache_dir"], state.get("limit"))  # type: ignore[misc]

    def twin(self) -> RemoteTree:
        """A tree of the same URL, cache and limit for another thread: it shares this one's
        checked manifest (immutable: not downloaded again) and nothing else."""
        other = RemoteTree(self.url, self.cache_dir, self.limit)
        if self._manifest is not None:
            other._manifest, other._entries = self._manifest, self._entries
        return other

    # ---- remote side -----------------------------------------------------------------------
    @property
    def location(self) -> ObjectLocation:
        if self._location is None or self._pid != os.getpid():
            self._location = open_location(self.url, retry=_retry_config())
            self._pid = os.getpid()
        return self._location

    def _forked_helper(self) -> ForkHelper | None:
        """The download helper, in a process forked after obstore started (else None)."""
        if not forked_after_use():
            return None
        if self._helper is None or self._helper_pid != os.getpid():
            self._helper = ForkHelper(self.url, self.cache_dir, RETRY, self.limit)
            self._helper_pid = os.getpid()
        return self._helper

    def _fail(self, key: str, exc: BaseException) -> ObjectStoreError:
        import obstore.exceptions as obe

        where = self.location.describe(key)
        if isinstance(exc, obe.NotFoundError | FileNotFoundError):
            return ObjectStoreError("no such object (or no such bucket)", url=where)
        if isinstance(exc, obe.PermissionDeniedError | obe.UnauthenticatedError):
            hint = credentials_hint(self.url) or "check the store's credentials"
            return ObjectStoreError(f"access denied ({hint})", url=where)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return ObjectStoreError(f"read failed after retries: {first[:300]}", url=where)

    @property
    def manifest(self) -> ContentManifest:
        """The remote ``content_manifest.json``, fetched once per process and checked."""
        if self._manifest is None:
            helper = self._forked_helper()
            raw = self.manifest_bytes() if helper is None else helper.manifest().encode("utf-8")
            where = Path(f"{self.url}/{CONTENT_MANIFEST_NAME}")
            self._manifest = parse_manifest(raw, where)
            self._entries = self._manifest.by_path()
        return self._manifest

    def manifest_bytes(self) -> bytes:
        """Download ``content_manifest.json`` (retried; its absence means no dataset).

        The same read as publish's and verify's
        (:func:`~dataset_devkit.integrity.bucket.objects.read_small`), with this cache's
        retry budget.
        """
        raw = read_small(self.location, CONTENT_MANIFEST_NAME, _MANIFEST_POLICY)
        if raw is None:
            raise MissingPathError(
                "no content_manifest.json here: not a published dataset "
                "(or its upload never finished)",
                path=self.url,
            )
        return raw

    def has(self, rel: str) -> bool:
        """Whether the published tree lists *rel*."""
        _ = self.manifest
        return rel in self._entries

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes *start* to *end* of *rel*, read in place (nothing cached, not verified:
        for checks that need a few bytes of a large object whose hash is checked apart)."""
        import obstore

        try:
            return bytes(obstore.get_range(self.location.store, rel, start=start, end=end))
        except Exception as exc:
            raise self._fail(rel, exc) from None

    def require_room(self, rels: Iterable[str]) -> None:
        """Refuse, in one line, a limit smaller than the largest listed file of *rels*.

        Readers call it when they open, with every file they may read: a cache that could
        never hold the file being downloaded fails at once instead of thrashing later.
        """
        if self.limit is None:
            return
        _ = self.manifest
        sizes = [(self._entries[rel].size, rel) for rel in rels if rel in self._entries]
        if not sizes:
            return
        size, rel = max(sizes)
        if size > self.limit:
            raise ConfigError(
                f"{self.url}: cache_limit {self.limit} bytes ({format_size(self.limit)}) "
                f"is smaller than {rel} ({size} bytes), the largest file a reader needs at "
                f"once; raise cache_limit to at least {size} bytes",
                key="cache_limit",
            )

    # ---- local side ------------------------------------------------------------------------
    def generation(self) -> int:
        """The cache directory's eviction count: when it changes, files may have gone."""
        return self._space.generation()

    def local_path(self, rel: str) -> Path:
        """A local, verified copy of *rel*, downloaded on first touch.

        Nothing keeps it there afterwards in a cache with a limit: open it inside
        :meth:`held` to be sure it is not evicted before it is opened.
        """
        path = self.root / rel
        generation = self.generation()
        if generation != self._generation:  # something was evicted: check files again
            self._trusted.clear()
            self._generation = generation
        if rel in self._trusted:
            return path
        with self.held([rel]):
            pass
        self._trusted.add(rel)
        return path

    @contextlib.contextmanager
    def held(self, rels: Sequence[str]) -> Iterator[list[Path]]:
        """Verified local copies of *rels*, none evicted before the block ends.

        Open (and ``mmap``) them inside the block; a mapping stays valid after it, even if
        the file is evicted later.
        """
        fds: list[int] = []
        try:
            for rel in rels:
                fds.append(self._acquire(rel))
            yield [self.root / rel for rel in rels]
        finally:
            for fd in fds:
                os.close(fd)

    def prefetch(self, rels: Sequence[str]) -> bool:
        """Fetch *rels* into the cache ahead of their use, only into room the limit has.

        Unlike :meth:`held`, which downloads a file a reader needs even when the files in
        use leave no room, a prefetch never takes the cache past its limit: it stops, and
        returns False, at the first file that does not fit (the reader that needs it later
        fetches it itself). Nothing stays held. In a process forked after obstore was used
        (where downloads go through a helper process) it fetches nothing.
        """
        for rel in rels:
            fd = self._hold(rel, within_limit=True)
            if fd is None:
                return False
            os.close(fd)
        return True

    def mark_used(self, rels: Iterable[str]) -> None:
        """Record that *rels* were just read (least-recently-used order; at most one
        ``utime`` per file per second in this process)."""
        now = time.monotonic()
        for rel in rels:
            if now - self._used.get(rel, -_USE_INTERVAL) < _USE_INTERVAL:
                continue
            self._used[rel] = now
            with contextlib.suppress(OSError):  # evicted meanwhile: nothing to record
                os.utime(self._stamp_path(rel))

    def _name(self, rel: str) -> str:
        name = self._names.get(rel)
        if name is None:
            name = self._names[rel] = object_name(rel)
        return name

    def _lock_path(self, rel: str) -> str:
        """The object lock file of *rel* (its folder made once per process)."""
        locks = self._meta / "locks"
        if not self._locks_made:
            locks.mkdir(parents=True, exist_ok=True)
            self._locks_made = True
        return f"{locks}/{self._name(rel)}"

    def _acquire(self, rel: str) -> int:
        """The object lock of *rel*, held shared over a verified copy (fetched if needed)."""
        fd = self._hold(rel, within_limit=False)
        assert fd is not None  # only a hold within the limit gives up
        return fd

    def _hold(self, rel: str, *, within_limit: bool) -> int | None:
        """:meth:`_acquire`; *within_limit*: None instead of a download past the limit."""
        path = self.root / rel
        _ = self.manifest
        entry = self._entries.get(rel)
        if entry is None:
            raise MissingPathError("not listed in the content manifest", path=f"{self.url}/{rel}")
        if self.limit is not None and entry.size > self.limit:
            self.require_room([rel])
        lock = self._lock_path(rel)
        for _attempt in range(_HOLD_ATTEMPTS):
            helper = None
            fd = os.open(lock, _LOCK_FLAGS, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)  # waits for a download in progress
                if self._stamped(path, rel, entry):
                    self.mark_used([rel])  # its last use, for eviction order
                    return fd
                helper = self._forked_helper()
                if helper is not None and within_limit:
                    os.close(fd)
                    return None
                if helper is None:
                    fcntl.flock(fd, fcntl.LOCK_EX)  # not atomic: check again
                    if not self._stamped(path, rel, entry) and not self._rehashed(path, rel, entry):
                        if self._download(path, rel, entry, fd, within_limit):
                            return fd  # held shared
                        os.close(fd)
                        return None
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # someone else made the copy: take it shared on the next turn
            if helper is not None:
                held = self._after_helper(helper, lock, path, rel, entry)
                if held is not None:
                    return held
        raise ObjectStoreError(
            f"evicted {_HOLD_ATTEMPTS} times between its download and its opening: the cache "
            f"limit ({self.limit} bytes) is too small for the processes that share "
            f"{self.cache_dir}",
            url=self.location.describe(rel),
        )

    def _after_helper(
        self, helper: ForkHelper, lock: str, path: Path, rel: str, entry: ManifestEntry
    ) -> int | None:
        """Have the helper fetch *rel* and hold it until this process holds it too (so no
        eviction falls between the two); None if the copy is not the verified one."""
        helper.fetch(rel)
        try:
            fd = os.open(lock, _LOCK_FLAGS, 0o644)
            fcntl.flock(fd, fcntl.LOCK_SH)
            if self._stamped(path, rel, entry):
                self._used.pop(rel, None)
                self.mark_used([rel])
                return fd
            os.close(fd)
            return None
        finally:
            helper.release(rel)

    def _stamp_path(self, rel: str) -> str:
        return f"{self._meta}/stamps/{self._name(rel)}.json"

    def _stamped(self, path: Path, rel: str, entry: ManifestEntry) -> bool:
        """Whether *path* is the very file that was verified (nothing changed it since).

        Plain ``os`` calls: a reader checks every file it maps, each epoch in each worker.
        """
        try:
            st = os.lstat(path)
            fd = os.open(self._stamp_path(rel), os.O_RDONLY | os.O_CLOEXEC)
            try:
                raw = os.read(fd, 4096)
            finally:
                os.close(fd)
            recorded = json.loads(raw)
        except (OSError, ValueError):
            return False
        return bool(recorded == _stamp_of(st, entry.sha256, rel))

    def _write_stamp(self, path: Path, rel: str, entry: ManifestEntry) -> None:
        st = path.lstat()
        target = Path(self._stamp_path(rel))
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(f".{os.getpid()}.part")
        temporary.write_bytes(json.dumps(_stamp_of(st, entry.sha256, rel)).encode())
        temporary.replace(target)

    def _rehashed(self, path: Path, rel: str, entry: ManifestEntry) -> bool:
        """Hash an unstamped file of the right size (e.g. after a crash before its stamp)."""
        try:
            st = path.lstat()
        except OSError:
            return False
        if st.st_size != entry.size or not path.is_file() or path.is_symlink():
            return False
        if _hash_path(path) != (entry.sha256, entry.size):
            return False
        with self._space.locked():  # counted from now on, like a download's stamp
            self._write_stamp(path, rel, entry)
        return True

    def _download(
        self, path: Path, rel: str, entry: ManifestEntry, lock_fd: int, within_limit: bool
    ) -> bool:
        """Make room, stream the object into a part file, check it, and rename it into place.

        *lock_fd* holds the object exclusively; it is turned shared while ``cache.lock`` is
        held after the rename, so no eviction can slip in before the caller opens the file.
        With *within_limit*, False (nothing downloaded) when the limit has no room for it.
        """
        temporary = self._meta / "tmp" / f"{self._name(rel)}.{entry.size}.part"
        temporary.parent.mkdir(parents=True, exist_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_source(self.cache_dir, self.key, self.url)
        with self._space.locked() as space_fd:
            Path(self._stamp_path(rel)).unlink(missing_ok=True)  # the copy failed its check
            path.unlink(missing_ok=True)  # (a mapping of it stays valid)
            if self.limit is not None:
                if within_limit:
                    if not self._space.room_within(entry.size, self.limit, space_fd):
                        return False
                else:
                    self._space.make_room(entry.size, self.limit, space_fd)
            # Counted at its full size from now on, so two downloads never share the room.
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC))
        try:
            self._fetch_into(temporary, rel, entry)
            with self._space.locked():
                temporary.chmod(0o444)
                temporary.replace(path)
                self._write_stamp(path, rel, entry)
                fcntl.flock(lock_fd, fcntl.LOCK_SH)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        return True

    def _fetch_into(self, temporary: Path, rel: str, entry: ManifestEntry) -> None:
        """Stream *rel* into *temporary* until it matches the manifest (retried)."""
        import obstore

        where = self.location.describe(rel)
        problem = ""
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(0.05 * 2**attempt)
            digest = hashlib.sha256()
            size = 0
            # Only the lock holder writes this name, so truncating a crashed run's leftover
            # is safe; it is never the final name.
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                try:
                    result = obstore.get(self.location.store, rel)
                    for piece in result.stream(min_chunk_size=_CHUNK):
                        view = memoryview(piece)
                        digest.update(view)
                        size += len(view)
                        while view:
                            view = view[os.write(fd, view) :]
                except Exception as exc:
                    if isinstance(exc, FileNotFoundError) or attempt == ATTEMPTS - 1:
                        raise self._fail(rel, exc) from None
                    problem = str(exc)
                    continue
                if (digest.hexdigest(), size) != (entry.sha256, entry.size):
                    problem = (
                        f"expected {entry.size} bytes with SHA-256 {entry.sha256}, "
                        f"received {size} bytes with SHA-256 {digest.hexdigest()}"
                    )
                    continue
                os.fsync(fd)
            finally:
                os.close(fd)
            return
        raise IntegrityError(f"{where}: does not match the content manifest: {problem}")
