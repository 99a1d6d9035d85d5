"""One shard, written by an executor worker, and the record that lets a re-run reuse it.

A task carries either the shard's rows (iterable builds on an executor that is not this
process's threads, and shards a re-run may reuse: the driver packed them) or the pieces of
sources to produce them from (partitioned builds: produced here, in blocks of a few MB, so
a worker holds a few blocks whatever the shard size; iterable builds on threads stream
their blocks instead, see :mod:`._stream`). Either way the worker writes the shard into
the build tree, hashing every file as written, then writes a record into the build's
state directory: the shard's key (a hash of its inputs and the options), its spec, its
files' digests and its part of the index. A re-run that finds a record with the same key,
and files that still hash to it, reuses the shard.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.integrity.stamps import file_stamp
from dataset_devkit.vin_store._rows import RowBlock, Schema, check_fields
from dataset_devkit.vin_store._shard_files import ShardFiles, ShardRecord, content_key
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.sources import VinOfflineShardSource
from dataset_devkit.vin_store.spec import SHARDS_DIR

__all__ = [
    "DIRECT_ROW_BYTES",
    "Rows",
    "ShardRecord",
    "ShardTask",
    "key_prefix",
    "probe_schema",
    "run_shard",
    "shard_id_of",
    "source_key",
    "write_record",
]

#: Rows a worker produces before writing them: one block of a few MB, packed, hashed and
#: written while it is still in cache (as an iterable build's streamed blocks). Measured on
#: the peer shape: 16 MiB blocks cost the workers twice the kernel time of 4 MiB ones
#: (copies into the page cache from memory instead of cache, fresh pages per shard).
_BLOCK_BYTES: Final = 4 << 20
#: Numeric rows at least this large go from the sample to the file without a copy.
DIRECT_ROW_BYTES: Final = 256 << 10


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
        raw_index, splits, key_hashes, tails = block.index_parts()
        return cls(
            numeric=block.numeric(),
            records={k: list(v) for k, v in block.records.items()},
            raw_index=raw_index,
            splits=splits,
            key_hashes=key_hashes,
            tails=tails,
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
    files = ShardFiles(shard_dir, task.schema, task.num_rows)
    try:
        if task.rows is not None:
            _write_rows(files, task.rows, hashes)
        else:
            _write_from_sources(task, files, shard_id)
        record = files.finish(shard_id, task.row_start, key, "")
    except BaseException:
        files.discard()
        raise
    write_record(record_path, record)
    return record


def key_prefix(task: ShardTask) -> str:
    """What a content key starts with: the options and the shard's place."""
    return f"{task.options_key}/{task.position}/{task.row_start}/"


def _rows_key(task: ShardTask, rows: Rows) -> tuple[str, dict[str, Any]]:
    hashes = {
        name: hashlib.sha256(np.ascontiguousarray(array).data)
        for name, array in rows.numeric.items()
    }
    records = {
        name: (
            len(items),
            hashlib.sha256(b"".join(items)).hexdigest(),
            np.fromiter(map(len, items), dtype="<i8", count=len(items)).tobytes(),
        )
        for name, items in rows.records.items()
    }
    parts = (rows.raw_index, rows.splits, rows.key_hashes, rows.tails)
    numeric = {name: sha.hexdigest() for name, sha in hashes.items()}
    return content_key(key_prefix(task), numeric, records, parts), hashes


def _write_rows(files: ShardFiles, rows: Rows, hashes: dict[str, Any]) -> None:
    for name, array in sorted(rows.numeric.items()):
        files.numeric[name].write(array, prehashed=hashes.get(name))
    for name, items in sorted(rows.records.items()):
        files.records[name].extend(items)
    for part, value in zip(
        files.parts, (rows.raw_index, rows.splits, rows.key_hashes, rows.tails), strict=True
    ):
        part.append(value)


def _write_from_sources(task: ShardTask, files: ShardFiles, shard_id: str) -> None:
    """Produce the shard's samples here: small rows packed into blocks of a few MB, large
    numeric rows written straight from each sample (this thread produced it and is done
    with it before asking for the next, so no copy is needed)."""
    schema = task.schema
    direct = files.direct_sinks(DIRECT_ROW_BYTES)
    buffered = schema.row_nbytes() - sum(files.numeric[name].row_nbytes for name in direct)
    capacity = max(1, min(task.num_rows, _BLOCK_BYTES // max(1, buffered)))
    block = RowBlock(schema, capacity, task.val_fraction, direct=direct)
    keys: set[str] = set()
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
                files.write_block(block)
                block.clear()
        if count != stop - start:
            raise VinOfflineSchemaError(
                f"{_describe(source)}: produce({start}, {stop}) gave {count} samples, "
                f"expected {stop - start}"
            )
    files.write_block(block)


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
    stamps = []
    for rel, size, digest in record.files:
        try:
            fd = os.open(shard_dir / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as stream:
            before = file_stamp(fd)
            if before[2] != size:
                return None
            if hashlib.file_digest(stream, "sha256").hexdigest() != digest:
                return None
            if file_stamp(fd) != before:  # changed while hashed: rewrite it
                return None
        stamps.append(before)
    return msgspec.structs.replace(record, reused=True, stamps=stamps)


def write_record(path: Path, record: ShardRecord) -> None:
    """Write the resume record atomically: a re-run sees all of it or none of it.

    Not fsynced: after a power loss a record may be lost, or outlive its shard's bytes, and
    either way the re-run rewrites the shard (it reuses one only if every file still
    hashes to the record)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with naming(path):  # a full disk names the record (a buffered write names nothing)
            temporary.write_bytes(msgspec.msgpack.encode(record))
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    temporary.replace(path)
