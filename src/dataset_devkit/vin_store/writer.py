"""Write one immutable shard: numeric blocks as Zarr v3 arrays, records as indexed msgpack.

Numeric blocks use one Zarr v3 sharded chunk per shard array with one row per inner chunk,
no compression, the fill value written too: the chunk file is then the rows back to back in
C order followed by the shard index, so row ``r`` starts at byte ``r * row_nbytes``. Any
Zarr v3 reader opens it; our reader mmaps it and copies a row with no decoding at all.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError, DestinationExistsError
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.spec import VinOfflineBlockSpec, VinOfflineShardSpec

__all__ = ["VinOfflineShardWriter", "chunk_file_path", "shard_index_nbytes"]

_RECORD_ENCODER = msgspec.msgpack.Encoder(order="deterministic")


def chunk_file_path(array_dir: Path, ndim: int) -> Path:
    """Return the single Zarr v3 chunk file (``c/0/.../0``) of a block array."""
    return array_dir.joinpath("c", *(["0"] * ndim))


def shard_index_nbytes(num_rows: int) -> int:
    """Byte size of the Zarr sharding index at the chunk's end: (offset, nbytes) + crc32c."""
    return 16 * num_rows + 4


class VinOfflineShardWriter:
    """Write the blocks of one shard into a directory it creates exclusively.

    Parameters
    ----------
    shard_dir
        The shard directory; it must not exist (a shard is never overwritten).
    """

    def __init__(self, shard_dir: Path) -> None:
        self.shard_dir = Path(shard_dir)
        try:
            self.shard_dir.mkdir()
        except FileExistsError:
            raise DestinationExistsError(f"{self.shard_dir}: shard already exists") from None
        self.blocks: dict[str, VinOfflineBlockSpec] = {}

    def _claim(self, name: str) -> None:
        if name in self.blocks:
            raise ConfigError(f"block {name!r} was already written to {self.shard_dir}", key=name)

    def write_numeric_block(
        self, name: str, array: npt.ArrayLike, *, optional: bool = False
    ) -> VinOfflineBlockSpec:
        """Store a fixed-shape numeric block; axis 0 is the shard row."""
        import zarr  # heavy; only writers need it
        from zarr.storage import LocalStore

        self._claim(name)
        data = np.ascontiguousarray(array)
        dtype = data.dtype.newbyteorder("<") if data.dtype.byteorder == ">" else data.dtype
        data = data.astype(dtype, copy=False)
        path = VinOfflineBlockSpec.zarr_array_path(name)
        try:  # validates the name and dtype before anything is written
            spec = VinOfflineBlockSpec.for_zarr_array(
                name, path, dtype.name, list(data.shape), optional=optional
            )
        except ValueError as exc:
            raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        if data.ndim < 1 or data.shape[0] < 1 or data[:1].nbytes == 0:
            raise VinOfflineSchemaError(
                f"block {name!r} needs at least one row of non-zero size, found {data.shape}",
                key=name,
            )
        if (self.shard_dir / path).exists():
            raise DestinationExistsError(f"{self.shard_dir / path}: block path already exists")
        array_obj = zarr.create_array(
            store=LocalStore(self.shard_dir),
            name=path,
            shape=data.shape,
            dtype=dtype,
            chunks=(1, *data.shape[1:]),
            shards=data.shape,
            compressors=None,
            filters=None,
            fill_value=0,
            config={"write_empty_chunks": True},
            overwrite=False,
        )
        array_obj[...] = data
        expected = data.nbytes + shard_index_nbytes(data.shape[0])
        written = chunk_file_path(self.shard_dir / path, data.ndim).stat().st_size
        if written != expected:  # a zarr change in layout must never go unnoticed
            raise ConfigError(f"zarr wrote {written} bytes for {name!r}, expected {expected}")
        self.blocks[name] = spec
        return spec

    def write_record_block(
        self, name: str, records: Sequence[Any], *, optional: bool = True
    ) -> VinOfflineBlockSpec:
        """Store one MessagePack record per row: a payload blob plus int64 offsets."""
        self._claim(name)
        payload_name = VinOfflineBlockSpec.msgpack_records_path(name)
        offsets_name = VinOfflineBlockSpec.msgpack_records_offsets_path(name)
        try:
            spec = VinOfflineBlockSpec.for_indexed_msgpack_records(
                name, payload_name, offsets_name, len(records), optional=optional
            )
        except ValueError as exc:
            raise VinOfflineSchemaError(f"block {name!r}: {exc}", key=name) from None
        if not records:
            raise VinOfflineSchemaError(f"record block {name!r} has no rows", key=name)
        offsets = np.zeros(len(records) + 1, dtype="<i8")
        try:
            encoded = [_RECORD_ENCODER.encode(record) for record in records]
        except (TypeError, msgspec.EncodeError) as exc:
            raise VinOfflineSchemaError(
                f"record block {name!r} holds a value MessagePack cannot encode: {exc}", key=name
            ) from None
        np.cumsum([len(item) for item in encoded], out=offsets[1:])
        try:
            with (self.shard_dir / payload_name).open("xb") as stream:
                stream.write(b"".join(encoded))
                os.fsync(stream.fileno())
            with (self.shard_dir / offsets_name).open("xb") as stream:
                np.save(stream, offsets, allow_pickle=False)
        except FileExistsError as exc:
            raise DestinationExistsError(f"{exc.filename}: record file already exists") from None
        self.blocks[name] = spec
        return spec

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
