"""The Zarr v3 metadata and shard index of one block, made without zarr-python.

zarr-python writes a sharded array one inner chunk at a time through its async codec
pipeline: about 35 MB/s here for one-row chunks, where a shard of a block is one contiguous
buffer. The layout this format pins (one shard per array, one row per inner chunk, no
compression, index at the end) makes both files pure functions of (dtype, shape): the
metadata below is byte for byte what ``zarr.create_array`` writes for it (a test compares
the two for every numeric dtype), except that the format names the little-endian byte
order for 1-byte types too, where zarr leaves it out; and the index is arithmetic plus a
CRC32C.

Every array names its dimensions (Zarr v3 ``dimension_names``): ``row`` for axis 0, then
``<block>.dim<i>``. Without names xarray shows no variable in a shard group; with them
``xarray.open_zarr(shard, group="vin")`` gives one lazy variable per block, all sharing the
``row`` dimension. Stores written before the names were added have none, and every reader
(ours, zarr-python, TensorStore, numpy) reads both.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Final

import google_crc32c
import numpy as np

__all__ = [
    "GROUP_METADATA",
    "ROW_DIMENSION",
    "array_metadata",
    "chunk_file_path",
    "dimension_names",
    "shard_index",
    "shard_index_nbytes",
]

_LITTLE: Final = {"name": "bytes", "configuration": {"endian": "little"}}

#: ``zarr.json`` of the shard root and of every intermediate group.
GROUP_METADATA: Final = json.dumps(
    {"attributes": {}, "zarr_format": 3, "node_type": "group"}, indent=2
).encode()


#: The name of axis 0 of every block array: one row per sample of the shard.
ROW_DIMENSION: Final = "row"


def dimension_names(block: str, ndim: int) -> list[str]:
    """The ``dimension_names`` of block *block*'s array of *ndim* axes.

    Unique per block past axis 0, so that the arrays of one group open together in xarray
    (two arrays may share a dimension name only when they share its size).
    """
    return [ROW_DIMENSION, *(f"{block}.dim{axis}" for axis in range(1, ndim))]


def _fill_value(dtype: np.dtype[Any]) -> bool | int | float:
    if dtype.kind == "b":
        return False
    return 0.0 if dtype.kind == "f" else 0


def array_metadata(block: str, dtype: np.dtype[Any], shape: tuple[int, ...]) -> bytes:
    """``zarr.json`` of block *block*'s array of *shape* (rows first), as zarr-python
    writes it with :func:`dimension_names`."""
    metadata = {
        "shape": list(shape),
        "data_type": dtype.name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shape)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": _fill_value(dtype),
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [1, *shape[1:]],
                    "codecs": [_LITTLE],
                    "index_codecs": [_LITTLE, {"name": "crc32c"}],
                    "index_location": "end",
                },
            }
        ],
        "attributes": {},
        "dimension_names": dimension_names(block, len(shape)),
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": [],
    }
    return json.dumps(metadata, allow_nan=True, indent=2).encode()


def shard_index(num_rows: int, row_nbytes: int) -> bytes:
    """The sharding index that ends a chunk file: (offset, nbytes) per row, then CRC32C."""
    index = np.empty((num_rows, 2), dtype="<u8")
    index[:, 0] = np.arange(num_rows, dtype="<u8") * np.uint64(row_nbytes)
    index[:, 1] = row_nbytes
    raw = index.tobytes()
    return raw + struct.pack("<I", google_crc32c.value(raw))


def chunk_file_path(array_dir: Path, ndim: int) -> Path:
    """Return the single Zarr v3 chunk file (``c/0/.../0``) of a block array."""
    return array_dir.joinpath("c", *(["0"] * ndim))


def shard_index_nbytes(num_rows: int) -> int:
    """Byte size of the Zarr sharding index at the chunk's end: (offset, nbytes) + crc32c."""
    return 16 * num_rows + 4
