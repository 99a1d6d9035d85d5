"""Deterministic per-epoch shuffling across ranks, with a position a restarted job resumes.

Every rank computes the same global order for an epoch from ``(seed, epoch)`` alone (no
communication) and takes every ``world_size``-th item starting at its rank, so the ranks'
shares are disjoint and together hold every sample exactly once; shares differ by at most
one sample when the length does not divide (no sample is repeated to even them out).

The order is a sort by a SplitMix64 hash of ``(seed, epoch, index)``, computed here rather
than drawn from numpy's generators, whose streams numpy does not promise to keep across
versions: a job resumed after an upgrade must continue the very same order.

A DataLoader's sampler runs ahead of training (workers prefetch batches), so the sampler
cannot know by itself what was trained on. The loop says so with :meth:`advance`; then
:meth:`state_dict` is exactly the samples consumed, and :meth:`load_state_dict` makes the
next iteration start right after them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError

__all__ = ["VinOfflineDistributedSampler", "epoch_order"]

_MASK = (1 << 64) - 1


def _mix(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser, elementwise (uint64 arithmetic wraps, as intended)."""
    z = values + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def epoch_order(num_samples: int, seed: int, epoch: int) -> npt.NDArray[np.int64]:
    """The global order of positions ``0..num_samples-1`` in *epoch* (same on every rank)."""
    with np.errstate(over="ignore"):
        key = _mix(np.array([(seed * 0x100000001B3 + epoch) & _MASK], dtype=np.uint64))[0]
        hashed = _mix(np.arange(num_samples, dtype=np.uint64) ^ key)
    return np.argsort(hashed, kind="stable").astype(np.int64)


def _int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < low:
        raise ConfigError(f"{name} must be an int >= {low}, found {value!r}", key=name)
    return int(value)


class VinOfflineDistributedSampler:
    """Positions of one rank's share of each epoch, shuffled deterministically, resumable.

    Parameters
    ----------
    num_samples
        Length of the dataset (e.g. ``len(reader)`` of a split).
    rank, world_size
        This process's rank and the number of ranks.
    seed
        The same on every rank; the order of every epoch follows from it.
    shuffle
        False keeps positions in order (still split across ranks).

    Use it as a torch DataLoader's ``sampler``; call :meth:`set_epoch` before each epoch
    and :meth:`advance` with the size of each batch the loop has trained on.
    """

    def __init__(
        self,
        num_samples: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        shuffle: bool = True,
    ) -> None:
        self.num_samples = _int(num_samples, "num_samples", 0)
        self.world_size = _int(world_size, "world_size", 1)
        self.rank = _int(rank, "rank", 0)
        if self.rank >= self.world_size:
            raise ConfigError(
                f"rank must be < world_size ({self.world_size}), found {rank}", key="rank"
            )
        self.seed = _int(seed, "seed", 0)
        self.shuffle = bool(shuffle)
        self.epoch = 0
        self._start = 0  # where the next iteration begins in this rank's share
        self._consumed = 0  # how much of this epoch's share the loop has trained on

    def indices(self, epoch: int | None = None) -> npt.NDArray[np.int64]:
        """This rank's whole share of *epoch* (default: the current one), in order."""
        epoch = self.epoch if epoch is None else _int(epoch, "epoch", 0)
        if self.shuffle:
            order = epoch_order(self.num_samples, self.seed, epoch)
        else:
            order = np.arange(self.num_samples, dtype=np.int64)
        return order[self.rank :: self.world_size]

    def share(self) -> int:
        """Samples in this rank's share of one epoch."""
        return len(range(self.rank, self.num_samples, self.world_size))

    def set_epoch(self, epoch: int) -> None:
        """Start *epoch* from its beginning, unless a loaded state resumes this very epoch."""
        epoch = _int(epoch, "epoch", 0)
        if epoch != self.epoch:
            self.epoch, self._start, self._consumed = epoch, 0, 0

    def __len__(self) -> int:
        return self.share() - self._start

    def __iter__(self) -> Iterator[int]:
        start = self._start
        self._start = 0  # a later pass over the same epoch starts from the beginning
        self._consumed = start
        return iter(self.indices()[start:].tolist())

    def advance(self, count: int) -> None:
        """Record that the loop has trained on *count* more samples of this epoch."""
        count = _int(count, "count", 0)
        if self._consumed + count > self.share():
            raise ConfigError(
                f"advance({count}) goes past this rank's {self.share()} samples of epoch "
                f"{self.epoch} ({self._consumed} already consumed)",
                key="count",
            )
        self._consumed += count

    def state_dict(self) -> dict[str, int]:
        """Where training stands: the epoch and how many of its samples were consumed."""
        return {
            "num_samples": self.num_samples,
            "world_size": self.world_size,
            "rank": self.rank,
            "seed": self.seed,
            "shuffle": int(self.shuffle),
            "epoch": self.epoch,
            "position": self._consumed,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume: the next iteration starts right after the consumed samples.

        The state must come from a sampler of the same length, ranks, rank, seed and
        shuffling: anything else would silently repeat or skip samples, so it is refused.
        """
        if not isinstance(state, Mapping):
            raise ConfigError(f"expected a sampler state mapping, found {state!r}", key="state")
        mine = self.state_dict()
        for key in ("num_samples", "world_size", "rank", "seed", "shuffle"):
            if state.get(key) != mine[key]:
                raise ConfigError(
                    f"sampler state has {key}={state.get(key)!r}, this sampler has "
                    f"{mine[key]!r}: resuming would repeat or skip samples",
                    key=key,
                )
        epoch = _int(state.get("epoch"), "epoch", 0)
        position = _int(state.get("position"), "position", 0)
        self.epoch = epoch
        if position > self.share():
            raise ConfigError(
                f"sampler state position {position} is past this rank's {self.share()} samples",
                key="position",
            )
        self._start = self._consumed = position
