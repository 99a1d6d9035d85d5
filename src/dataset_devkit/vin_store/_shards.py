"""Per-process read handles of shard blocks: one read-only mmap per block file, no decoding.

A numeric block's chunk file is rows back to back followed by the Zarr shard index; the
handle checks once that the index really is the arithmetic layout, then row ``r`` is a view
at ``r * row_nbytes``. Handles are never pickled (the reader drops them); a forked child
reads through the mappings it inherited, which is safe for read-only ``MAP_SHARED`` maps
whose descriptors are already closed.
"""

from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.integrity import load_npy
from dataset_devkit.vin_store.errors import VinOfflineFormatError
from dataset_devkit.vin_store.spec import VinOfflineBlockSpec, check_record_offsets
from dataset_devkit.vin_store.writer import chunk_file_path, shard_index_nbytes

__all__ = ["NumericBlockHandle", "RecordBlockHandle", "check_shard_index", "open_block"]

_RECORD_DECODER = msgspec.msgpack.Decoder()


def _map_file(path: Path) -> tuple[mmap.mmap | bytes, int, tuple[int, int]]:
    try:
        # O_NONBLOCK: a FIFO in place of a block file fails the type check below, never blocks
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise VinOfflineFormatError("block file is missing", path=path) from None
    except OSError as exc:
        raise VinOfflineFormatError(f"cannot open block file: {exc.strerror}", path=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # mmap of a directory or FIFO fails with ENODEV
            raise VinOfflineFormatError("expected a regular block file", path=path)
        size = st.st_size
        identity = (st.st_dev, st.st_ino)
        if size == 0:
            return b"", 0, identity
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ), size, identity
    finally:
        os.close(fd)


def check_shard_index(
    data: Any, offset: int, num_rows: int, row_nbytes: int, path: Path | str
) -> None:
    """Check that the Zarr shard index at *offset* of *data* is the arithmetic layout
    (row ``r`` at ``r * row_nbytes``), or raise :class:`VinOfflineFormatError`."""
    index = np.frombuffer(data, "<u8", count=2 * num_rows, offset=offset).reshape(num_rows, 2)
    starts = np.arange(num_rows, dtype=np.uint64) * np.uint64(row_nbytes)
    if not (np.array_equal(index[:, 0], starts) and bool(np.all(index[:, 1] == row_nbytes))):
        raise VinOfflineFormatError(
            "the Zarr shard index is not the arithmetic row-major layout this format "
            "requires (row r at r * row_nbytes)",
            path=path,
        )


class NumericBlockHandle:
    """Rows of one numeric block of one shard, as a read-only view on its chunk file."""

    __slots__ = ("buffer", "file_nbytes", "identity", "path", "row_nbytes", "rows")

    def __init__(self, shard_dir: Path, spec: VinOfflineBlockSpec) -> None:
        shape = tuple(spec.shape or ())
        dtype = np.dtype(spec.dtype).newbyteorder("<")
        num_rows = shape[0]
        row_nbytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        self.path = chunk_file_path(shard_dir / spec.paths[0], len(shape))
        buffer, size, self.identity = _map_file(self.path)
        expected = num_rows * row_nbytes + shard_index_nbytes(num_rows)
        if size != expected:
            raise VinOfflineFormatError(
                f"expected {expected} bytes ({num_rows} rows of {row_nbytes} bytes + the "
                f"shard index), found {size}",
                path=self.path,
            )
        check_shard_index(buffer, num_rows * row_nbytes, num_rows, row_nbytes, self.path)
        flat = np.frombuffer(buffer, dtype, count=num_rows * (row_nbytes // dtype.itemsize))
        self.rows: npt.NDArray[Any] = flat.reshape(shape)
        self.row_nbytes = row_nbytes
        self.file_nbytes = size
        # Byte view for batched gathers: slicing a memoryview costs less than a numpy view.
        self.buffer = flat.view(np.uint8).data


class RecordBlockHandle:
    """Per-row MessagePack records of one shard: payload mmap plus in-memory offsets."""

    __slots__ = ("identity", "offsets", "path", "payload")

    def __init__(self, shard_dir: Path, spec: VinOfflineBlockSpec) -> None:
        num_records = (spec.shape or (0,))[0]
        self.path = shard_dir / spec.paths[0]
        offsets_path = shard_dir / spec.paths[1]
        self.payload, size, self.identity = _map_file(self.path)
        offsets = load_npy(
            offsets_path, dtype="<i8", ndim=1, what="offsets file", error=VinOfflineFormatError
        )
        check_record_offsets(offsets, num_records, size, offsets_path)
        self.offsets: list[int] = offsets.tolist()

    def raw(self, row: int) -> bytes:
        """Return the MessagePack bytes of one row."""
        return self.payload[self.offsets[row] : self.offsets[row + 1]]

    def read(self, row: int) -> Any:
        """Return the decoded record of one row."""
        try:
            return _RECORD_DECODER.decode(self.raw(row))
        except (msgspec.DecodeError, RecursionError) as exc:  # msgspec caps nesting so
            raise VinOfflineFormatError(f"row {row}: {exc}", path=self.path) from None


def open_block(
    shard_dir: Path, spec: VinOfflineBlockSpec
) -> NumericBlockHandle | RecordBlockHandle:
    """Open the handle that matches a block's kind."""
    if spec.kind == "zarr_array":
        return NumericBlockHandle(shard_dir, spec)
    return RecordBlockHandle(shard_dir, spec)
