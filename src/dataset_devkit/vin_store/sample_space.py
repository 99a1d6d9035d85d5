"""What a sampler draws an epoch from: the positions of one or more stores, by shard.

A *sample space* numbers every sample a dataset can read ``0..num_positions-1`` (the
positions of one store's split, or of several stores one after another), knows the shard
of each (the files a read of it fetches), and how many samples each store (*stream*)
contributes to an epoch. An epoch is then a list of positions: each stream's ``choose``
samples, as whole passes over the stream plus, for what remains, a subset drawn afresh
each epoch from ``(seed, epoch)`` (MosaicML Streaming's ``Stream`` semantics). The sampler
shuffles that list (see :mod:`~dataset_devkit.vin_store.shuffle`) and splits it over ranks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError
from dataset_devkit.vin_store.shuffle import epoch_key, mix64

__all__ = ["SampleSpace"]

_SUBSET_SALT = 3  # the epoch keys of subsets, apart from those of the shuffles


@dataclass(frozen=True, eq=False)
class SampleSpace:
    """The positions a dataset reads, their shards, and each stream's samples per epoch.

    Parameters
    ----------
    shard_of
        The shard of each position (numbers unique across streams).
    stream_starts
        Where each stream's positions begin, and the end: ``len(streams) + 1`` offsets.
    choose
        Samples each stream contributes to an epoch (its size: every sample once).
    """

    shard_of: npt.NDArray[np.int64]
    stream_starts: tuple[int, ...]
    choose: tuple[int, ...]
    _fingerprint: list[str] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if len(self.stream_starts) != len(self.choose) + 1 or self.stream_starts[0] != 0:
            raise ConfigError(
                "a sample space needs one start per stream and the end", key="streams"
            )
        if self.stream_starts[-1] != self.shard_of.shape[0]:
            raise ConfigError("stream offsets do not cover every position", key="streams")
        for k, count in enumerate(self.choose):
            if count < 0 or (count and self.stream_starts[k + 1] == self.stream_starts[k]):
                raise ConfigError(
                    f"stream {k} cannot give {count} samples: it has none", key="choose"
                )

    @classmethod
    def single(cls, shard_of: npt.NDArray[np.int64]) -> SampleSpace:
        """One store, every sample once per epoch."""
        shard_of = np.ascontiguousarray(shard_of, dtype=np.int64)
        return cls(shard_of, (0, int(shard_of.shape[0])), (int(shard_of.shape[0]),))

    @classmethod
    def uniform(cls, num_samples: int) -> SampleSpace:
        """A length alone: positions with no shard known (one shard holds them all)."""
        return cls.single(np.zeros(num_samples, dtype=np.int64))

    @property
    def num_positions(self) -> int:
        """Positions a read may name."""
        return int(self.shard_of.shape[0])

    @property
    def epoch_length(self) -> int:
        """Samples in one epoch (repeats counted)."""
        return sum(self.choose)

    def fingerprint(self) -> str:
        """A digest of the layout (streams, sizes, shards, samples per epoch): a state saved
        against another layout would repeat or skip samples, so it is refused."""
        if not self._fingerprint:
            digest = hashlib.sha256()
            digest.update(np.asarray(self.stream_starts, dtype="<i8").tobytes())
            digest.update(np.asarray(self.choose, dtype="<i8").tobytes())
            digest.update(np.ascontiguousarray(self.shard_of, dtype="<i8").tobytes())
            self._fingerprint.append(digest.hexdigest()[:32])
        return self._fingerprint[0]

    def epoch_positions(self, seed: int, epoch: int) -> npt.NDArray[np.int64]:
        """The epoch's samples as positions, stream by stream, in position order."""
        sizes = np.diff(self.stream_starts)
        if all(int(n) == k for n, k in zip(sizes, self.choose, strict=True)):
            return np.arange(self.num_positions, dtype=np.int64)  # every sample once
        parts = []
        for stream, (start, count) in enumerate(zip(self.stream_starts, self.choose, strict=False)):
            size = int(sizes[stream])
            if not count:
                continue
            whole, rest = divmod(count, size)
            positions = np.arange(start, start + size, dtype=np.int64)
            parts.extend([positions] * whole)
            if rest:
                key = epoch_key(seed, epoch, _SUBSET_SALT + stream)
                with np.errstate(over="ignore"):
                    hashed = mix64(np.arange(size, dtype=np.uint64) ^ key)
                chosen = np.sort(np.argpartition(hashed, rest - 1)[:rest]) if rest < size else None
                parts.append(positions if chosen is None else positions[chosen])
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
