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
from dataset_devkit.vin_store._hashed import HashedFile
from dataset_devkit.vin_store._zarr_meta import GROUP_METADATA, array_metadata, shard_index
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


def chunk_file_path(array_dir: Path, ndim: int) -> Path:
    """Return the single Zarr v3 chunk file (``c/0/.../0``) of a block array."""
    return array_dir.joinpath("c", *(["0"] * ndim))


def shard_index_nbytes(num_rows: int) -> int:
    """Byte size of the Zarr sharding index at the chunk's end: (offset, nbytes) + crc32c."""
    return 16 * num_rows + 4


def encode_record(name: str, value: Any) -> bytes:
    """MessagePack bytes of one record row (``msgspec.Raw`` is stored verbatim)."""
    try:
        return _RECORD_ENCODER.encode(value)
    except (TypeError, msgspec.EncodeError) as exc:
        raise VinOfflineSchemaError(
            f"record block {name!r} holds a value MessagePack cannot encode: {exc}", key=name
        ) from None


class NumericBlockStream:
    """Rows of one numeric block, appended in blocks; the shard index is added on close."""

    def __init__(
        self, writer: VinOfflineShardWriter, spec: VinOfflineBlockSpec, dtype: np.dtype[Any]
    ) -> None:
        self.writer, self.spec, self.dtype = writer, spec, dtype
        shape = tuple(spec.shape or ())
        self.num_rows, self.row_shape = shape[0], shape[1:]
        self.row_nbytes = int(np.prod(self.row_shape, dtype=np.int64)) * dtype.itemsize
        self.rows_written = 0
        path = spec.paths[0]
        writer.add_file(f"{path}/zarr.json", array_metadata(dtype, shape))
        chunk = chunk_file_path(Path(path), len(shape)).as_posix()
        (writer.shard_dir / chunk).parent.mkdir(parents=True, exist_ok=True)
        self._relative = chunk
        self._file = HashedFile(writer.shard_dir / chunk)

    def write(self, rows: npt.NDArray[Any], *, prehashed: Any = None) -> None:
        """Append rows (C order, this block's dtype and row shape) in one write.

        *prehashed*: a ``hashlib.sha256`` object that already hashed exactly these rows,
        as the first write of the block (a builder that hashed them for another reason
        does not hash them twice).
        """
        if rows.dtype != self.dtype or rows.shape[1:] != self.row_shape:
            raise VinOfflineSchemaError(
                f"block {self.spec.name!r}: expected rows of {self.dtype} {self.row_shape}, "
                f"found {rows.dtype} {rows.shape[1:]}",
                key=self.spec.name,
            )
        if self.rows_written + rows.shape[0] > self.num_rows:
            raise VinOfflineSchemaError(
                f"block {self.spec.name!r}: more than the {self.num_rows} rows declared",
                key=self.spec.name,
            )
        if not rows.shape[0]:
            return
        if prehashed is not None:
            if self.rows_written:
                raise ValueError("prehashed rows must be the block's first write")
            self._file.sha = prehashed.copy()
        self._file.write(np.ascontiguousarray(rows).data, hashed=prehashed is not None)
        self.rows_written += rows.shape[0]

    def close(self) -> VinOfflineBlockSpec:
        """Write the shard index, sync, and register the block with its writer."""
        if self.rows_written != self.num_rows:
            raise VinOfflineSchemaError(
                f"block {self.spec.name!r}: {self.rows_written} rows written, "
                f"{self.num_rows} declared",
                key=self.spec.name,
            )
        self._file.write(shard_index(self.num_rows, self.row_nbytes))
        self.writer.files[self._relative] = self._file.close()
        self.writer.blocks[self.spec.name] = self.spec
        return self.spec


class RecordBlockStream:
    """Rows of one record block (already encoded MessagePack), appended one at a time."""

    def __init__(self, writer: VinOfflineShardWriter, spec: VinOfflineBlockSpec) -> None:
        self.writer, self.spec = writer, spec
        self.num_records = (spec.shape or (0,))[0]
        self.offsets = np.zeros(self.num_records + 1, dtype="<i8")
        self.count = 0
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._file = HashedFile(writer.shard_dir / spec.paths[0])

    def append(self, encoded: bytes) -> None:
        """Append one row's MessagePack bytes."""
        if self.count == self.num_records:
            raise VinOfflineSchemaError(
                f"record block {self.spec.name!r}: more than the {self.num_records} rows declared",
                key=self.spec.name,
            )
        self._pending.append(encoded)
        self._pending_bytes += len(encoded)
        self.count += 1
        self.offsets[self.count] = self.offsets[self.count - 1] + len(encoded)
        if self._pending_bytes >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._file.write(b"".join(self._pending))
            self._pending.clear()
            self._pending_bytes = 0

    def close(self) -> VinOfflineBlockSpec:
        """Write the offsets file and register the block with its writer."""
        if self.count != self.num_records:
            raise VinOfflineSchemaError(
                f"record block {self.spec.name!r}: {self.count} rows written, "
                f"{self.num_records} declared",
                key=self.spec.name,
            )
        self._flush()
        self.writer.files[self.spec.paths[0]] = self._file.close()
        stream = io.BytesIO()
        np.save(stream, self.offsets, allow_pickle=False)
        self.writer.add_file(self.spec.paths[1], stream.getvalue())
        self.writer.blocks[self.spec.name] = self.spec
        return self.spec


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
    """

    def __init__(self, shard_dir: Path) -> None:
        self.shard_dir = Path(shard_dir)
        try:
            self.shard_dir.mkdir()
        except FileExistsError:
            raise DestinationExistsError(f"{self.shard_dir}: shard already exists") from None
        self.blocks: dict[str, VinOfflineBlockSpec] = {}
        self.files: dict[str, tuple[int, str]] = {}
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
            self.files[relative] = handle.close()

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
        num_rows: int,
        *,
        optional: bool = False,
    ) -> NumericBlockStream:
        """Start a numeric block of *num_rows* rows of *row_shape*; write rows, then close."""
        dt = np.dtype(dtype)
        dt = dt.newbyteorder("<") if dt.byteorder == ">" else dt
        path = VinOfflineBlockSpec.zarr_array_path(name)
        try:  # validates the name and dtype before anything is written
            spec = VinOfflineBlockSpec.for_zarr_array(
                name, path, dt.name, [num_rows, *row_shape], optional=optional
            )
        except ValueError as exc:
            raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        if num_rows < 1 or dt.itemsize * int(np.prod(row_shape, dtype=np.int64)) == 0:
            raise VinOfflineSchemaError(
                f"block {name!r} needs at least one row of non-zero size, found "
                f"{(num_rows, *row_shape)}",
                key=name,
            )
        self._claim(name)
        if (self.shard_dir / path).exists():
            raise DestinationExistsError(f"{self.shard_dir / path}: block path already exists")
        self._groups(path)
        return NumericBlockStream(self, spec, dt)

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
        self, name: str, num_records: int, *, optional: bool = True
    ) -> RecordBlockStream:
        """Start a record block of *num_records* rows; append encoded rows, then close."""
        payload_name = VinOfflineBlockSpec.msgpack_records_path(name)
        offsets_name = VinOfflineBlockSpec.msgpack_records_offsets_path(name)
        try:
            spec = VinOfflineBlockSpec.for_indexed_msgpack_records(
                name, payload_name, offsets_name, num_records, optional=optional
            )
        except ValueError as exc:
            raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        if num_records < 1:
            raise VinOfflineSchemaError(f"record block {name!r} has no rows", key=name)
        self._claim(name)
        return RecordBlockStream(self, spec)

    def write_record_block(
        self, name: str, records: Sequence[Any], *, optional: bool = True
    ) -> VinOfflineBlockSpec:
        """Store one MessagePack record per row: a payload blob plus int64 offsets."""
        encoded = [encode_record(name, record) for record in records]
        stream = self.open_record_block(name, len(encoded), optional=optional)
        for item in encoded:
            stream.append(item)
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
