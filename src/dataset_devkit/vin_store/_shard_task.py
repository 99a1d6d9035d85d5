"""One shard, written by an executor worker, and the record that lets a re-run reuse it.

A task carries either the shard's rows (iterable builds: the driver packed them) or the
pieces of sources to produce them from (partitioned builds: produced here, in blocks of a
few MB, so a worker holds a few blocks whatever the shard size). Either way the worker
writes the shard into the build tree, hashes every file as written, fsyncs it, then writes
a record into the build's state directory: the shard's key (a hash of its inputs and the
options), its spec, its files' digests and its part of the index. A re-run that finds a
record with the same key, and files that still hash to it, reuses the shard.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.vin_store._rows import RowBlock, Schema, check_fields
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.sources import VinOfflineShardSource
from dataset_devkit.vin_store.spec import SHARDS_DIR, VinOfflineShardSpec
from dataset_devkit.vin_store.writer import VinOfflineShardWriter

__all__ = [
    "Rows",
    "ShardRecord",
    "ShardTask",
    "probe_schema",
    "run_shard",
    "shard_id_of",
    "source_key",
]

#: Rows a worker produces before writing them (per numeric block): a few MB at most.
_BLOCK_BYTES: Final = 16 << 20


class ShardRecord(msgspec.Struct, frozen=True):
    """What a finished shard reports: also its resume record on disk (MessagePack)."""

    key: str
    spec: VinOfflineShardSpec
    files: list[tuple[str, int, str]]
    raw_index: bytes  # int64 per row; -1: no explicit sample_index
    splits: bytes  # uint8 split code per row
    key_hashes: bytes  # uint64 per row
    tails: bytes  # the index lines after "sample_index", one per row
    reused: bool = False


@dataclass(frozen=True, slots=True)
class Rows:
    """A shard's rows packed by the driver (picklable: arrays, bytes and lists only)."""

    numeric: dict[str, npt.NDArray[Any]]
    records: dict[str, list[bytes]]
    raw_index: bytes
    splits: bytes
    key_hashes: bytes
    tails: bytes

    @classmethod
    def of(cls, block: RowBlock) -> Rows:
        n = block.count
        return cls(
            numeric=block.numeric(),
            records={k: list(v) for k, v in block.records.items()},
            raw_index=block.raw_index[:n].tobytes(),
            splits=block.splits[:n].tobytes(),
            key_hashes=block.key_hashes[:n].tobytes(),
            tails=b"".join(block.tails),
        )


@dataclass(frozen=True, slots=True)
class ShardTask:
    """Everything a worker needs for one shard; small unless it carries ``rows``."""

    tree: str
    state: str
    position: int
    row_start: int
    num_rows: int
    schema: Schema
    val_fraction: float
    options_key: str
    rows: Rows | None = None
    pieces: tuple[tuple[VinOfflineShardSource, int, int], ...] = ()
    key: str | None = field(default=None)


def shard_id_of(position: int) -> str:
    return f"shard-{position:06d}"


def source_key(
    options_key: str, position: int, pieces: tuple[tuple[VinOfflineShardSource, int, int], ...]
) -> str:
    """Key of a partitioned shard: its sources (function by reference, ranges) and options."""
    try:
        described = pickle.dumps(pieces, protocol=5)
    except Exception as exc:
        raise VinOfflineSchemaError(
            f"shard {position}: its sources do not pickle ({exc}); use a module-level "
            "function, or functools.partial of one, as produce"
        ) from None
    return hashlib.sha256(f"{options_key}/{position}/".encode() + described).hexdigest()


def probe_schema(source: VinOfflineShardSource) -> Schema:
    """The schema of a partitioned build, from the first sample of its first source."""
    first = next(iter(source.produce(source.start, source.start + 1)), None)
    if first is None:
        raise VinOfflineSchemaError(
            f"{_describe(source)}: produce({source.start}, {source.start + 1}) gave no sample"
        )
    return Schema.of(check_fields(first, source.start))


def run_shard(task: ShardTask) -> ShardRecord:
    """Write (or reuse) one shard; runs in an executor worker."""
    shard_id = shard_id_of(task.position)
    shard_dir = Path(task.tree) / SHARDS_DIR / shard_id
    record_path = Path(task.state) / f"{shard_id}.rec"
    hashes: dict[str, Any] = {}
    key = task.key
    if task.rows is not None:  # the key is the content: hash the rows once, here
        key, hashes = _rows_key(task, task.rows)
    assert key is not None
    reused = _reusable(record_path, shard_dir, key)
    if reused is not None:
        return reused
    record_path.unlink(missing_ok=True)
    if shard_dir.exists():
        shutil.rmtree(shard_dir)
    writer = VinOfflineShardWriter(shard_dir)
    if task.rows is not None:
        index = _write_rows(task, writer, task.rows, hashes)
    else:
        index = _write_from_sources(task, writer, shard_id)
    spec = writer.finish(shard_id, f"{SHARDS_DIR}/{shard_id}", task.row_start)
    files = [(rel, size, digest) for rel, (size, digest) in sorted(writer.files.items())]
    record = ShardRecord(
        key=key,
        spec=spec,
        files=files,
        raw_index=index["raw_index"],
        splits=index["splits"],
        key_hashes=index["key_hashes"],
        tails=index["tails"],
    )
    _write_record(record_path, record)
    return record


def _rows_key(task: ShardTask, rows: Rows) -> tuple[str, dict[str, Any]]:
    key = hashlib.sha256(f"{task.options_key}/{task.position}/{task.row_start}/".encode())
    hashes = {}
    for name, array in sorted(rows.numeric.items()):
        sha = hashlib.sha256(np.ascontiguousarray(array).data)
        hashes[name] = sha
        key.update(f"{name}:{sha.hexdigest()}/".encode())
    for name, items in sorted(rows.records.items()):
        key.update(f"{name}:{len(items)}:".encode())
        key.update(hashlib.sha256(b"".join(items)).digest())
        key.update(np.array([len(i) for i in items], dtype="<i8").tobytes())
    for part in (rows.raw_index, rows.splits, rows.key_hashes, rows.tails):
        key.update(hashlib.sha256(part).digest())
    return key.hexdigest(), hashes


def _write_rows(
    task: ShardTask, writer: VinOfflineShardWriter, rows: Rows, hashes: dict[str, Any]
) -> dict[str, bytes]:
    for name, array in sorted(rows.numeric.items()):
        stream = writer.open_numeric_block(name, array.dtype, array.shape[1:], array.shape[0])
        stream.write(array, prehashed=hashes.get(name))
        stream.close()
    for name, items in sorted(rows.records.items()):
        records = writer.open_record_block(name, len(items))
        for item in items:
            records.append(item)
        records.close()
    return {
        "raw_index": rows.raw_index,
        "splits": rows.splits,
        "key_hashes": rows.key_hashes,
        "tails": rows.tails,
    }


def _write_from_sources(
    task: ShardTask, writer: VinOfflineShardWriter, shard_id: str
) -> dict[str, bytes]:
    schema = task.schema
    capacity = max(1, min(task.num_rows, _BLOCK_BYTES // max(1, schema.row_nbytes())))
    block = RowBlock(schema, capacity, task.val_fraction)
    numeric = {
        name: writer.open_numeric_block(name, dtype, shape, task.num_rows)
        for name, (dtype, shape) in sorted(schema.arrays.items())
    }
    records = {name: writer.open_record_block(name, task.num_rows) for name in schema.record_nbytes}
    index: dict[str, list[bytes]] = {"raw_index": [], "splits": [], "key_hashes": [], "tails": []}
    keys: set[str] = set()

    def flush() -> None:
        if not block.count:
            return
        for name, stream in numeric.items():
            stream.write(block.arrays[name][: block.count])
        for name, record_stream in records.items():
            for item in block.records[name]:
                record_stream.append(item)
        n = block.count
        index["raw_index"].append(block.raw_index[:n].tobytes())
        index["splits"].append(block.splits[:n].tobytes())
        index["key_hashes"].append(block.key_hashes[:n].tobytes())
        index["tails"].append(b"".join(block.tails))
        block.clear()

    row = 0
    for source, start, stop in task.pieces:
        count = 0
        for sample in source.produce(start, stop):
            if count == stop - start:
                raise VinOfflineSchemaError(
                    f"{_describe(source)}: produce({start}, {stop}) gave more than "
                    f"{stop - start} samples"
                )
            check_fields(sample, start + count)
            if sample.sample_key in keys:
                raise VinOfflineSchemaError(f"sample_key {sample.sample_key!r} appears twice")
            keys.add(sample.sample_key)
            block.add(sample, shard_id, row)
            row += 1
            count += 1
            if block.full:
                flush()
        if count != stop - start:
            raise VinOfflineSchemaError(
                f"{_describe(source)}: produce({start}, {stop}) gave {count} samples, "
                f"expected {stop - start}"
            )
    flush()
    for stream in numeric.values():
        stream.close()
    for record_stream in records.values():
        record_stream.close()
    return {name: b"".join(parts) for name, parts in index.items()}


def _describe(source: VinOfflineShardSource) -> str:
    name = getattr(source.produce, "__qualname__", None) or repr(source.produce)
    return f"source {name}[{source.start}:{source.stop}]"


def _reusable(record_path: Path, shard_dir: Path, key: str) -> ShardRecord | None:
    """The record of a shard a previous run finished, if its key and files still match."""
    try:
        record = msgspec.msgpack.decode(record_path.read_bytes(), type=ShardRecord)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if record.key != key or not shard_dir.is_dir():
        return None
    found = sorted(
        p.relative_to(shard_dir).as_posix() for p in shard_dir.rglob("*") if not p.is_dir()
    )
    if found != [rel for rel, _, _ in record.files]:
        return None
    for rel, size, digest in record.files:
        try:
            fd = os.open(shard_dir / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as stream:
            if os.fstat(fd).st_size != size:
                return None
            if hashlib.file_digest(stream, "sha256").hexdigest() != digest:
                return None
    return msgspec.structs.replace(record, reused=True)


def _write_record(path: Path, record: ShardRecord) -> None:
    """Write the resume record atomically: a re-run sees all of it or none of it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as stream:
        stream.write(msgspec.msgpack.encode(record))
        stream.flush()
        os.fsync(stream.fileno())
    temporary.replace(path)
