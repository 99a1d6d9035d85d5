"""The driver's side of the index: shard records in, index files out, in bounded memory.

Shard records arrive in shard order. Their lines go straight to ``sample_index.jsonl``
(hashed as written); what stays in memory is the compact index itself: an int64 sample
index, a uint8 split code and a uint64 key hash per sample (17 bytes; 170 MB for ten
million samples), from which the sidecar, the split files and the duplicate-key check are
made at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.integrity.stamps import FileStamp
from dataset_devkit.vin_store._hashed import HashedFile
from dataset_devkit.vin_store._rows import SPLIT_CODES
from dataset_devkit.vin_store._shard_task import ShardRecord
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.spec import (
    SAMPLE_INDEX_NAME,
    SAMPLE_INDEX_SIDECAR_NAME,
    SPLIT_NAMES,
    SPLITS_DIR,
)

#: ``np.save``'s own writer (the same bytes), into a file that hashes what it writes.
write_array: Callable[..., None] = np.lib.format.write_array

__all__ = ["IndexWriter", "resolve_indices"]

_CHUNK_BYTES = 4 << 20


def resolve_indices(raw: npt.NDArray[np.int64], last: int) -> npt.NDArray[np.int64]:
    """Fill implicit entries (-1) with the previous sample's index + 1, as a running count."""
    n = raw.shape[0]
    position = np.arange(n, dtype=np.int64)
    anchor = np.where(raw >= 0, position, -1)
    np.maximum.accumulate(anchor, out=anchor)
    base = np.where(anchor >= 0, raw[np.maximum(anchor, 0)], last)
    resolved: npt.NDArray[np.int64] = base + (position - anchor)
    return resolved


class IndexWriter:
    """Stream ``sample_index.jsonl`` from shard records; write sidecar and splits at the end."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self._jsonl = HashedFile(tree / SAMPLE_INDEX_NAME)
        self._indices: list[npt.NDArray[np.int64]] = []
        self._splits: list[npt.NDArray[np.uint8]] = []
        self._hashes: list[npt.NDArray[np.uint64]] = []
        self.last = -1
        self.count = 0
        self.files: dict[str, tuple[int, str]] = {}
        self.stamps: dict[str, FileStamp] = {}

    def add(self, record: ShardRecord) -> None:
        """Append one shard's lines, checking its sample indices continue to increase."""
        raw = np.frombuffer(record.raw_index, dtype="<i8")
        resolved = resolve_indices(raw, self.last)
        previous = np.concatenate([[self.last], resolved[:-1]])
        bad = np.flatnonzero(resolved <= previous)
        if bad.size:
            j = int(bad[0])
            tail = record.tails.split(b"\n")[j]  # an error: the whole split is fine here
            key = msgspec.json.decode(b"{" + tail)["sample_key"]
            raise VinOfflineSchemaError(
                f"sample {key!r}: sample_index must be >= 0 and increase, found "
                f"{int(resolved[j])}" + (f" after {int(previous[j])}" if previous[j] >= 0 else ""),
                key="sample_index",
            )
        tails, start, done = record.tails, 0, 0
        while start < len(tails):  # a few MB of lines at a time, never a shard's worth
            cut = tails.find(b"\n", start + _CHUNK_BYTES)
            end = len(tails) if cut < 0 else cut + 1
            lines = tails[start:end].split(b"\n")[:-1]
            indices = resolved[done : done + len(lines)].tolist()
            self._jsonl.write(
                b"".join(
                    [
                        b'{"sample_index":%d,%b\n' % (index, tail)
                        for index, tail in zip(indices, lines, strict=True)
                    ]
                )
            )
            start, done = end, done + len(lines)
        if done != resolved.shape[0]:
            raise VinOfflineSchemaError(
                f"{record.spec.shard_id}: {done} index lines for {resolved.shape[0]} rows"
            )
        self._indices.append(resolved)
        self._splits.append(np.frombuffer(record.splits, dtype="u1"))
        self._hashes.append(np.frombuffer(record.key_hashes, dtype="<u8"))
        self.last = int(resolved[-1])
        self.count += resolved.shape[0]

    def abandon(self) -> None:
        """Close the lines file if the build stops before :meth:`finish` (no result)."""
        self._jsonl.abandon()

    def finish(self) -> dict[str, int]:
        """Close the lines, check keys are unique, write sidecar and splits; split sizes."""
        self._closed(SAMPLE_INDEX_NAME, self._jsonl)
        self._check_unique_keys()
        indices = np.concatenate(self._indices) if self._indices else np.empty(0, "<i8")
        splits = np.concatenate(self._splits) if self._splits else np.empty(0, "u1")
        self._indices, self._splits = [indices], [splits]
        self._save(SAMPLE_INDEX_SIDECAR_NAME, indices)
        (self.tree / SPLITS_DIR).mkdir()
        sizes = {}
        for name in SPLIT_NAMES:
            values = indices if name == "all" else indices[splits == SPLIT_CODES[name]]
            self._save(f"{SPLITS_DIR}/{name}.npy", values)
            sizes[name] = int(values.shape[0])
        return sizes

    def _save(self, relative: str, values: npt.NDArray[Any]) -> None:
        handle = HashedFile(self.tree / relative)
        try:
            array = np.ascontiguousarray(values, "<i8")
            write_array(handle, array, allow_pickle=False)
        finally:
            self._closed(relative, handle)

    def _closed(self, relative: str, handle: HashedFile) -> None:
        self.files[relative] = handle.close()
        assert handle.stamp is not None
        self.stamps[relative] = handle.stamp

    def _check_unique_keys(self) -> None:
        hashes = np.concatenate(self._hashes) if self._hashes else np.empty(0, "<u8")
        self._hashes = []
        ordered = np.sort(hashes)
        if not bool(np.any(ordered[1:] == ordered[:-1])):
            return  # the common case, in 8 bytes per sample plus one sorted copy
        del ordered
        order = np.argsort(hashes, kind="stable")
        same = np.flatnonzero(hashes[order[1:]] == hashes[order[:-1]])
        wanted = {int(order[i]): int(order[i + 1]) for i in same.tolist()}
        keys: dict[int, str] = {}
        positions = set(wanted) | set(wanted.values())
        with open(self.tree / SAMPLE_INDEX_NAME, "rb") as stream:
            for number, line in enumerate(stream):
                if number in positions:
                    keys[number] = msgspec.json.decode(line)["sample_key"]
                if number >= max(positions):
                    break
        for first, second in sorted(wanted.items()):
            if keys[first] == keys[second]:  # not merely a 64-bit hash collision
                raise VinOfflineSchemaError(f"sample_key {keys[first]!r} appears twice")
