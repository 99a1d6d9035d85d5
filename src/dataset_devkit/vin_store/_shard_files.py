"""One shard's files written as its rows arrive, and the record that lets a re-run reuse it.

Rows come in blocks packed elsewhere (one ``write`` per block and file) or, for large
numeric rows, one at a time straight from the sample's memory. Every file is hashed as it
is written; the shard's content key (for an iterable build's resume) is derived from those
same digests, so it equals the key the driver computes from a whole shard's rows
(:func:`content_key`), and nothing is hashed twice.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.vin_store._rows import RowBlock, Schema
from dataset_devkit.vin_store.spec import SHARDS_DIR, VinOfflineShardSpec
from dataset_devkit.vin_store.writer import (
    NumericBlockStream,
    RecordBlockStream,
    VinOfflineShardWriter,
)

__all__ = ["ShardFiles", "ShardRecord", "content_key"]


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
    #: Each file's stamp (as ``files``) once written or, for a reused shard, re-hashed.
    stamps: list[tuple[int, int, int, int]] = []


def content_key(
    prefix: str,
    numeric: Mapping[str, str],
    records: Mapping[str, tuple[int, str, bytes]],
    parts: Iterable[bytes],
) -> str:
    """Key of a shard by its content: *prefix* (options, position, first row), each numeric
    block's rows digest, each record block's (count, payload digest, int64 lengths), and
    the index parts."""
    key = hashlib.sha256(prefix.encode())
    for name, digest in sorted(numeric.items()):
        key.update(f"{name}:{digest}/".encode())
    for name, (count, digest, lengths) in sorted(records.items()):
        key.update(f"{name}:{count}:".encode())
        key.update(bytes.fromhex(digest))
        key.update(lengths)
    for part in parts:
        key.update(hashlib.sha256(part).digest())
    return key.hexdigest()


class ShardFiles:
    """The block files of one shard, open until :meth:`finish` (or :meth:`discard`).

    *num_rows* None leaves the row count open: a streamed shard learns it at its end.
    A directory left at *shard_dir* by an interrupted run is removed first.
    """

    def __init__(self, shard_dir: Path, schema: Schema, num_rows: int | None) -> None:
        self.shard_dir = shard_dir
        if shard_dir.exists():
            shutil.rmtree(shard_dir)
        self.writer = VinOfflineShardWriter(shard_dir)
        self.numeric: dict[str, NumericBlockStream] = {}
        self.records: dict[str, RecordBlockStream] = {}
        try:
            for name, (dtype, shape) in sorted(schema.arrays.items()):
                stream = self.writer.open_numeric_block(name, dtype, shape, num_rows)
                self.numeric[name] = stream
            for name in sorted(schema.record_nbytes):
                self.records[name] = self.writer.open_record_block(name, num_rows)
        except BaseException:
            self.discard()
            raise
        self.parts: tuple[list[bytes], ...] = ([], [], [], [])

    def direct_sinks(self, min_row_nbytes: int) -> dict[str, Callable[[npt.NDArray[Any]], None]]:
        """Row writers of the numeric blocks whose rows are at least *min_row_nbytes*."""
        return {
            name: stream.write_row
            for name, stream in self.numeric.items()
            if stream.row_nbytes >= min_row_nbytes
        }

    def write_block(self, block: RowBlock) -> None:
        """Append the rows of *block* (its direct blocks were written row by row already)."""
        if not block.count:
            return
        for name, rows in block.numeric().items():
            self.numeric[name].write(rows)
        for name, items in block.records.items():
            self.records[name].extend(items)
        for part, value in zip(self.parts, block.index_parts(), strict=True):
            part.append(value)

    def finish(self, shard_id: str, row_start: int, key: str | None, prefix: str) -> ShardRecord:
        """Close every file; the shard's record, keyed by *key*, or else by its content
        under *prefix* (see :func:`content_key`)."""
        for numeric in self.numeric.values():
            numeric.close()
        for records in self.records.values():
            records.close()
        spec = self.writer.finish(shard_id, f"{SHARDS_DIR}/{shard_id}", row_start)
        raw_index, splits, key_hashes, tails = (b"".join(part) for part in self.parts)
        if key is None:
            key = content_key(
                prefix,
                {name: stream.rows_sha256 for name, stream in self.numeric.items()},
                {
                    name: (
                        stream.count,
                        self.writer.files[stream.paths[0]][1],
                        np.diff(stream.offsets[: stream.count + 1]).astype("<i8").tobytes(),
                    )
                    for name, stream in self.records.items()
                },
                (raw_index, splits, key_hashes, tails),
            )
        files = [(rel, size, digest) for rel, (size, digest) in sorted(self.writer.files.items())]
        return ShardRecord(
            key=key,
            spec=spec,
            files=files,
            raw_index=raw_index,
            splits=splits,
            key_hashes=key_hashes,
            tails=tails,
            stamps=[self.writer.stamps[rel] for rel, _, _ in files],
        )

    def discard(self) -> None:
        """Close whatever is open and remove the shard directory (a failed or cut shard)."""
        for numeric in self.numeric.values():
            numeric.abandon()
        for records in self.records.values():
            records.abandon()
        shutil.rmtree(self.shard_dir, ignore_errors=True)
