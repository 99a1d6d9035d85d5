"""Random-access reader of a published VIN offline store, safe in fork and spawn workers.

Opening reads ``manifest.json``, the binary index sidecar and one split file: no JSON
lines, no Zarr, no threads. Block files are mmapped lazily, once per process, each numeric
block into one address range over all shards (``_span``), so a batch is one ``np.take``;
pickling sends only the config (spawn workers reopen lazily). A forked child keeps the
parent's read-only mappings: they are safe to share (no threads, no locks, every descriptor
closed right after ``mmap``) and spare each DataLoader worker re-opening and re-checking
every chunk file.

A store in object storage (a URL config) is read through a local cache of whole, verified
files (``_fetch``): each file is fetched and held before its first open, then read like a
local one. With a cache limit, other processes may evict a file this reader has mapped:
the mapping stays valid (POSIX), and at its next read after an eviction the reader drops
the mappings of files that are gone (giving their disk blocks back) and fetches them again
when it needs them. Reads of a URL store take a per-process lock, so a mapping is never
dropped under a thread that reads it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError, DevkitError
from dataset_devkit.integrity import load_npy
from dataset_devkit.vin_store._fetch import (
    block_files,
    forget_evicted,
    held_index,
    held_opening,
    mark_used,
    remote_tree,
    require_room,
)
from dataset_devkit.vin_store._locate import Located
from dataset_devkit.vin_store._shards import NumericBlockHandle, RecordBlockHandle, open_block
from dataset_devkit.vin_store._span import BlockSpan, block_span
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.errors import (
    InventoryError,
    PositionOutOfRangeError,
    SampleIndexNotFoundError,
    VinOfflineFormatError,
)
from dataset_devkit.vin_store.prefetch import ShardFiles
from dataset_devkit.vin_store.sample_space import SampleSpace
from dataset_devkit.vin_store.spec import (
    BLOCK_FAMILIES,
    Split,
    VinOfflineBlockSpec,
    VinOfflineIndexRecord,
    VinOfflineManifest,
    block_family,
    uses_vin_layout,
)

__all__ = ["VinOfflineStoreReader"]


def _load_int64(path: Path, what: str) -> npt.NDArray[np.int64]:
    # mapped, not read: opening a 10M-sample store must not read 80 MB per file
    values: npt.NDArray[np.int64] = load_npy(
        path, dtype="<i8", ndim=1, what=what, mmap=True, error=VinOfflineFormatError
    )
    return values  # read-only: the map is opened "r"


def _sample_indices(config: VinOfflineStoreConfig) -> npt.NDArray[np.int64]:
    """The index sidecar, or (when a store has none) the same values from the JSON lines.

    The sidecar is ours, not part of the record API: a store whose writer did not add it
    still opens, at the cost of parsing ``sample_index.jsonl`` once per open.
    """
    if config.sample_index_sidecar_path.exists() or config.sample_index_sidecar_path.is_symlink():
        return _load_int64(config.sample_index_sidecar_path, "index sidecar")
    records = VinOfflineIndexRecord.read_many(config.sample_index_path)
    values = np.array([record.sample_index for record in records], dtype="<i8")
    values.flags.writeable = False
    return values


@dataclass
class _OpenState:
    """Everything this reader has opened; never pickled (a forked child inherits it)."""

    manifest: VinOfflineManifest
    sample_indices: npt.NDArray[np.int64]
    dense: bool
    view: npt.NDArray[np.int64] | None  # split position -> global row; None means identity
    row_starts: npt.NDArray[np.int64]
    rows_per_shard: int | None
    blocks: dict[str, VinOfflineBlockSpec]
    handles: dict[tuple[int, str], NumericBlockHandle | RecordBlockHandle] = field(
        default_factory=dict
    )
    spans: dict[str, BlockSpan | None] = field(default_factory=dict)
    # URL stores: the cached files behind each handle, and the eviction count last seen
    files: dict[tuple[int, str], tuple[str, ...]] = field(default_factory=dict)
    generation: int = -1


def _as_index(value: object, what: str) -> int:
    """*value* as a plain int, or a ConfigError naming what was expected (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ConfigError(f"{what} must be an int, found {value!r}", key=what)
    return int(value)


def _block_names(blocks: Sequence[str] | None, state: _OpenState) -> Sequence[str]:
    """The chosen block names (default all); a bare string would be read letter by letter."""
    if blocks is None:
        return list(state.blocks)
    if isinstance(blocks, str | bytes) or not all(isinstance(b, str) for b in blocks):
        raise ConfigError(f"blocks must be a list of block names, found {blocks!r}", key="blocks")
    return blocks


class VinOfflineStoreReader:
    """Read immutable VIN offline datasets with random access.

    Parameters
    ----------
    config
        The store and split to read (a path means the ``"all"`` split).
    """

    def __init__(self, config: VinOfflineStoreConfig | Path | str) -> None:
        if not isinstance(config, VinOfflineStoreConfig):
            config = VinOfflineStoreConfig(store_dir=cast(Path, config))  # checked there
        self.config = config
        self._state: _OpenState | None = None
        self._records: list[VinOfflineIndexRecord] | None = None
        self._remote = remote_tree(config)
        self._lock: threading.Lock | None = None
        self._lock_pid = -1

    def __repr__(self) -> str:
        return f"VinOfflineStoreReader({self._repr_args()})"

    def _repr_args(self) -> str:
        """``'STORE', split='train', samples=N`` for reprs: where, which split, how many
        (``samples=?`` if the store cannot be opened: a repr never raises)."""
        where = self.config.url or str(self.config.store_dir)
        try:
            count: object = len(self)
        except (DevkitError, OSError):
            count = "?"
        return f"{where!r}, split={self.config.split!r}, samples={count}"

    # ---- process-local state -------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]

    def _open(self) -> _OpenState:
        state = self._state
        if state is not None:
            return state
        if self._remote is None:
            return self._open_files()
        require_room(self._remote, self.config)
        with held_opening(self._remote, self.config):
            state = self._open_files()
        state.generation = self._remote.generation()
        return state

    def _open_files(self) -> _OpenState:
        cfg = self.config
        manifest = VinOfflineManifest.read(cfg.manifest_path)
        sample_indices = _sample_indices(cfg)
        total = manifest.num_rows
        if sample_indices.shape[0] != total:
            raise InventoryError(
                f"expected {total} entries (the manifest's rows), found {sample_indices.shape[0]}",
                path=cfg.sample_index_sidecar_path
                if cfg.sample_index_sidecar_path.exists()
                else cfg.sample_index_path,
            )
        # Indices strictly increase (the builder writes them so, verify checks it): the
        # endpoints alone tell whether sample_index == global row.
        dense = total == 0 or (int(sample_indices[0]) == 0 and int(sample_indices[-1]) == total - 1)
        split = _load_int64(cfg.split_path(), f"split {cfg.split!r}")
        view: npt.NDArray[np.int64] | None
        if dense and cfg.split == "all" and split.shape[0] == total:
            view = None
        elif dense:
            if split.size and (int(split.min()) < 0 or int(split.max()) >= total):
                raise InventoryError(
                    "split names a sample index the store does not hold", path=cfg.split_path()
                )
            view = split
        else:
            view = np.searchsorted(sample_indices, split)
            found = view < total
            if not bool(np.all(found)) or not np.array_equal(sample_indices[view], split):
                raise InventoryError(
                    "split names a sample index the store does not hold", path=cfg.split_path()
                )
        sizes = [shard.num_rows for shard in manifest.shards]
        uniform = all(n == sizes[0] for n in sizes[:-1]) and (not sizes or sizes[-1] <= sizes[0])
        self._state = _OpenState(
            manifest=manifest,
            sample_indices=sample_indices,
            dense=dense,
            view=view,
            row_starts=np.array([s.row_start for s in manifest.shards], dtype=np.int64),
            rows_per_shard=sizes[0] if sizes and uniform else None,
            blocks=dict(manifest.shards[0].blocks) if manifest.shards else {},
        )
        return self._state

    # ---- metadata ------------------------------------------------------------------------
    @property
    def manifest(self) -> VinOfflineManifest:
        """The store's manifest."""
        return self._open().manifest

    @property
    def block_specs(self) -> dict[str, VinOfflineBlockSpec]:
        """Logical block name -> descriptor (of the first shard; all shards agree)."""
        return dict(self._open().blocks)

    @property
    def absent_families(self) -> tuple[str, ...]:
        """Optional VIN families this store does not hold (reads of them raise, never
        fill); empty for a store outside the VIN layout (its own blocks, such as
        ``camera.image``: the VIN families were never part of it)."""
        if not uses_vin_layout(self._open().blocks):
            return ()
        flags = self.manifest.materialized_blocks
        return tuple(name for name in BLOCK_FAMILIES if not getattr(flags, name))

    @property
    def index_records(self) -> list[VinOfflineIndexRecord]:
        """Every record of ``sample_index.jsonl`` (parsed on first use only)."""
        if self._records is None:
            path = self.config.sample_index_path
            with contextlib.nullcontext() if self._remote is None else held_index(self._remote):
                records = VinOfflineIndexRecord.read_many(path)
            held = self._open().sample_indices
            if len(records) != held.shape[0]:
                raise InventoryError(
                    f"expected {held.shape[0]} lines (the store's rows), found {len(records)}",
                    path=path,
                )
            found = np.array([record.sample_index for record in records], dtype="<i8")
            if not np.array_equal(found, held):
                line = int(np.argmax(found != held)) + 1
                raise InventoryError(
                    f"sample_index {int(found[line - 1])} differs from the index sidecar's "
                    f"{int(held[line - 1])}",
                    path=path,
                    field=f"line {line} $.sample_index",
                )
            self._records = records
        return self._records

    @property
    def sample_indices(self) -> npt.NDArray[np.int64]:
        """The sample indices of the configured split, in order (read-only)."""
        state = self._open()
        if state.view is None:
            return state.sample_indices
        result = state.sample_indices[state.view]
        result.flags.writeable = False
        return result

    def shard_files(self, blocks: Sequence[str] | None = None) -> ShardFiles:
        """Each shard's files for *blocks* (default all), for a prefetcher of a URL store."""
        state = self._open()
        names = list(_block_names(blocks, state))

        def files(shard: int) -> tuple[int, tuple[str, ...]]:
            spec = state.manifest.shards[shard]
            rels = [block_files(spec.relative_dir, spec.blocks[n]) for n in names]
            return 0, tuple(rel for group in rels for rel in group)

        largest = 0
        if self._remote is not None and state.manifest.shards:
            sizes = self._remote.manifest.by_path()
            largest = max(
                sum(sizes[rel].size for rel in files(k)[1] if rel in sizes)
                for k in range(len(state.manifest.shards))
            )
        return ShardFiles([self._remote], files, largest)

    def sample_space(self) -> SampleSpace:
        """The split's positions and their shards, for a sampler (see :mod:`.sampler`)."""
        state = self._open()
        total = state.sample_indices.shape[0]
        rows = np.arange(total, dtype=np.int64) if state.view is None else state.view
        if state.rows_per_shard is not None:
            shards = rows // state.rows_per_shard
        else:
            shards = np.searchsorted(state.row_starts, rows, side="right") - 1
        return SampleSpace.single(shards.astype(np.int64))

    def __len__(self) -> int:
        state = self._open()
        return state.sample_indices.shape[0] if state.view is None else state.view.shape[0]

    def position_of(self, sample_index: int) -> int:
        """Global row of a sample index; a missing index raises SampleIndexNotFoundError."""
        sample_index = _as_index(sample_index, "sample_index")
        state = self._open()
        total = state.sample_indices.shape[0]
        if state.dense:
            position = int(sample_index)
        else:
            position = int(np.searchsorted(state.sample_indices, sample_index))
        if not 0 <= position < total or int(state.sample_indices[position]) != sample_index:
            held = f"indexes {state.sample_indices[0]}..{state.sample_indices[-1]}" if total else ""
            raise SampleIndexNotFoundError(
                f"sample index {sample_index} is not in {self.config.url or self.config.store_dir} "
                f"({total} samples{', ' + held if held else ''})"
            )
        return position

    def record(self, sample_index: int) -> VinOfflineIndexRecord:
        """The index record of one sample index."""
        return self.index_records[self.position_of(sample_index)]

    def split_view(self, split: Split) -> VinOfflineStoreReader:
        """A reader of another split of the same store."""
        return VinOfflineStoreReader(dataclasses.replace(self.config, split=split))

    # ---- reads ---------------------------------------------------------------------------
    def _handle(
        self, state: _OpenState, shard: int, name: str
    ) -> NumericBlockHandle | RecordBlockHandle:
        handle = state.handles.get((shard, name))
        if handle is None:
            spec = state.manifest.shards[shard].blocks.get(name)
            if spec is None:
                raise self._missing_block(state, name)
            relative_dir = state.manifest.shards[shard].relative_dir
            if self._remote is None:
                handle = self._open_handle(state, shard, name, spec)
            else:
                rels = block_files(relative_dir, spec)
                with self._remote.held(rels):  # not evicted before it is mapped
                    handle = self._open_handle(state, shard, name, spec)
                state.files[(shard, name)] = rels
            state.handles[(shard, name)] = handle
        return handle

    def open_blocks(self, blocks: Sequence[str] | None = None) -> None:
        """Map every shard's files of *blocks* (default all) now, before forking workers.

        Reads open a shard's files on first use, once per process, so each forked
        DataLoader worker opens, maps and checks every file its first batches touch (a
        random batch touches every shard: four files a shard here, ~1 ms of a worker's CPU
        per shard), and again in every epoch of a loader without ``persistent_workers``.
        Opened in the parent, the mappings are inherited, so workers start reading at
        once. Mapping reserves address space and reads only each file's index, not its
        rows. Local stores only: a URL store's files are fetched as reads need them, and
        this does nothing.
        """
        if self._remote is not None:
            return
        state = self._open()
        names = _block_names(blocks, state)
        for shard in range(len(state.manifest.shards)):
            for name in names:
                self._handle(state, shard, name)

    def _open_handle(
        self, state: _OpenState, shard: int, name: str, spec: VinOfflineBlockSpec
    ) -> NumericBlockHandle | RecordBlockHandle:
        shard_dir = self.config.store_dir / state.manifest.shards[shard].relative_dir
        # One mapping per block for both paths: single reads then warm the pages (and page
        # tables) that batched reads use, and the other way round.
        span = self._span(state, name, spec) if spec.kind == "zarr_array" else None
        return open_block(shard_dir, spec, span, shard)  # checks the chunk file's layout once

    # ---- URL stores: the shared cache ----------------------------------------------------
    @contextlib.contextmanager
    def _cached_reads(self) -> Iterator[_OpenState]:
        """The open state, for one read of a URL store: mappings of files evicted since
        the last read are dropped first, under a per-process lock (never under a reader)."""
        if self._lock is None or self._lock_pid != os.getpid():
            self._lock, self._lock_pid = threading.Lock(), os.getpid()
        with self._lock:
            state = self._open()
            assert self._remote is not None
            generation = self._remote.generation()
            if generation != state.generation:
                state.generation = generation
                forget_evicted(state.handles, state.files, state.spans)
            yield state

    def _numeric_handle(self, state: _OpenState, shard: int, name: str) -> NumericBlockHandle:
        handle = self._handle(state, shard, name)
        if not isinstance(handle, NumericBlockHandle):
            raise SampleIndexNotFoundError(f"block {name!r} is a record block, not numeric")
        return handle

    def _record_handle(self, state: _OpenState, shard: int, name: str) -> RecordBlockHandle:
        handle = self._handle(state, shard, name)
        if not isinstance(handle, RecordBlockHandle):
            raise SampleIndexNotFoundError(f"block {name!r} is numeric, not a record block")
        return handle

    def _gather(
        self,
        state: _OpenState,
        name: str,
        spec: VinOfflineBlockSpec,
        located: Located,
        batch: npt.NDArray[Any],
    ) -> None:
        """Copy the rows of one numeric block into *batch* (positions already checked)."""
        span = self._span(state, name, spec)
        if span is not None:  # one C-level gather, whatever shards the batch touches
            if not span.complete:
                for k in set(located.shard_list) - span.mapped:
                    self._numeric_handle(state, k, name)  # opening maps it into the span
            if span.slot_rows == state.rows_per_shard:
                virtual = located.positions  # slot k starts at global row k * rows_per_shard
            else:
                virtual = located.shards * span.slot_rows + located.rows
            np.take(span.rows, virtual, axis=0, out=batch, mode="clip")  # "raise" would buffer
            return
        handles = {k: self._numeric_handle(state, k, name) for k in set(located.shard_list)}
        size = int(batch.itemsize * batch[:1].size)
        target = batch.reshape(-1).view(np.uint8).data
        for k, (shard, row) in enumerate(zip(located.shard_list, located.row_list, strict=True)):
            start = row * size  # one memcpy per row, no numpy views
            target[k * size : k * size + size] = handles[shard].buffer[start : start + size]

    def _span(self, state: _OpenState, name: str, spec: VinOfflineBlockSpec) -> BlockSpan | None:
        """The block's rows of every shard as one array (made once per process), else None."""
        if name in state.spans:
            return state.spans[name]
        dtype = np.dtype(spec.dtype).newbyteorder("<")
        row_shape = tuple((spec.shape or ())[1:])
        row_nbytes = int(np.prod(row_shape, dtype=np.int64)) * dtype.itemsize
        shard_rows = [shard.num_rows for shard in state.manifest.shards]
        span = state.spans[name] = block_span(shard_rows, row_nbytes, dtype, row_shape)
        return span

    def _missing_block(self, state: _OpenState, name: str) -> SampleIndexNotFoundError:
        family = block_family(name)
        if family is not None and not getattr(state.manifest.materialized_blocks, family):
            return SampleIndexNotFoundError(
                f"block {name!r} is absent: this store does not materialize {family!r}"
            )
        return SampleIndexNotFoundError(
            f"no block {name!r} in {self.config.url or self.config.store_dir}; "
            f"it has {sorted(state.blocks)}"
        )

    def _locate(self, state: _OpenState, position: int) -> tuple[int, int]:
        if state.rows_per_shard is not None:
            return divmod(position, state.rows_per_shard)
        shard = int(np.searchsorted(state.row_starts, position, side="right")) - 1
        return shard, position - int(state.row_starts[shard])

    def read_position(
        self,
        position: int,
        blocks: Sequence[str] | None = None,
        *,
        writeable: bool = False,
        decode_records: bool = True,
    ) -> dict[str, Any]:
        """Read the blocks of the sample at a global row (one copy per numeric block).

        ``decode_records=False`` returns each record's MessagePack bytes undecoded.
        """
        if self._remote is None:
            return self._read_position(self._open(), position, blocks, writeable, decode_records)
        with self._cached_reads() as state:
            return self._read_position(state, position, blocks, writeable, decode_records)

    def _read_position(
        self,
        state: _OpenState,
        position: int,
        blocks: Sequence[str] | None,
        writeable: bool,
        decode_records: bool,
    ) -> dict[str, Any]:
        position = _as_index(position, "position")
        if not 0 <= position < state.sample_indices.shape[0]:
            raise PositionOutOfRangeError(f"row {position} is outside the store")
        shard, row = self._locate(state, position)
        out: dict[str, Any] = {}
        names = _block_names(blocks, state)
        for name in names:
            handle = self._handle(state, shard, name)
            if isinstance(handle, NumericBlockHandle):
                value = handle.rows[row].copy()
                value.flags.writeable = writeable
                out[name] = value
            else:
                out[name] = handle.read(row) if decode_records else handle.raw(row)
        if self._remote is not None:
            mark_used(self._remote, state.files, [shard], names)
        return out

    def read_positions(
        self,
        positions: Sequence[int] | npt.NDArray[np.integer[Any]],
        blocks: Sequence[str] | None = None,
        *,
        writeable: bool = False,
        decode_records: bool = True,
        out: Mapping[str, npt.NDArray[Any]] | None = None,
    ) -> dict[str, Any]:
        """Read many rows as one collated batch: arrays stacked on axis 0, records listed.

        ``out`` may give preallocated C-contiguous arrays for numeric blocks (e.g. views of
        one shared-memory buffer, so a DataLoader worker sends the batch without a copy).
        """
        if self._remote is None:
            return self._read_positions(
                self._open(), positions, blocks, writeable, decode_records, out
            )
        with self._cached_reads() as state:
            return self._read_positions(state, positions, blocks, writeable, decode_records, out)

    def _read_positions(
        self,
        state: _OpenState,
        positions: Sequence[int] | npt.NDArray[np.integer[Any]],
        blocks: Sequence[str] | None,
        writeable: bool,
        decode_records: bool,
        out: Mapping[str, npt.NDArray[Any]] | None,
    ) -> dict[str, Any]:
        located = Located(state, positions)
        result: dict[str, Any] = {}
        names = _block_names(blocks, state)
        for name in names:
            spec = state.blocks.get(name)
            if spec is None:
                raise self._missing_block(state, name)
            if spec.kind == "zarr_array":
                shape = (len(located.shard_list), *(spec.shape or ())[1:])
                given = None if out is None else out.get(name)
                if given is None:
                    batch = np.empty(shape, dtype=spec.dtype)
                elif (
                    given.shape != shape
                    or given.dtype != np.dtype(spec.dtype)
                    or not given.flags.c_contiguous
                ):
                    raise ConfigError(
                        f"out[{name!r}] must be a C-contiguous {spec.dtype} array of shape "
                        f"{shape}, found {given.dtype} {given.shape}",
                        key=name,
                    )
                else:
                    batch = given
                self._gather(state, name, spec, located, batch)
                if given is None:
                    batch.flags.writeable = writeable
                result[name] = batch
            else:
                pairs = zip(located.shard_list, located.row_list, strict=True)
                records = {k: self._record_handle(state, k, name) for k in set(located.shard_list)}
                if decode_records:
                    result[name] = [records[k].read(r) for k, r in pairs]
                else:
                    result[name] = [records[k].raw(r) for k, r in pairs]
        if self._remote is not None:
            mark_used(self._remote, state.files, located.shard_list, names)
        return result

    def read_numeric_block(self, record: VinOfflineIndexRecord, name: str) -> npt.NDArray[Any]:
        """Read one numeric block of the sample an index record points at (read-only)."""
        value = self.read_position(self.position_of(record.sample_index), [name])[name]
        if not isinstance(value, np.ndarray):
            raise SampleIndexNotFoundError(f"block {name!r} is a record block, not numeric")
        return value

    def read_record_block(self, record: VinOfflineIndexRecord, name: str) -> Any:
        """Read one decoded MessagePack record of the sample an index record points at."""
        spec = self._open().blocks.get(name)
        if spec is not None and spec.kind != "msgpack_indexed_records":
            raise SampleIndexNotFoundError(f"block {name!r} is numeric, not a record block")
        return self.read_position(self.position_of(record.sample_index), [name])[name]

    def read_sample(self, sample_index: int, blocks: Sequence[str] | None = None) -> dict[str, Any]:
        """Read the chosen blocks (default: all) of one sample index."""
        return self.read_position(self.position_of(sample_index), blocks)

    def __getitem__(self, i: int) -> dict[str, Any]:
        """Read the *i*-th sample of the configured split (all blocks)."""
        state = self._open()
        i = _as_index(i, "position")
        if not -len(self) <= i < len(self):
            raise PositionOutOfRangeError(f"position {i} is outside split {self.config.split!r}")
        position = i % len(self) if state.view is None else int(state.view[i])
        return self.read_position(position)

    def __getitems__(self, indices: Sequence[int]) -> dict[str, Any]:
        """Read many positions of the configured split as one collated batch."""
        return self.read_positions(self.split_positions(indices))

    def split_positions(self, indices: Sequence[int]) -> npt.NDArray[np.int64]:
        """Global rows of positions of the configured split, checked (type and range)."""
        state = self._open()
        positions = np.asarray(indices)
        if positions.size == 0:
            positions = positions.astype(np.int64)
        if positions.ndim != 1 or positions.dtype.kind not in "iu":
            raise ConfigError(
                f"positions must be a flat list of ints, found {indices!r}", key="positions"
            )
        size = state.sample_indices.shape[0] if state.view is None else len(state.view)
        listed = positions.tolist()  # min/max of a short list beat two numpy reductions
        if listed and (min(listed) < 0 or max(listed) >= size):
            bad = next(p for p in listed if not 0 <= p < size)
            raise PositionOutOfRangeError(
                f"position {bad} is outside split {self.config.split!r} (positions 0..{size - 1})"
            )
        return positions.astype(np.int64) if state.view is None else state.view[positions]
