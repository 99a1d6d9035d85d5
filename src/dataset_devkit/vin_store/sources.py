"""Partitioned sources: samples produced by the worker that writes their shard.

A source is a small picklable description — a module-level function plus the range of
items it covers — instead of the samples themselves. The driver never runs it; it only
plans which rows of which source go into which shard. A worker calls
``produce(start, stop)`` for its part of a source and writes what comes back, so expensive
samples (rendered depth, backbone features) are made where the shard is written, on any
executor: a process pool, a Dask cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dataset_devkit.errors import ConfigError

__all__ = ["VinOfflineShardSource", "plan_pieces"]


@dataclass(frozen=True, slots=True)
class VinOfflineShardSource:
    """Items ``[start, stop)`` of a numbered sequence, one sample per item.

    Parameters
    ----------
    produce
        ``produce(a, b)`` returns the samples of items ``a .. b-1`` (exactly ``b - a``
        :class:`~dataset_devkit.vin_store.VinOfflineSample`, in order) for any
        ``start <= a < b <= stop``, the same on every call. It must pickle: a module-level
        function, or a :func:`functools.partial` of one.
    start, stop
        The items this source covers.

    Shards hold a fixed number of rows, so one shard may take the end of one source and
    the start of the next: the layout, and the bytes, depend only on the samples, never on
    how they were partitioned into sources.
    """

    produce: Callable[[int, int], Iterable[Any]]
    start: int
    stop: int

    def __post_init__(self) -> None:
        for name in ("start", "stop"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be an int >= 0, found {value!r}", key=name)
        if self.stop <= self.start:
            raise ConfigError(
                f"a source covers at least one item: start {self.start} < stop {self.stop}",
                key="stop",
            )
        if not callable(self.produce):
            raise ConfigError(
                f"produce must be callable, found {type(self.produce).__name__}", key="produce"
            )

    def __len__(self) -> int:
        return self.stop - self.start


#: One part of a shard: (source number, first item, end item).
Piece = tuple[int, int, int]


def plan_pieces(sources: Sequence[VinOfflineShardSource], rows_per_shard: int) -> list[list[Piece]]:
    """Cut the concatenated sources into shards of *rows_per_shard* rows (the last shorter).

    Returns the pieces of each shard, in order; a piece never spans two sources.
    """
    shards: list[list[Piece]] = [[]]
    room = rows_per_shard
    for number, source in enumerate(sources):
        item = source.start
        while item < source.stop:
            if room == 0:
                shards.append([])
                room = rows_per_shard
            take = min(room, source.stop - item)
            shards[-1].append((number, item, item + take))
            item += take
            room -= take
    return shards
