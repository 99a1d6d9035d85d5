"""Write one immutable shard: numeric blocks as Zarr v3 arrays, records as indexed msgpack.

Numeric blocks use one Zarr v3 sharded chunk per shard array with one row per inner chunk,
no compression, the fill value written too: the chunk file is then the rows back to back in
C order followed by the shard index, so row ``r`` starts at byte ``r * row_nbytes``. Any
Zarr v3 reader opens it; our reader mmaps it and copies a row with no decoding at all.

Rows are written as they come, block by block (one ``write`` per contiguous buffer, never
one per row), and every file is hashed from the bytes as they are written: the digests go
into the content manifest, which publication then re-verifies against the disk. The
metadata and the shard index are computed (:mod:`._zarr_meta`), not written through
zarr-python, whose per-chunk pipeline ran at 35 MB/s.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError, DestinationExistsError
from dataset_devkit.integrity.stamps import FileStamp
from dataset_devkit.vin_store._hashed import HashedFile
from dataset_devkit.vin_store._zarr_meta import (
    GROUP_METADATA,
    array_metadata,
    chunk_file_path,
    shard_index,
    shard_index_nbytes,
)
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.spec import VinOfflineBlockSpec, VinOfflineShardSpec

__all__ = [
    "NumericBlockStream",
    "RecordBlockStream",
    "VinOfflineShardWriter",
    "chunk_file_path",
    "encode_record",
    "shard_index_nbytes",
]

_RECORD_ENCODER = msgspec.msgpack.Encoder(order="deterministic")
_FLUSH_BYTES: Final = 8 << 20


def encode_record(name: str, value: Any) -> bytes:
    """MessagePack bytes of one record row (``msgspec.Raw`` is stored verbatim)."""
    try:
        return _RECORD_ENCODER.encode(value)
    except (TypeError, msgspec.EncodeError) as exc:
        raise VinOfflineSchemaError(
            f"record block {name!r} holds a value MessagePack cannot encode: {exc}", key=name
        ) from None


class NumericBlockStream:
    """Rows of one numeric block, appended in blocks or one by one; metadata and the shard
    index are written on close, so the row count may be left open until then."""

    def __init__(
        self,
        writer: VinOfflineShardWriter,
        name: str,
        dtype: np.dtype[Any],
        row_shape: tuple[int, ...],
        num_rows: int | None,
        optional: bool,
    ) -> None:
        self.writer, self.name, self.dtype, self.row_shape = writer, name, dtype, row_shape
        self.num_rows, self.optional = num_rows, optional
        self.path = VinOfflineBlockSpec.zarr_array_path(name)
        self.row_nbytes = int(np.prod(row_shape, dtype=np.int64)) * dtype.itemsize
        self.rows_written = 0
        #: SHA-256 of the rows alone (the chunk file without its index), set by close
        self.rows_sha256 = ""
        chunk = chunk_file_path(Path(self.path), 1 + len(row_shape)).as_posix()
        (writer.shard_dir / chunk).parent.mkdir(parents=True, exist_ok=True)
        self._relative = chunk
        self._file = HashedFile(writer.shard_dir / chunk)

    def _count(self, rows: int) -> None:
        if self.num_rows is not None and self.rows_written + rows > self.num_rows:
            raise VinOfflineSchemaError(
                f"block {self.name!r}: more than the {self.num_rows} rows declared", key=self.name
            )
        self.rows_written += rows

    def write(self, rows: npt.NDArray[Any], *, prehashed: Any = None) -> None:
        """Append rows (C order, this block's dtype and row shape) in one write.

        *prehashed*: a ``hashlib.sha256`` object that already hashed exactly these rows,
        as the first write of the block (a builder that hashed them for another reason
        does not hash them twice).
        """
        if rows.dtype != self.dtype or rows.shape[1:] != self.row_shape:
            raise VinOfflineSchemaError(
                f"block {self.name!r}: expected rows of {self.dtype} {self.row_shape}, "
                f"found {rows.dtype} {rows.shape[1:]}",
                key=self.name,
            )
        if not rows.shape[0]:
            return
        first = self.rows_written == 0
        self._count(rows.shape[0])
        if prehashed is not None:
            if not first:
                raise ValueError("prehashed rows must be the block's first write")
            self._file.sha = prehashed.copy()
        self._file.write(np.ascontiguousarray(rows).data, hashed=prehashed is not None)

    def write_row(self, row: npt.NDArray[Any]) -> None:
        """Append one row of the row shape straight from *row*'s memory (no copy unless it
        is not C-contiguous little-endian): large rows go to the file as they come."""
        if row.shape != self.row_shape or not np.can_cast(row.dtype, self.dtype, "equiv"):
            raise VinOfflineSchemaError(
                f"block {self.name!r}: expected a row of {self.dtype} {self.row_shape}, "
                f"found {row.dtype} {row.shape}",
                key=self.name,
            )
        self._count(1)
        self._file.write(np.ascontiguousarray(row, dtype=self.dtype).data, overlap=True)

    def abandon(self) -> None:
        """Close the file without finishing the block (its shard is being discarded)."""
        self._file.abandon()

    def close(self) -> VinOfflineBlockSpec:
        """Write the shard index and the metadata, and register the block with its writer."""
        rows = self.rows_written
        if self.num_rows is not None and rows != self.num_rows:
            raise VinOfflineSchemaError(
                f"block {self.name!r}: {rows} rows written, {self.num_rows} declared",
                key=self.name,
            )
        if rows < 1:
            raise VinOfflineSchemaError(f"block {self.name!r}: no rows written", key=self.name)
        self.rows_sha256 = self._file.sha.hexdigest()
        self._file.write(shard_index(rows, self.row_nbytes))
        self.writer.closed(self._relative, self._file)
        shape = (rows, *self.row_shape)
        self.writer.add_file(f"{self.path}/zarr.json", array_metadata(self.name, self.dtype, shape))
        spec = VinOfflineBlockSpec.for_zarr_array(
            self.name, self.path, self.dtype.name, list(shape), optional=self.optional
        )
        self.writer.blocks[self.name] = spec
        return spec


class RecordBlockStream:
    """Rows of one record block (already encoded MessagePack), appended in order; the
    offsets file is written on close, so the row count may be left open until then."""

    def __init__(
        self, writer: VinOfflineShardWriter, name: str, num_records: int | None, optional: bool
    ) -> None:
        self.writer, self.name, self.optional = writer, name, optional
        self.num_records = num_records
        self.paths = (
            VinOfflineBlockSpec.msgpack_records_path(name),
            VinOfflineBlockSpec.msgpack_records_offsets_path(name),
        )
        self.offsets = np.zeros((num_records or 1023) + 1, dtype="<i8")
        self.count = 0
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._file = HashedFile(writer.shard_dir / self.paths[0])

    def _room(self, more: int) -> None:
        wanted = self.count + more
        if self.num_records is not None and wanted > self.num_records:
            raise VinOfflineSchemaError(
                f"record block {self.name!r}: more than the {self.num_records} rows declared",
                key=self.name,
            )
        if wanted + 1 > self.offsets.shape[0]:
            grown = np.zeros(max(wanted + 1, 2 * self.offsets.shape[0]), dtype="<i8")
            grown[: self.count + 1] = self.offsets[: self.count + 1]
            self.offsets = grown

    def append(self, encoded: bytes) -> None:
        """Append one row's MessagePack bytes."""
        self._room(1)
        self._pending.append(encoded)
        self._pending_bytes += len(encoded)
        self.count += 1
        self.offsets[self.count] = self.offsets[self.count - 1] + len(encoded)
        if self._pending_bytes >= _FLUSH_BYTES:
            self._flush()

    def extend(self, encoded: Sequence[bytes]) -> None:
        """Append many rows' MessagePack bytes in one write."""
        if not encoded:
            return
        self._room(len(encoded))
        lengths = np.fromiter(map(len, encoded), dtype="<i8", count=len(encoded))
        start = self.count
        np.cumsum(lengths, out=self.offsets[start + 1 : start + 1 + len(encoded)])
        self.offsets[start + 1 : start + 1 + len(encoded)] += self.offsets[start]
        self.count += len(encoded)
        self._flush()
        self._file.write(b"".join(encoded))

    def _flush(self) -> None:
        if self._pending:
            self._file.write(b"".join(self._pending))
            self._pending.clear()
            self._pending_bytes = 0

    def abandon(self) -> None:
        """Close the file without finishing the block (its shard is being discarded)."""
        self._file.abandon()

    def close(self) -> VinOfflineBlockSpec:
        """Write the offsets file and register the block with its writer."""
        if self.num_records is not None and self.count != self.num_records:
            raise VinOfflineSchemaError(
                f"record block {self.name!r}: {self.count} rows written, "
                f"{self.num_records} declared",
                key=self.name,
            )
        if self.count < 1:
            raise VinOfflineSchemaError(f"record block {self.name!r} has no rows", key=self.name)
        self._flush()
        self.writer.closed(self.paths[0], self._file)
        stream = io.BytesIO()
        np.save(stream, self.offsets[: self.count + 1], allow_pickle=False)
        self.writer.add_file(self.paths[1], stream.getvalue())
        spec = VinOfflineBlockSpec.for_indexed_msgpack_records(
            self.name, *self.paths, self.count, optional=self.optional
        )
        self.writer.blocks[self.name] = spec
        return spec


class VinOfflineShardWriter:
    """Write the blocks of one shard into a directory it creates exclusively.

    Parameters
    ----------
    shard_dir
        The shard directory; it must not exist (a shard is never overwritten).

    Attributes
    ----------
    files
        Shard-relative POSIX path -> (size, SHA-256) of every file written, hashed from
        the bytes as they were written.
    stamps
        Shard-relative POSIX path -> the file's stamp once written (see
        :func:`~dataset_devkit.integrity.stamps.file_stamp`).
    """

    def __init__(self, shard_dir: Path) -> None:
        self.shard_dir = Path(shard_dir)
        try:
            self.shard_dir.mkdir()
        except FileExistsError:
            raise DestinationExistsError(f"{self.shard_dir}: shard already exists") from None
        self.blocks: dict[str, VinOfflineBlockSpec] = {}
        self.files: dict[str, tuple[int, str]] = {}
        self.stamps: dict[str, FileStamp] = {}
        self._claimed: set[str] = set()
        self.add_file("zarr.json", GROUP_METADATA)

    def add_file(self, relative: str, data: bytes) -> None:
        """Write one small file of the shard exclusively, creating its directories."""
        path = self.shard_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = HashedFile(path)
        try:
            handle.write(data)
        finally:
            self.closed(relative, handle)

    def closed(self, relative: str, handle: HashedFile) -> None:
        """Close *handle*, the file at *relative*, and record its digest and stamp."""
        self.files[relative] = handle.close()
        assert handle.stamp is not None
        self.stamps[relative] = handle.stamp

    def _claim(self, name: str) -> None:
        if name in self._claimed:
            raise ConfigError(f"block {name!r} was already written to {self.shard_dir}", key=name)
        self._claimed.add(name)

    def _groups(self, path: str) -> None:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            group = "/".join([*parts[:depth], "zarr.json"])
            if group not in self.files:
                self.add_file(group, GROUP_METADATA)

    def open_numeric_block(
        self,
        name: str,
        dtype: npt.DTypeLike,
        row_shape: tuple[int, ...],
        num_rows: int | None,
        *,
        optional: bool = False,
    ) -> NumericBlockStream:
        """Start a numeric block of *num_rows* rows of *row_shape*; write rows, then close.

        *num_rows* None: as many rows as are written before ``close`` (at least one).
        """
        dt = np.dtype(dtype)
        dt = dt.newbyteorder("<") if dt.byteorder == ">" else dt
        path = VinOfflineBlockSpec.zarr_array_path(name)
        try:  # validates the name and dtype before anything is written
            VinOfflineBlockSpec.for_zarr_array(
                name, path, dt.name, [num_rows or 1, *row_shape], optional=optional
            )
        except ValueError as exc:
            raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        if (num_rows is not None and num_rows < 1) or dt.itemsize * int(
            np.prod(row_shape, dtype=np.int64)
        ) == 0:
            raise VinOfflineSchemaError(
                f"block {name!r} needs at least one row of non-zero size, found "
                f"{(num_rows, *row_shape)}",
                key=name,
            )
        self._claim(name)
        if (self.shard_dir / path).exists():
            raise DestinationExistsError(f"{self.shard_dir / path}: block path already exists")
        self._groups(path)
        return NumericBlockStream(self, name, dt, tuple(row_shape), num_rows, optional)

    def write_numeric_block(
        self, name: str, array: npt.ArrayLike, *, optional: bool = False
    ) -> VinOfflineBlockSpec:
        """Store a fixed-shape numeric block; axis 0 is the shard row."""
        data = np.asarray(array)
        if data.dtype.byteorder == ">":
            data = data.astype(data.dtype.newbyteorder("<"))
        if data.ndim < 1:
            raise VinOfflineSchemaError(
                f"block {name!r} needs at least one row of non-zero size, found {data.shape}",
                key=name,
            )
        stream = self.open_numeric_block(
            name, data.dtype, data.shape[1:], data.shape[0], optional=optional
        )
        stream.write(data)
        return stream.close()

    def open_record_block(
        self, name: str, num_records: int | None, *, optional: bool = True
    ) -> RecordBlockStream:
        """Start a record block of *num_records* rows; append encoded rows, then close.

        *num_records* None: as many rows as are appended before ``close`` (at least one).
        """
        payload_name = VinOfflineBlockSpec.msgpack_records_path(name)
        offsets_name = VinOfflineBlockSpec.msgpack_records_offsets_path(name)
        try:
            VinOfflineBlockSpec.for_indexed_msgpack_records(
                name, payload_name, offsets_name, num_records or 1, optional=optional
            )
        except ValueError as exc:
            raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        if num_records is not None and num_records < 1:
            raise VinOfflineSchemaError(f"record block {name!r} has no rows", key=name)
        self._claim(name)
        return RecordBlockStream(self, name, num_records, optional)

    def write_record_block(
        self, name: str, records: Sequence[Any], *, optional: bool = True
    ) -> VinOfflineBlockSpec:
        """Store one MessagePack record per row: a payload blob plus int64 offsets."""
        encoded = [encode_record(name, record) for record in records]
        stream = self.open_record_block(name, len(encoded), optional=optional)
        stream.extend(encoded)
        return stream.close()

    def finish(self, shard_id: str, relative_dir: str, row_start: int) -> VinOfflineShardSpec:
        """Return the shard descriptor once every block has the same row count."""
        rows = {(spec.shape or (0,))[0] for spec in self.blocks.values()}
        if len(rows) != 1:
            raise VinOfflineSchemaError(
                f"shard {shard_id} blocks disagree on the row count: {sorted(rows)}"
            )
        return VinOfflineShardSpec(
            shard_id=shard_id,
            relative_dir=relative_dir,
            row_start=row_start,
            num_rows=rows.pop(),
            blocks=dict(sorted(self.blocks.items())),
        )
