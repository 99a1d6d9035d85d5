"""Per-process read handles of shard blocks: one read-only mmap per block file, no decoding.

A numeric block's chunk file is rows back to back followed by the Zarr shard index; the
handle checks once that the index really is the arithmetic layout, then row ``r`` is a view
at ``r * row_nbytes``. Handles are never pickled (the reader drops them); a forked child
reads through the mappings it inherited, which is safe for read-only ``MAP_SHARED`` maps
whose descriptors are already closed.
"""

from __future__ import annotations

import functools
import itertools
import mmap
import os
import stat
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.integrity import load_npy
from dataset_devkit.integrity.reads import read_expected
from dataset_devkit.vin_store._span import BlockSpan
from dataset_devkit.vin_store._zarr_meta import chunk_file_path, shard_index, shard_index_nbytes
from dataset_devkit.vin_store.errors import VinOfflineFormatError
from dataset_devkit.vin_store.spec import VinOfflineBlockSpec, check_record_offsets

__all__ = ["NumericBlockHandle", "RecordBlockHandle", "check_shard_index", "open_block"]

_RECORD_DECODER = msgspec.msgpack.Decoder()


def _open_block_file(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of a regular block file and its ``fstat`` (the caller closes it)."""
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
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _map_file(path: Path) -> tuple[mmap.mmap | bytes, int, tuple[int, int]]:
    fd, st = _open_block_file(path)
    try:
        identity = (st.st_dev, st.st_ino)
        if st.st_size == 0:
            return b"", 0, identity
        return mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ), st.st_size, identity
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=64)
def _arithmetic_index(num_rows: int, row_nbytes: int) -> bytes:
    """The (offset, nbytes) pairs a chunk file of this shape ends with (before the CRC32C):
    made once per shape, so checking a shard's index is one comparison of bytes."""
    return shard_index(num_rows, row_nbytes)[:-4]


def check_shard_index(
    data: Any, offset: int, num_rows: int, row_nbytes: int, path: Path | str
) -> None:
    """Check that the Zarr shard index at *offset* of *data* is the arithmetic layout
    (row ``r`` at ``r * row_nbytes``), or raise :class:`VinOfflineFormatError`."""
    if bytes(data[offset : offset + 16 * num_rows]) != _arithmetic_index(num_rows, row_nbytes):
        raise VinOfflineFormatError(
            "the Zarr shard index is not the arithmetic row-major layout this format "
            "requires (row r at r * row_nbytes)",
            path=path,
        )


class NumericBlockHandle:
    """Rows of one numeric block of one shard, as a read-only view on its chunk file.

    Given the block's :class:`BlockSpan`, the rows are mapped straight into the shard's
    slot of it, through the one descriptor that also reads the shard index (one ``pread``):
    a worker opening a shard makes one mapping per block, not two.
    """

    __slots__ = ("buffer", "file_nbytes", "identity", "path", "row_nbytes", "rows")

    def __init__(
        self,
        shard_dir: Path,
        spec: VinOfflineBlockSpec,
        span: BlockSpan | None = None,
        shard: int = 0,
    ) -> None:
        shape = tuple(spec.shape or ())
        dtype = np.dtype(spec.dtype).newbyteorder("<")
        num_rows = shape[0]
        row_nbytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        rows_nbytes = num_rows * row_nbytes
        self.path = chunk_file_path(shard_dir / spec.paths[0], len(shape))
        fd, st = _open_block_file(self.path)
        try:
            size = st.st_size
            self.identity = (st.st_dev, st.st_ino)
            expected = rows_nbytes + shard_index_nbytes(num_rows)
            if size != expected:
                raise VinOfflineFormatError(
                    f"expected {expected} bytes ({num_rows} rows of {row_nbytes} bytes + the "
                    f"shard index), found {size}",
                    path=self.path,
                )
            if span is None:
                buffer = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
                check_shard_index(buffer, rows_nbytes, num_rows, row_nbytes, self.path)
                flat = np.frombuffer(buffer, dtype, count=rows_nbytes // dtype.itemsize)
                self.rows: npt.NDArray[Any] = flat.reshape(shape)
            else:
                index = read_expected(fd, 16 * num_rows, rows_nbytes)
                check_shard_index(index, 0, num_rows, row_nbytes, self.path)
                span.map_fd(shard, fd, rows_nbytes, self.path)
                start = shard * span.slot_rows
                self.rows = span.rows[start : start + num_rows]
        finally:
            os.close(fd)
        self.row_nbytes = row_nbytes
        self.file_nbytes = size
        # Byte view for batched gathers: slicing a memoryview costs less than a numpy view.
        self.buffer = self.rows.reshape(-1).view(np.uint8).data


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

    def check_rows(self) -> None:
        """Decode every row, as :meth:`read` does, and raise for the first that fails.

        One loop over views of the mapping: the validator before publication decodes each
        of a store's millions of records, and a copy and a method call per row were most
        of its cost.
        """
        decode, offsets = _RECORD_DECODER.decode, self.offsets
        start = 0
        with memoryview(self.payload) as view:
            try:
                for start, end in itertools.pairwise(offsets):
                    decode(view[start:end])
            except (msgspec.DecodeError, RecursionError) as exc:
                # The first row starting there: an empty row before it would have failed.
                row = offsets.index(start)
                raise VinOfflineFormatError(f"row {row}: {exc}", path=self.path) from None


def open_block(
    shard_dir: Path, spec: VinOfflineBlockSpec, span: BlockSpan | None = None, shard: int = 0
) -> NumericBlockHandle | RecordBlockHandle:
    """Open the handle that matches a block's kind (numeric rows into *span*, if given)."""
    if spec.kind == "zarr_array":
        return NumericBlockHandle(shard_dir, spec, span, shard)
    return RecordBlockHandle(shard_dir, spec)
