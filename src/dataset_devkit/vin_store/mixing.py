"""Several stores read as one dataset, each weighted: MosaicML Streaming's ``Stream`` semantics.

A :class:`VinOfflineStream` names a store (local, or a URL with its cache) and at most one
of three weights:

- ``proportion``: the stream's share of the epoch, relative to the others' (all streams
  then give one; the epoch holds ``epoch_size`` samples, or as many as the stores hold);
- ``repeat``: a multiplier of the stream's size (``0.5`` half of it, ``2.5`` two passes and
  a half);
- ``choose``: exactly this many samples per epoch.

With none, a stream gives each of its samples once. ``proportion`` (relative) and
``repeat``/``choose`` (absolute) are not mixed in one dataset. A stream asked for ``k``
samples of its ``n`` gives ``k // n`` whole passes and, for the rest, a subset drawn afresh
each epoch from ``(seed, epoch)``. Relative shares are rounded down and the samples left
over go to the streams with the largest remainders (ties to the first), a deterministic
rule where MosaicML Streaming draws them at random.

:class:`VinOfflineMix` numbers the positions of all streams one after another (stream 0's
split first) and reads any of them; one
:class:`~dataset_devkit.vin_store.VinOfflineDistributedSampler` over it shuffles the
whole epoch and keeps one state for every stream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError
from dataset_devkit.objectstore import is_url
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.errors import PositionOutOfRangeError, SampleIndexNotFoundError
from dataset_devkit.vin_store.prefetch import ShardFiles
from dataset_devkit.vin_store.reader import VinOfflineStoreReader
from dataset_devkit.vin_store.sample_space import SampleSpace
from dataset_devkit.vin_store.spec import Split, VinOfflineBlockSpec

__all__ = ["VinOfflineMix", "VinOfflineStream", "stream_choose"]


@dataclass(frozen=True, slots=True)
class VinOfflineStream:
    """One store of a mix, and how much of it an epoch holds.

    Parameters
    ----------
    store
        A store's config, folder or URL (a URL takes ``cache_dir`` and ``cache_limit``).
    proportion, repeat, choose
        At most one: see the module docstring.
    split
        The split read when *store* is a folder or URL (a config says its own).
    """

    store: VinOfflineStoreConfig | Path | str
    proportion: float | None = None
    repeat: float | None = None
    choose: int | None = None
    split: Split = "all"
    cache_dir: Path | str | None = None
    cache_limit: int | str | None = None

    def __post_init__(self) -> None:
        given = [n for n in ("proportion", "repeat", "choose") if getattr(self, n) is not None]
        if len(given) > 1:
            raise ConfigError(
                f"give at most one of proportion, repeat and choose per stream, found "
                f"{', '.join(given)}",
                key=given[1],
            )
        for name in ("proportion", "repeat"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ConfigError(f"{name} must be a number >= 0, found {value!r}", key=name)
        if self.choose is not None and (
            isinstance(self.choose, bool) or not isinstance(self.choose, int) or self.choose < 0
        ):
            raise ConfigError(f"choose must be an int >= 0, found {self.choose!r}", key="choose")

    def config(self) -> VinOfflineStoreConfig:
        """The store's config."""
        if isinstance(self.store, VinOfflineStoreConfig):
            return self.store
        if isinstance(self.store, str) and is_url(self.store):
            return VinOfflineStoreConfig.from_url(
                self.store, cache_dir=self.cache_dir, split=self.split, cache_limit=self.cache_limit
            )
        return VinOfflineStoreConfig(Path(self.store), self.split)


def _largest_remainders(total: int, weights: npt.NDArray[np.float64]) -> list[int]:
    exact = total * weights / weights.sum()
    counts = np.floor(exact).astype(np.int64)
    short = total - int(counts.sum())
    order = np.argsort(-(exact - counts), kind="stable")  # ties to the first stream
    counts[order[:short]] += 1
    return [int(c) for c in counts]


def stream_choose(
    streams: Sequence[VinOfflineStream], sizes: Sequence[int], epoch_size: int | None = None
) -> tuple[int, ...]:
    """Samples each stream gives per epoch (see the module docstring)."""
    if epoch_size is not None and (
        isinstance(epoch_size, bool) or not isinstance(epoch_size, int) or epoch_size < 0
    ):
        raise ConfigError(f"epoch_size must be an int >= 0, found {epoch_size!r}", key="epoch_size")
    relative = [s.proportion is not None for s in streams]
    absolute = [s.repeat is not None or s.choose is not None for s in streams]
    if any(relative):
        if not all(relative):
            raise ConfigError(
                "proportion is relative: give it for every stream (or use repeat and choose)",
                key="proportion",
            )
        weights = np.array([float(s.proportion or 0.0) for s in streams])
        if not weights.sum() > 0:
            raise ConfigError("the proportions add up to 0", key="proportion")
        total = sum(sizes) if epoch_size is None else epoch_size
        return tuple(_largest_remainders(total, weights))
    if epoch_size is not None:
        if any(absolute):
            raise ConfigError(
                "epoch_size goes with proportions; repeat and choose already fix the epoch",
                key="epoch_size",
            )
        return tuple(_largest_remainders(epoch_size, np.asarray(sizes, dtype=np.float64)))
    counts = []
    for stream, size in zip(streams, sizes, strict=True):
        if stream.repeat is not None:
            counts.append(int(stream.repeat * size))
        elif stream.choose is not None:
            counts.append(stream.choose)
        else:
            counts.append(size)
    return tuple(counts)


class VinOfflineMix:
    """Several stores as one dataset of positions (stream 0's first), each weighted.

    Parameters
    ----------
    streams
        The stores and their weights.
    epoch_size
        With proportions: samples per epoch (default: as many as the stores hold).

    It reads like a :class:`VinOfflineStoreReader` (``read_position``, ``read_positions``,
    ``block_specs``, ``len``), so the torch datasets take it in place of a store, and a
    :class:`~dataset_devkit.vin_store.VinOfflineDistributedSampler` over it draws the
    weighted epochs. Pickling sends the streams only; each process opens its readers.
    """

    def __init__(
        self, streams: Sequence[VinOfflineStream], *, epoch_size: int | None = None
    ) -> None:
        streams = tuple(streams)
        if not streams or not all(isinstance(s, VinOfflineStream) for s in streams):
            raise ConfigError(
                f"expected one or more VinOfflineStream, found {streams!r}", key="streams"
            )
        self.streams = streams
        self.epoch_size = epoch_size
        self.readers = [VinOfflineStoreReader(s.config()) for s in streams]
        self._starts: npt.NDArray[np.int64] | None = None
        self._space: SampleSpace | None = None
        self._shard_offsets: list[int] = []

    def __getstate__(self) -> dict[str, Any]:
        return {"streams": self.streams, "epoch_size": self.epoch_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["streams"], epoch_size=state["epoch_size"])  # type: ignore[misc]

    # ---- layout --------------------------------------------------------------------------
    @property
    def starts(self) -> npt.NDArray[np.int64]:
        """Where each stream's positions begin, and the end."""
        if self._starts is None:
            sizes = [len(reader) for reader in self.readers]
            self._starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        return self._starts

    def __len__(self) -> int:
        return int(self.starts[-1])

    def __repr__(self) -> str:
        return f"VinOfflineMix({self._repr_args()})"

    def _repr_args(self) -> str:
        """The stores (as their readers name them) and the epoch size, for reprs."""
        stores = ", ".join(reader._repr_args() for reader in self.readers)
        size = "" if self.epoch_size is None else f", epoch_size={self.epoch_size}"
        return f"[{stores}]{size}"

    def sample_space(self) -> SampleSpace:
        """Every stream's positions and shards (shard numbers apart per stream), and the
        samples each gives per epoch."""
        if self._space is None:
            shards = []
            offset = 0
            self._shard_offsets = []
            for reader in self.readers:
                own = reader.sample_space().shard_of
                self._shard_offsets.append(offset)
                shards.append(own + offset)
                offset += len(reader.manifest.shards)
            sizes = [int(n) for n in np.diff(self.starts)]
            choose = stream_choose(self.streams, sizes, self.epoch_size)
            shard_of = np.concatenate(shards) if shards else np.empty(0, dtype=np.int64)
            self._space = SampleSpace(shard_of, tuple(int(s) for s in self.starts), choose)
        return self._space

    def shard_files(self, blocks: Sequence[str] | None = None) -> ShardFiles:
        """Each shard's files for *blocks*, shards numbered as :meth:`sample_space` does."""
        names = self._names(blocks)
        parts = [reader.shard_files(names) for reader in self.readers]
        self.sample_space()
        offsets = self._shard_offsets
        firsts = np.array(offsets, dtype=np.int64)

        def files(shard: int) -> tuple[int, tuple[str, ...]]:
            stream = int(np.searchsorted(firsts, shard, side="right")) - 1
            _, rels = parts[stream].files(shard - offsets[stream])
            return stream, rels

        trees = [part.trees[0] for part in parts]
        return ShardFiles(trees, files, max(part.shard_bytes for part in parts))

    def locate(
        self, positions: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The stream and the position within it of each mix position (checked)."""
        if positions.size and (int(positions.min()) < 0 or int(positions.max()) >= len(self)):
            bad = next(int(p) for p in positions.tolist() if not 0 <= p < len(self))
            raise PositionOutOfRangeError(
                f"position {bad} is outside the mix (positions 0..{len(self) - 1})"
            )
        streams = np.searchsorted(self.starts, positions, side="right") - 1
        return streams, positions - self.starts[streams]

    @property
    def block_specs(self) -> dict[str, VinOfflineBlockSpec]:
        """The blocks every stream holds alike (same kind, dtype and row shape)."""
        first = self.readers[0].block_specs
        common = {}
        for name, spec in first.items():
            row = (spec.kind, spec.dtype, tuple((spec.shape or ())[1:]))
            others = [r.block_specs.get(name) for r in self.readers[1:]]
            if all(
                o is not None and (o.kind, o.dtype, tuple((o.shape or ())[1:])) == row
                for o in others
            ):
                common[name] = spec
        return common

    def _names(self, blocks: Sequence[str] | None) -> list[str]:
        common = self.block_specs
        if blocks is None:
            return list(common)
        if isinstance(blocks, str | bytes):
            raise ConfigError(
                f"blocks must be a list of block names, found {blocks!r}", key="blocks"
            )
        for name in blocks:
            if name not in common:
                raise SampleIndexNotFoundError(
                    f"block {name!r} is not held alike by every stream of the mix; the blocks "
                    f"they share are {sorted(common)}"
                )
        return list(blocks)

    # ---- reads ---------------------------------------------------------------------------
    def split_positions(self, indices: Sequence[int]) -> npt.NDArray[np.int64]:
        """Positions of the mix, checked (type and range)."""
        positions = np.asarray(indices)
        if positions.size == 0:
            positions = positions.astype(np.int64)
        if positions.ndim != 1 or positions.dtype.kind not in "iu":
            raise ConfigError(
                f"positions must be a flat list of ints, found {indices!r}", key="positions"
            )
        positions = positions.astype(np.int64)
        self.locate(positions)
        return positions

    def read_position(
        self,
        position: int,
        blocks: Sequence[str] | None = None,
        *,
        writeable: bool = False,
        decode_records: bool = True,
    ) -> dict[str, Any]:
        """Read the blocks of one sample of the mix."""
        streams, local = self.locate(np.array([position], dtype=np.int64))
        reader = self.readers[int(streams[0])]
        row = int(reader.split_positions([int(local[0])])[0])
        return reader.read_position(
            row, self._names(blocks), writeable=writeable, decode_records=decode_records
        )

    def read_positions(
        self,
        positions: Sequence[int] | npt.NDArray[np.integer[Any]],
        blocks: Sequence[str] | None = None,
        *,
        writeable: bool = False,
        decode_records: bool = True,
        out: Mapping[str, npt.NDArray[Any]] | None = None,
    ) -> dict[str, Any]:
        """Read many samples of the mix as one batch (arrays stacked, records listed)."""
        wanted = np.asarray(positions, dtype=np.int64)
        streams, local = self.locate(wanted)
        names = self._names(blocks)
        specs = self.block_specs
        result: dict[str, Any] = {}
        for name in names:
            spec = specs[name]
            if spec.kind == "zarr_array":
                given = None if out is None else out.get(name)
                shape = (wanted.shape[0], *(spec.shape or ())[1:])
                result[name] = np.empty(shape, dtype=spec.dtype) if given is None else given
            else:
                result[name] = [None] * wanted.shape[0]
        for stream in np.unique(streams).tolist():
            picked = np.flatnonzero(streams == stream)
            reader = self.readers[stream]
            rows = reader.split_positions(local[picked])
            part = reader.read_positions(rows, names, decode_records=decode_records)
            for name in names:
                if isinstance(result[name], np.ndarray):
                    result[name][picked] = part[name]
                else:
                    for k, value in zip(picked.tolist(), part[name], strict=True):
                        result[name][k] = value
        for name in names:
            if isinstance(result[name], np.ndarray) and (out is None or name not in out):
                result[name].flags.writeable = writeable
        return result
