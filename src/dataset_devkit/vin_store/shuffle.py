"""The order of an epoch's samples: a full shuffle, or a shard-aware block shuffle.

Both are pure functions of ``(seed, epoch)`` and the samples' shards, computed from a
SplitMix64 hash rather than numpy's generators, whose streams numpy does not promise to keep
across versions: a job resumed after an upgrade must continue the very same order.

- **Full** (:func:`full_order`): a uniform permutation. Reading it through a cache smaller
  than the dataset fetches nearly a shard per sample once the cache is full.
- **Block** (:func:`block_order`, MosaicML Streaming's ``py1e`` idea): the shards are
  permuted, laid out one after another, and each shard's samples are spread uniformly over
  a band of ``window`` shards' worth of samples centred on the shard's place (cut at the
  epoch's ends); sorting by the spread positions gives the order. Neighbours then come
  from about ``window`` different shards, any stretch of the order touches about
  ``window + 1`` shards, and each shard is needed during one stretch of the epoch only:
  with a cache of ``window + 2`` shards, an epoch downloads each shard about once. Bands
  overlap (there are no window boundaries), so downloads are spread evenly instead of
  coming in bursts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Final

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError

__all__ = [
    "DEFAULT_WINDOW",
    "SHUFFLES",
    "block_order",
    "full_order",
    "lru_loads",
    "mix64",
    "order_of",
]

#: Shards whose samples are shuffled together by the block shuffle, unless told otherwise.
DEFAULT_WINDOW: Final = 8
#: The orders a sampler offers: ``none`` keeps positions in order.
SHUFFLES: Final = ("full", "block", "none")
_MASK = (1 << 64) - 1


def mix64(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser, elementwise (uint64 arithmetic wraps, as intended)."""
    with np.errstate(over="ignore"):
        z = values + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def epoch_key(seed: int, epoch: int, salt: int = 0) -> np.uint64:
    """One 64-bit key per ``(seed, epoch, salt)``: the salt separates independent draws."""
    base = (seed * 0x100000001B3 + epoch) & _MASK
    first = mix64(np.array([base], dtype=np.uint64))
    return np.uint64(mix64(first ^ np.uint64(salt))[0]) if salt else np.uint64(first[0])


def full_order(num_samples: int, seed: int, epoch: int) -> npt.NDArray[np.int64]:
    """A uniform permutation of ``0..num_samples-1`` for *epoch* (same on every rank)."""
    key = epoch_key(seed, epoch)
    with np.errstate(over="ignore"):
        hashed = mix64(np.arange(num_samples, dtype=np.uint64) ^ key)
    return np.argsort(hashed, kind="stable").astype(np.int64)


def _uniform(count: int, key: np.uint64) -> npt.NDArray[np.float64]:
    """*count* deterministic floats in ``[0, 1)`` (53 bits of a hash each)."""
    with np.errstate(over="ignore"):
        hashed = mix64(np.arange(count, dtype=np.uint64) ^ key)
    return (hashed >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def block_order(
    shard_of: npt.NDArray[np.int64], seed: int, epoch: int, window: int = DEFAULT_WINDOW
) -> npt.NDArray[np.int64]:
    """A shard-aware permutation of the slots ``0..len(shard_of)-1`` (see the module doc).

    Parameters
    ----------
    shard_of
        The shard of each slot (any integers; equal means the same shard, and so the same
        files to fetch).
    window
        How many shards' samples are shuffled together; 1 reads the shards one after
        another, each in its own random order.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(f"window must be an int >= 1 (shards), found {window!r}", key="window")
    count = shard_of.shape[0]
    if count == 0:
        return np.empty(0, dtype=np.int64)
    shards, inverse, sizes = np.unique(shard_of, return_inverse=True, return_counts=True)
    with np.errstate(over="ignore"):
        ranked = mix64(shards.astype(np.uint64) ^ epoch_key(seed, epoch, 1))
    placed = np.argsort(ranked, kind="stable")  # the shards in this epoch's order
    starts = np.empty(shards.shape[0], dtype=np.float64)
    starts[placed] = np.concatenate(([0], np.cumsum(sizes[placed])[:-1]))
    centres = starts + sizes / 2.0
    band = max(1.0, window * count / shards.shape[0])  # window shards of the mean size
    halves = np.maximum(sizes.astype(np.float64), band) / 2.0
    # Each band is kept inside the epoch, so the first and last shards mix with their
    # neighbours too instead of spilling past the ends alone.
    low = np.maximum(centres - halves, 0.0)
    high = np.minimum(centres + halves, float(count))
    where = _uniform(count, epoch_key(seed, epoch, 2))
    spread = low[inverse] + where * (high - low)[inverse]
    return np.argsort(spread, kind="stable").astype(np.int64)


def order_of(
    shuffle: str, shard_of: npt.NDArray[np.int64], seed: int, epoch: int, window: int
) -> npt.NDArray[np.int64]:
    """The epoch's permutation of slots for a *shuffle* of :data:`SHUFFLES`."""
    if shuffle == "full":
        return full_order(shard_of.shape[0], seed, epoch)
    if shuffle == "block":
        return block_order(shard_of, seed, epoch, window)
    return np.arange(shard_of.shape[0], dtype=np.int64)


def lru_loads(shards: Iterable[int], capacity: int) -> int:
    """How many shard fetches reading *shards* in this order costs through a cache that
    keeps the *capacity* shards used most recently (whole shards, as the cache keeps
    whole files): a quick way to choose ``window`` for a cache size before a run."""
    cache: OrderedDict[int, None] = OrderedDict()
    loads = 0
    for shard in shards:
        if shard in cache:
            cache.move_to_end(shard)
            continue
        loads += 1
        cache[shard] = None
        if len(cache) > capacity:
            cache.popitem(last=False)
    return loads
