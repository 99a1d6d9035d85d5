"""Build a complete VIN offline store from samples, shards in parallel, published atomically.

Shards are written by any :class:`concurrent.futures.Executor` (a local process pool by
default, or a Dask ``distributed`` client's executor); the bytes depend only on the samples
and options, never on the executor, so the root hash does not either.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import path_argument, read_manifest, staged_publication
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.spec import (
    OFFLINE_DATASET_VERSION,
    SHARDS_DIR,
    SPLIT_NAMES,
    Split,
    VinOfflineBlockSpec,
    VinOfflineIndexRecord,
    VinOfflineManifest,
    VinOfflineMaterializedBlocks,
    VinOfflineShardSpec,
)
from dataset_devkit.vin_store.writer import VinOfflineShardWriter

__all__ = ["VinOfflineBuildResult", "VinOfflineSample", "build_vin_offline_store"]

#: Fixed creation time written to the manifest unless the caller gives one (determinism).
DEFAULT_CREATED_AT = "1970-01-01T00:00:00Z"


@dataclass(frozen=True, slots=True)
class VinOfflineSample:
    """One sample to store.

    Parameters
    ----------
    sample_key, scene_id, snippet_id
        Stable identifiers recorded in the index.
    arrays
        Numeric block name -> fixed-shape array (same dtype and shape for every sample).
    records
        Record block name -> any MessagePack-encodable value.
    sample_index
        Explicit global index (strictly increasing; sparse allowed); default: running count.
    split
        Explicit split; default: the builder's deterministic assignment.
    """

    sample_key: str
    scene_id: str
    snippet_id: str
    arrays: Mapping[str, npt.ArrayLike]
    records: Mapping[str, Any] = field(default_factory=dict)
    sample_index: int | None = None
    split: Split | None = None


@dataclass(frozen=True, slots=True)
class VinOfflineBuildResult:
    """What a build published."""

    store_dir: Path
    root_sha256: str
    num_samples: int
    num_shards: int


def assign_split(sample_key: str, val_fraction: float) -> Split:
    """Deterministic split of a key: ``val`` when its SHA-256 falls under *val_fraction*."""
    if val_fraction <= 0.0:
        return "all"
    digest = hashlib.sha256(sample_key.encode("utf-8")).digest()
    return "val" if int.from_bytes(digest[:8], "big") / 2**64 < val_fraction else "train"


def _write_shard(
    shard_dir: str,
    shard_id: str,
    row_start: int,
    arrays: dict[str, npt.NDArray[Any]],
    records: dict[str, list[Any]],
) -> VinOfflineShardSpec:
    """Write one shard (runs in an executor worker)."""
    writer = VinOfflineShardWriter(Path(shard_dir))
    for name, value in sorted(arrays.items()):
        writer.write_numeric_block(name, value)
    for name, rows in sorted(records.items()):
        writer.write_record_block(name, rows)
    return writer.finish(shard_id, f"{SHARDS_DIR}/{shard_id}", row_start)


class _Schema:
    """Block names, dtypes and shapes fixed by the first sample; later ones must match."""

    def __init__(self, first: VinOfflineSample) -> None:
        self.arrays = {
            k: (np.asarray(v).dtype, np.asarray(v).shape) for k, v in first.arrays.items()
        }
        self.records = frozenset(first.records)
        if not self.arrays and not self.records:
            raise VinOfflineSchemaError(f"sample {first.sample_key!r} has no blocks")
        overlap = self.records & set(self.arrays)
        if overlap:
            raise VinOfflineSchemaError(f"names used twice: {sorted(overlap)}")
        for name, (dtype, shape) in self.arrays.items():  # fail here, not in a worker
            try:
                VinOfflineBlockSpec.for_zarr_array(name, "x", dtype.name, [1, *shape])
            except ValueError as exc:
                raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        for name in self.records:
            try:
                VinOfflineBlockSpec.for_indexed_msgpack_records(name, "x", "y", 1)
            except ValueError as exc:
                raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        self.keys: set[str] = set()

    def check(self, sample: VinOfflineSample) -> dict[str, npt.NDArray[Any]]:
        if sample.sample_key in self.keys:
            raise VinOfflineSchemaError(f"sample_key {sample.sample_key!r} appears twice")
        self.keys.add(sample.sample_key)
        arrays = {k: np.asarray(v) for k, v in sample.arrays.items()}
        if set(arrays) != set(self.arrays) or set(sample.records) != self.records:
            raise VinOfflineSchemaError(
                f"sample {sample.sample_key!r}: expected blocks {sorted(self.arrays)} and records "
                f"{sorted(self.records)}, found {sorted(arrays)} and {sorted(sample.records)}"
            )
        for name, value in arrays.items():
            dtype, shape = self.arrays[name]
            if value.dtype != dtype or value.shape != shape:
                raise VinOfflineSchemaError(
                    f"sample {sample.sample_key!r} block {name!r}: expected {dtype} {shape}, "
                    f"found {value.dtype} {value.shape}",
                    key=name,
                )
        return arrays


def _check_fields(sample: object, number: int) -> None:
    """Refuse a sample of the wrong type before anything reaches the index or a worker."""
    if not isinstance(sample, VinOfflineSample):
        raise VinOfflineSchemaError(
            f"sample #{number}: expected a VinOfflineSample, found {type(sample).__name__}"
        )
    for name in ("sample_key", "scene_id", "snippet_id"):
        value = getattr(sample, name)
        if not isinstance(value, str) or not value:
            raise VinOfflineSchemaError(
                f"sample #{number}: {name} must be a non-empty str, found {value!r}", key=name
            )
    if sample.sample_index is not None and (
        isinstance(sample.sample_index, bool)
        or not isinstance(sample.sample_index, int | np.integer)
    ):
        raise VinOfflineSchemaError(
            f"sample {sample.sample_key!r}: sample_index must be an int or None, "
            f"found {sample.sample_index!r}",
            key="sample_index",
        )
    for name in ("arrays", "records"):
        if not isinstance(getattr(sample, name), Mapping):
            raise VinOfflineSchemaError(
                f"sample {sample.sample_key!r}: {name} must be a mapping of block name -> value",
                key=name,
            )


def _shards(
    samples: Iterable[VinOfflineSample],
    rows_per_shard: int,
    val_fraction: float,
    index: list[VinOfflineIndexRecord],
) -> Iterator[tuple[str, int, dict[str, Any], dict[str, list[Any]]]]:
    schema: _Schema | None = None
    batch: list[tuple[dict[str, npt.NDArray[Any]], Mapping[str, Any]]] = []
    last_index = -1

    def flush() -> tuple[str, int, dict[str, Any], dict[str, list[Any]]]:
        start = len(index) - len(batch)
        shard_id = f"shard-{start // rows_per_shard:06d}"
        stacked = {n: np.stack([a[n] for a, _ in batch]) for n in batch[0][0]}
        lists = {n: [r[n] for _, r in batch] for n in batch[0][1]}
        batch.clear()
        return shard_id, start, stacked, lists

    for number, sample in enumerate(samples):
        _check_fields(sample, number)
        if schema is None:
            schema = _Schema(sample)
        arrays = schema.check(sample)
        sample_index = last_index + 1 if sample.sample_index is None else int(sample.sample_index)
        if sample_index <= last_index or sample_index < 0:
            raise VinOfflineSchemaError(
                f"sample {sample.sample_key!r}: sample_index must be >= 0 and increase, found "
                f"{sample_index}" + (f" after {last_index}" if last_index >= 0 else ""),
                key="sample_index",
            )
        split = (
            sample.split
            if sample.split is not None
            else assign_split(sample.sample_key, val_fraction)
        )
        if split not in SPLIT_NAMES:
            raise VinOfflineSchemaError(
                f"sample {sample.sample_key!r}: split must be one of {', '.join(SPLIT_NAMES)}, "
                f"found {split!r}",
                key="split",
            )
        last_index = sample_index
        row = len(index) % rows_per_shard
        index.append(
            VinOfflineIndexRecord(
                sample_index=sample_index,
                sample_key=sample.sample_key,
                scene_id=sample.scene_id,
                snippet_id=sample.snippet_id,
                split=split,
                shard_id=f"shard-{len(index) // rows_per_shard:06d}",
                row=row,
            )
        )
        batch.append((arrays, sample.records))
        if len(batch) == rows_per_shard:
            yield flush()
    if batch:
        yield flush()


def build_vin_offline_store(
    samples: Iterable[VinOfflineSample],
    out: Path,
    *,
    rows_per_shard: int = 1024,
    val_fraction: float = 0.0,
    executor: Executor | None = None,
    max_pending: int = 4,
    materialized_blocks: VinOfflineMaterializedBlocks | None = None,
    source: Mapping[str, Any] | None = None,
    oracle: Mapping[str, Any] | None = None,
    vin: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    created_at: str = DEFAULT_CREATED_AT,
) -> VinOfflineBuildResult:
    """Write *samples* as a new store at *out*, validated and published atomically.

    Parameters
    ----------
    samples
        The samples, in sample_index order; consumed once, streaming.
    out
        Final store path; it must not exist (a published store is never replaced).
    rows_per_shard
        Rows per shard; shards are the unit of parallel writing and of file count.
    val_fraction
        0 puts every sample in ``all``; otherwise a hash of the key picks ``train``/``val``.
        A sample's own ``split`` always wins.
    executor
        Where shards are written; default a spawn process pool of one worker per CPU (at
        most 8; fork would copy a parent that may hold Zarr's event-loop thread). A Dask
        client's ``get_executor()`` works too when its workers see the same filesystem.
    max_pending
        Shards in flight at once; bounds memory while samples stream in.
    materialized_blocks
        Family flags; default inferred from block names. Checked against the shards.
    """
    if (
        isinstance(rows_per_shard, bool)
        or not isinstance(rows_per_shard, int)
        or rows_per_shard < 1
    ):
        raise ConfigError(
            f"rows_per_shard must be an int >= 1, found {rows_per_shard!r}", key="rows_per_shard"
        )
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, int | float):
        raise ConfigError(
            f"val_fraction must be a number in [0, 1), found {val_fraction!r}", key="val_fraction"
        )
    if not 0.0 <= val_fraction < 1.0:
        raise ConfigError(
            f"val_fraction must be in [0, 1), found {val_fraction}", key="val_fraction"
        )
    path_argument(out, "out")
    if not isinstance(samples, Iterable):
        raise ConfigError(
            f"samples must be an iterable of VinOfflineSample, found {type(samples).__name__}",
            key="samples",
        )
    # Imported here: verify imports the reader, which no builder-only user needs at import.
    from dataset_devkit.vin_store.verify import raise_for_store_issues

    index: list[VinOfflineIndexRecord] = []
    with (
        ExitStack() as stack,
        staged_publication(Path(out), validate=raise_for_store_issues) as staging,
    ):
        if executor is None:
            context = multiprocessing.get_context("spawn")
            workers = min(8, os.cpu_count() or 1)
            executor = stack.enter_context(ProcessPoolExecutor(workers, mp_context=context))
        (staging / SHARDS_DIR).mkdir()
        pending: list[Future[VinOfflineShardSpec]] = []
        specs: list[VinOfflineShardSpec] = []
        try:
            for shard_id, start, arrays, records in _shards(
                samples, rows_per_shard, val_fraction, index
            ):
                while len(pending) >= max_pending:
                    specs.append(pending.pop(0).result())
                pending.append(
                    executor.submit(
                        _write_shard,
                        str(staging / SHARDS_DIR / shard_id),
                        shard_id,
                        start,
                        arrays,
                        records,
                    )
                )
            specs.extend(future.result() for future in pending)
        except BaseException:
            for future in pending:
                future.cancel()
            wait(pending)  # never remove staging under a worker still writing into it
            raise
        if not index:
            raise VinOfflineSchemaError("no samples: a store needs at least one")
        names = sorted(specs[0].blocks)
        flags = materialized_blocks or VinOfflineMaterializedBlocks.from_block_names(names)
        splits = {
            "all": [r.sample_index for r in index],
            "train": [r.sample_index for r in index if r.split == "train"],
            "val": [r.sample_index for r in index if r.split == "val"],
        }
        manifest = VinOfflineManifest(
            version=OFFLINE_DATASET_VERSION,
            created_at=created_at,
            source=dict(source or {}),
            oracle=dict(oracle or {}),
            vin=dict(vin or {}),
            materialized_blocks=flags,
            stats={
                "num_samples": len(index),
                "num_shards": len(specs),
                "rows_per_shard": rows_per_shard,
                "split_sizes": {name: len(values) for name, values in splits.items()},
            },
            provenance={"writer": "dataset_devkit.vin_store", **dict(provenance or {})},
            shards=tuple(specs),
        )
        config = VinOfflineStoreConfig(store_dir=staging)
        config.write_split_indices(splits)
        VinOfflineIndexRecord.write_many(config.sample_index_path, index)  # and its sidecar
        manifest.write(config.manifest_path)
    root = read_manifest(Path(out)).root_sha256
    return VinOfflineBuildResult(
        store_dir=Path(out), root_sha256=root, num_samples=len(index), num_shards=len(specs)
    )
