"""Fetch the shards a rank will read next into the cache, ahead of the DataLoader's workers.

A DataLoader worker fetches a missing file when a batch needs it, one file at a time, so
the first epoch of a store in a bucket waits on every download in turn. The sampler knows
the whole order of its rank's share, so its iterator starts a :class:`ShardPrefetcher`
in the main process: a few threads that download, in order of first use, the files of the
next shards (for the blocks the dataset reads) while the workers read the current ones.
It keeps at most ``ahead`` shards beyond the one being read, so that with a size-limited
cache it never evicts what is still to be read: ``ahead`` is the room the cache has left
beyond the shards a block-shuffled order reads at once.

It starts when the loader draws the first index (after the DataLoader has forked its
workers; ``StatefulDataLoader`` creates the sampler's iterator before that) and stops
when the share is done or the next iteration begins. A fork must never copy a thread in
the middle of a download (the child would inherit its locks, the import lock among them,
and hang): before any ``os.fork`` every running prefetcher is stopped and waited for.
Prefetches never take the cache past its limit (:meth:`RemoteTree.prefetch
<dataset_devkit.integrity.bucket.cache.RemoteTree.prefetch>`): a shard that does not fit
now is skipped, and the worker that needs it fetches it in turn. So the cache's bound
stays the limit plus one file in flight per worker process. A failed prefetch is ignored:
the worker that needs the file fetches it itself and reports what is wrong.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import DevkitError

if TYPE_CHECKING:
    from dataset_devkit.integrity.bucket.cache import RemoteTree

__all__ = ["PREFETCH_THREADS", "ShardFiles", "ShardPrefetcher", "prefetch_depth"]

#: Downloads a prefetcher runs at once.
PREFETCH_THREADS = 4
_POLL = 0.02  # seconds between looks at how far the loader has drawn
_RUNNING: weakref.WeakSet[ShardPrefetcher] = weakref.WeakSet()


def _before_fork() -> None:
    """Stop every running prefetcher, and wait for it, before this process forks."""
    for prefetcher in list(_RUNNING):
        prefetcher.stop()
        prefetcher.join()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork)


@dataclass(frozen=True, slots=True)
class ShardFiles:
    """Where each shard's files are: a dataset's answer to "what does shard k need?".

    Parameters
    ----------
    trees
        The remote tree of each stream (None for a local store: nothing to fetch).
    files
        Global shard number -> (stream, relative paths of its files for the blocks read).
    shard_bytes
        Bytes of the largest shard's files (for how many fit a cache).
    """

    trees: Sequence[RemoteTree | None]
    files: Callable[[int], tuple[int, tuple[str, ...]]]
    shard_bytes: int

    @property
    def remote(self) -> bool:
        """Whether any stream is read from object storage."""
        return any(tree is not None for tree in self.trees)


def prefetch_depth(files: ShardFiles, shuffle: str, window: int) -> int:
    """How many shards ahead of the one being read to keep fetched (0: do not prefetch).

    With a cache limit: the shards the cache holds, less the ``window + 2`` a block order
    reads at once (a full shuffle reads every shard all the time: nothing to win).
    Without one: twice the window and a few more.
    """
    limits = [t.limit for t in files.trees if t is not None and t.limit is not None]
    reading = (window if shuffle == "block" else 1) + 2
    if not limits:
        return 2 * reading
    if shuffle == "full":
        return 0
    held = min(limits) // max(1, files.shard_bytes)
    return max(0, min(2 * reading, int(held) - reading))


class ShardPrefetcher:
    """Threads that fetch the next shards of a share in order of first use (module doc).

    Parameters
    ----------
    files
        Where each shard's files are.
    shards
        The shard of each item of the share, in the order the loader draws them.
    cursor
        How many items of the share the loader has drawn so far.
    ahead
        Shards to keep fetched beyond the one at the cursor.
    """

    def __init__(
        self,
        files: ShardFiles,
        shards: npt.NDArray[np.int64],
        cursor: Callable[[], int],
        ahead: int,
        threads: int = PREFETCH_THREADS,
    ) -> None:
        self._files = files
        unique, first = np.unique(shards, return_index=True)
        placed = np.argsort(first, kind="stable")
        self._order: list[int] = unique[placed].tolist()
        self._first = first[placed]
        self._cursor = cursor
        self._ahead = ahead
        self._threads = threads
        self._stop = threading.Event()
        # One tree per stream for this thread's downloads: of the readers' state only the
        # checked manifest is shared (a pass does not download it again).
        self._trees = [None if t is None else t.twin() for t in files.trees]
        self._thread = threading.Thread(target=self._run, name="vin-prefetch", daemon=True)
        self.fetched = 0
        self.skipped = 0

    def start(self) -> ShardPrefetcher:
        """Start fetching; returns itself."""
        try:
            for tree in self._trees:
                if tree is not None:
                    _ = tree.manifest  # once, before threads share the tree
        except DevkitError:
            return self  # nothing is fetched ahead: the workers fetch what they read
        _RUNNING.add(self)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the downloads under way (nothing half-written stays behind)."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread (and its downloads under way) to end."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _fetch(self, shard: int) -> None:
        if self._stop.is_set():
            return
        stream, rels = self._files.files(shard)
        tree = self._trees[stream]
        if tree is None:
            return
        try:
            fitted = tree.prefetch(rels)
        except DevkitError:
            return  # the worker that needs it fetches it and says what is wrong
        if fitted:
            self.fetched += 1
        else:
            self.skipped += 1  # no room within the limit: the worker fetches it in turn

    def _run(self) -> None:
        submitted = 0
        try:
            with ThreadPoolExecutor(self._threads, thread_name_prefix="vin-prefetch") as pool:
                while submitted < len(self._order) and not self._stop.is_set():
                    reading = int(np.searchsorted(self._first, self._cursor(), side="right"))
                    target = min(len(self._order), max(reading, 1) + self._ahead)
                    while submitted < target:
                        pool.submit(self._fetch, self._order[submitted])
                        submitted += 1
                    self._stop.wait(_POLL)
        finally:
            _RUNNING.discard(self)
