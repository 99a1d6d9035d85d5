"""Samples checked and packed into contiguous row blocks: the per-sample work of a build.

The same code runs in the driver (iterable builds) and in workers (partitioned builds), so
a sample is validated, encoded and laid out identically wherever it was produced: that is
what makes the bytes, and the root hash, independent of where shards are written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.spec import SPLIT_NAMES, Split, VinOfflineBlockSpec
from dataset_devkit.vin_store.writer import encode_record

__all__ = ["RowBlock", "Schema", "VinOfflineSample", "assign_split", "check_fields", "key_hash"]

#: Split name -> the code held in compact index arrays.
SPLIT_CODES = {name: code for code, name in enumerate(SPLIT_NAMES)}
_JSON = msgspec.json.Encoder()


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


def assign_split(sample_key: str, val_fraction: float) -> Split:
    """Deterministic split of a key: ``val`` when its SHA-256 falls under *val_fraction*."""
    if val_fraction <= 0.0:
        return "all"
    digest = hashlib.sha256(sample_key.encode("utf-8")).digest()
    return "val" if int.from_bytes(digest[:8], "big") / 2**64 < val_fraction else "train"


def key_hash(sample_key: str) -> int:
    """64-bit hash of a key: duplicates are found among these (then confirmed by string)."""
    return int.from_bytes(hashlib.blake2b(sample_key.encode("utf-8"), digest_size=8).digest())


def check_fields(sample: object, number: int, last: int | None = None) -> VinOfflineSample:
    """Refuse a sample of the wrong type before anything reaches the index or a file.

    *last* is the previous sample's index where the caller knows it (the driver of an
    iterable build): then a non-increasing index is refused here, naming both.
    """
    if not isinstance(sample, VinOfflineSample):
        raise VinOfflineSchemaError(
            f"sample #{number}: expected a VinOfflineSample, found {type(sample).__name__}"
        )
    # The common case in a few attribute reads (this runs once per sample, millions of
    # times); anything unusual goes through the checks below, which name the problem.
    key, scene, snippet = sample.sample_key, sample.scene_id, sample.snippet_id
    index = sample.sample_index
    if not (
        type(key) is str
        and type(scene) is str
        and type(snippet) is str
        and key
        and scene
        and snippet
        and type(sample.arrays) is dict
        and type(sample.records) is dict
        and (
            index is None or (type(index) is int and index >= 0 and (last is None or index > last))
        )
    ):
        _check_slowly(sample, number, last)
    if sample.split is not None and sample.split not in SPLIT_NAMES:
        raise VinOfflineSchemaError(
            f"sample {sample.sample_key!r}: split must be one of {', '.join(SPLIT_NAMES)}, "
            f"found {sample.split!r}",
            key="split",
        )
    return sample


def _check_slowly(sample: VinOfflineSample, number: int, last: int | None) -> None:
    for name in ("sample_key", "scene_id", "snippet_id"):
        value = getattr(sample, name)
        if not isinstance(value, str) or not value:
            raise VinOfflineSchemaError(
                f"sample #{number}: {name} must be a non-empty str, found {value!r}", key=name
            )
    index = sample.sample_index
    if index is not None and (isinstance(index, bool) or not isinstance(index, int | np.integer)):
        raise VinOfflineSchemaError(
            f"sample {sample.sample_key!r}: sample_index must be an int or None, found {index!r}",
            key="sample_index",
        )
    if index is not None and (index < 0 or (last is not None and index <= last)):
        after = f" after {last}" if last is not None and last >= 0 else ""
        raise VinOfflineSchemaError(
            f"sample {sample.sample_key!r}: sample_index must be >= 0 and increase, found "
            f"{index}{after}",
            key="sample_index",
        )
    for name in ("arrays", "records"):
        if not isinstance(getattr(sample, name), Mapping):
            raise VinOfflineSchemaError(
                f"sample {sample.sample_key!r}: {name} must be a mapping of block name -> value",
                key=name,
            )


class Schema(msgspec.Struct, frozen=True):
    """Block names, dtypes and row shapes fixed by the first sample; picklable and small.

    ``record_nbytes`` is the first sample's encoded record size per block and
    ``index_nbytes`` the size of its ``sample_index.jsonl`` line: with the fixed numeric
    bytes they size shards (:meth:`row_nbytes`). The index line counts because a build
    holds a shard's lines in memory too: for small rows they outweigh the data.
    """

    arrays: dict[str, tuple[str, tuple[int, ...]]]
    record_nbytes: dict[str, int]
    index_nbytes: int

    @classmethod
    def of(cls, first: VinOfflineSample) -> Schema:
        arrays = {}
        for name, value in sorted(first.arrays.items()):
            array = np.asarray(value)
            arrays[name] = (array.dtype.str, tuple(array.shape))
        records = {n: len(encode_record(n, v)) for n, v in sorted(first.records.items())}
        ids = (first.sample_key, first.scene_id, first.snippet_id)
        line = 100 + sum(len(_JSON.encode(value)) for value in ids)  # + the fixed keys
        schema = cls(arrays=arrays, record_nbytes=records, index_nbytes=line)
        if not arrays and not records:
            raise VinOfflineSchemaError(f"sample {first.sample_key!r} has no blocks")
        overlap = sorted(set(records) & set(arrays))
        if overlap:
            raise VinOfflineSchemaError(f"names used twice: {overlap}")
        for name, (dtype, shape) in arrays.items():  # fail here, not in a worker
            try:
                VinOfflineBlockSpec.for_zarr_array(name, "x", np.dtype(dtype).name, [1, *shape])
            except (ValueError, TypeError) as exc:
                raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
            if np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)) == 0:
                raise VinOfflineSchemaError(f"block {name!r} has rows of zero bytes", key=name)
        for name in records:
            try:
                VinOfflineBlockSpec.for_indexed_msgpack_records(name, "x", "y", 1)
            except ValueError as exc:
                raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        return schema

    def array_nbytes(self) -> dict[str, int]:
        """Bytes of one row of each numeric block."""
        return {
            name: np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64))
            for name, (dtype, shape) in self.arrays.items()
        }

    def row_nbytes(self) -> int:
        """Bytes one row adds to a shard (numeric rows exactly, records as the first)."""
        numeric = sum(self.array_nbytes().values())
        return numeric + sum(self.record_nbytes.values()) + self.index_nbytes


class RowBlock:
    """Up to *capacity* checked rows: one contiguous buffer per numeric block, encoded
    records, and the compact index fields (no per-sample object outlives :meth:`add`).

    *direct* maps numeric block names to a sink that takes each row as it comes instead
    (large rows written straight from the sample's memory, no copy): only where the sink
    runs before the producer can touch the array again, that is, in the producing thread.
    """

    def __init__(
        self,
        schema: Schema,
        capacity: int,
        val_fraction: float,
        direct: Mapping[str, Callable[[npt.NDArray[Any]], None]] | None = None,
    ) -> None:
        self.schema, self.capacity, self.val_fraction = schema, capacity, val_fraction
        self.direct = dict(direct or {})
        self.dtypes = {n: np.dtype(d) for n, (d, _) in schema.arrays.items()}
        self.arrays = {  # stored little-endian whatever the input's byte order
            n: np.empty((capacity, *shape), dtype=self.dtypes[n].newbyteorder("<"))
            for n, (_, shape) in schema.arrays.items()
            if n not in self.direct
        }
        # name -> (dtype, row shape, buffer or None for a direct block), checked per sample
        self._layout = {
            n: (self.dtypes[n], tuple(shape), self.arrays.get(n))
            for n, (_, shape) in schema.arrays.items()
        }
        self._record_names = schema.record_nbytes.keys()
        self.records: dict[str, list[bytes]] = {n: [] for n in schema.record_nbytes}
        self.raw_index = np.empty(capacity, dtype="<i8")
        self.splits = np.empty(capacity, dtype="u1")
        self.key_hashes = np.empty(capacity, dtype="<u8")
        self.tails: list[bytes] = []
        self.keys: set[str] = set()
        self.count = 0

    def add(self, sample: VinOfflineSample, shard_id: str, row: int) -> None:
        """Check *sample* against the schema and append it as row *row* of *shard_id*."""
        key = sample.sample_key
        if key in self.keys:
            raise VinOfflineSchemaError(f"sample_key {key!r} appears twice")
        layout = self._layout
        arrays, records = sample.arrays, sample.records
        if arrays.keys() != layout.keys() or records.keys() != self._record_names:
            raise VinOfflineSchemaError(
                f"sample {key!r}: expected blocks {sorted(layout)} and records "
                f"{sorted(self._record_names)}, found {sorted(arrays)} and {sorted(records)}"
            )
        i = self.count
        direct: list[tuple[str, npt.NDArray[Any]]] = []
        for name, value in arrays.items():
            array = value if type(value) is np.ndarray else np.asarray(value)
            dtype, shape, target = layout[name]
            if array.shape != shape or array.dtype != dtype:
                raise VinOfflineSchemaError(
                    f"sample {key!r} block {name!r}: expected {dtype} {shape}, "
                    f"found {array.dtype} {array.shape}",
                    key=name,
                )
            if target is None:
                direct.append((name, array))
            else:
                target[i] = array
        for name, value in records.items():
            self.records[name].append(encode_record(name, value))
        split = sample.split or assign_split(key, self.val_fraction)
        self.raw_index[i] = -1 if sample.sample_index is None else int(sample.sample_index)
        self.splits[i] = SPLIT_CODES[split]
        self.key_hashes[i] = key_hash(key)
        self.keys.add(key)
        self.tails.append(
            b'"sample_key":%b,"scene_id":%b,"snippet_id":%b,"split":"%b","shard_id":"%b",'
            b'"row":%d}\n'
            % (
                _JSON.encode(key),
                _JSON.encode(sample.scene_id),
                _JSON.encode(sample.snippet_id),
                split.encode(),
                shard_id.encode(),
                row,
            )
        )
        for name, array in direct:  # every check passed: only now does anything leave
            self.direct[name](array)
        self.count += 1

    @property
    def full(self) -> bool:
        return self.count == self.capacity

    def numeric(self) -> dict[str, npt.NDArray[Any]]:
        """The filled rows of each buffered numeric block (views, no copy)."""
        return {n: a[: self.count] for n, a in self.arrays.items()}

    def index_parts(self) -> tuple[bytes, bytes, bytes, bytes]:
        """Sample indices (-1: implicit), split codes, key hashes and index-line tails."""
        n = self.count
        return (
            self.raw_index[:n].tobytes(),
            self.splits[:n].tobytes(),
            self.key_hashes[:n].tobytes(),
            b"".join(self.tails),
        )

    def clear(self) -> None:
        """Start over (buffers are reused)."""
        for rows in self.records.values():
            rows.clear()
        self.tails.clear()
        self.keys.clear()
        self.count = 0
