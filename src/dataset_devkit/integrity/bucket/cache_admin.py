"""``cache ls`` and ``cache prune``: what a cache directory holds, and trimming it by hand.

Both read the books every reader keeps (:mod:`~dataset_devkit.integrity.bucket.cache_space`)
under the cache's lock, so they are safe while jobs read through the cache: a prune
evicts exactly as a download making room would (least recently used first, never a file
a process is opening).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.errors import ConfigError, MissingPathError
from dataset_devkit.integrity.bucket.cache_space import (
    LOCK_NAME,
    CacheSpace,
    CacheUsage,
    read_source,
)
from dataset_devkit.integrity.safefs import path_argument

__all__ = ["CacheListing", "CachedTree", "PruneResult", "list_cache", "prune_cache"]


@dataclass(frozen=True, slots=True)
class CachedTree:
    """One tree's mirror in a cache: its URL, verified files and bytes, last use."""

    key: str
    url: str | None
    files: int
    bytes: int
    last_used_ns: int | None


@dataclass(frozen=True, slots=True)
class CacheListing:
    """Every tree a cache directory holds, and the bytes of downloads in flight."""

    cache_dir: Path
    trees: tuple[CachedTree, ...]
    in_flight_bytes: int

    @property
    def total_bytes(self) -> int:
        """Verified bytes of every tree plus the downloads in flight."""
        return sum(tree.bytes for tree in self.trees) + self.in_flight_bytes


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What ``cache prune`` did."""

    evicted_files: int
    evicted_bytes: int
    remaining_bytes: int


def _space(cache_dir: object) -> CacheSpace:
    root = path_argument(cache_dir, "cache_dir")
    if not root.is_dir():
        raise MissingPathError("no such cache directory", path=root)
    has_trees = any(p.is_dir() for p in root.glob("*/stamps"))
    if not (root / LOCK_NAME).is_file() and not has_trees:
        raise ConfigError(
            f"{root}: not a dataset-devkit cache directory (no {LOCK_NAME}, no cached trees)",
            key="cache_dir",
        )
    return CacheSpace(root)


def _listing(space: CacheSpace, usage: CacheUsage) -> CacheListing:
    keys = sorted({f.key for f in usage.files})
    trees = []
    for key in keys:
        files = [f for f in usage.files if f.key == key]
        trees.append(
            CachedTree(
                key=key,
                url=read_source(space.cache_dir, key),
                files=len(files),
                bytes=sum(f.size for f in files),
                last_used_ns=max(f.last_used_ns for f in files),
            )
        )
    return CacheListing(space.cache_dir, tuple(trees), usage.in_flight_bytes)


def list_cache(cache_dir: Path | str) -> CacheListing:
    """The trees a cache directory holds, with their files and bytes."""
    space = _space(cache_dir)
    with space.locked():
        return _listing(space, space.usage())


def prune_cache(cache_dir: Path | str, max_bytes: int = 0) -> PruneResult:
    """Evict least-recently-used files until the cache holds at most *max_bytes*.

    Files a process is opening right now are kept (the result's ``remaining_bytes`` then
    stays above *max_bytes*); ``max_bytes=0`` empties what can be emptied.
    """
    space = _space(cache_dir)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ConfigError(f"max_bytes must be an int >= 0, found {max_bytes!r}", key="max_bytes")
    with space.locked() as fd:
        evicted = space.make_room(0, max_bytes, fd)
        remaining = space.usage().total_bytes
    return PruneResult(len(evicted), sum(f.size for f in evicted), remaining)
