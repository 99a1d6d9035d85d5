"""One numpy array over a numeric block's rows in every shard, for batched reads in one gather.

Shards are separate chunk files, so a batch that touches several shards cannot be one numpy
gather over separate mappings: a per-row copy loop costs ~0.5 us of Python per row, as much
as copying a 24 KB row. Instead, one address range is reserved (``PROT_NONE``, no memory
committed) and shard *k*'s chunk file is mapped read-only at ``base + k * slot_nbytes`` with
``MAP_FIXED``. ``slot_nbytes`` is a multiple of the page size and of the row size, so every
row of every shard is a row of one array, at virtual row ``k * slot_rows + row`` (with the
default 1,024-row shards, exactly the global row), and a batch is one ``np.take`` straight
into its output: one C loop, one copy per row.

Shards are mapped on first use. Only rows a shard really holds are ever read (the reader
checks positions first); the gaps between slots stay ``PROT_NONE``. A shard's slot can be
given back (``PROT_NONE`` again) when its file left a size-limited cache, so the file's
blocks are freed; the next read of it maps the fetched copy. The range is unmapped when
the last array over it is gone. A forked child inherits the mappings, like any ``mmap``. Where
``mmap(2)`` cannot be called through ctypes (not Linux or macOS), :func:`block_span` returns
None and the reader copies row by row.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
import sys
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.vin_store.errors import VinOfflineFormatError

__all__ = ["BlockSpan", "block_span"]

_MAP_FIXED = 0x10  # same value on Linux and macOS; the mmap module does not export it
_PROT_NONE = 0  # nor this one
_MAP_NORESERVE = 0x4000 if sys.platform.startswith("linux") else 0
_MAX_SLOT_NBYTES = 2**34  # beyond this an odd row size makes the reservation absurd
_MAX_SPAN_NBYTES = 2**45  # 32 TiB of address space, never of memory


def _libc_mmap() -> tuple[Any, Any] | None:
    if not (sys.platform.startswith("linux") or sys.platform == "darwin"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        map_fn, unmap_fn = libc.mmap, libc.munmap
    except (OSError, AttributeError):  # pragma: no cover - every supported libc has them
        return None
    map_fn.restype = ctypes.c_void_p
    map_fn.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int64,
    ]
    unmap_fn.restype = ctypes.c_int
    unmap_fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return map_fn, unmap_fn


_LIBC = _libc_mmap()
_MAP_FAILED = ctypes.c_void_p(-1).value


class BlockSpan:
    """Rows of one numeric block across all shards as one read-only array (see module doc).

    Parameters
    ----------
    num_shards
        Number of slots to reserve (one per shard).
    slot_rows
        Rows per slot; ``slot_rows * row_nbytes`` is a multiple of the page size and at
        least the largest shard's row count. When it equals the shards' uniform row count,
        the virtual row of a global row is the global row itself.
    row_nbytes, dtype, row_shape
        Layout of one row.
    """

    __slots__ = ("__weakref__", "_base", "complete", "mapped", "rows", "slot_nbytes", "slot_rows")

    def __init__(
        self,
        num_shards: int,
        slot_rows: int,
        row_nbytes: int,
        dtype: np.dtype[Any],
        row_shape: tuple[int, ...],
    ) -> None:
        assert _LIBC is not None
        map_fn, unmap_fn = _LIBC
        self.slot_rows = slot_rows
        self.slot_nbytes = slot_rows * row_nbytes
        total = num_shards * self.slot_nbytes
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
        base = map_fn(None, total, _PROT_NONE, flags, -1, 0)
        if base is None or base == _MAP_FAILED:
            raise OSError(ctypes.get_errno(), "cannot reserve address space for a block span")
        self._base: int = base
        raw = (ctypes.c_char * total).from_address(base)
        # The mapping lives as long as the ctypes buffer, which every numpy view keeps alive;
        # at exit the process unmaps it (never while a daemon thread might still read).
        weakref.finalize(raw, unmap_fn, base, total).atexit = False
        flat = np.frombuffer(memoryview(raw), dtype=dtype)
        self.rows: npt.NDArray[Any] = flat.reshape(num_shards * slot_rows, *row_shape)
        self.rows.flags.writeable = False
        self.mapped: set[int] = set()
        self.complete = num_shards == 0  # every shard mapped: no more checks per batch

    def map_shard(self, shard: int, path: Path, file_nbytes: int, rows_nbytes: int) -> None:
        """Map the rows of one shard's chunk file into its slot (the size is checked again)."""
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            size = os.fstat(fd).st_size
            if size != file_nbytes:
                raise VinOfflineFormatError(
                    f"expected {file_nbytes} bytes, found {size} (changed since opened)",
                    path=path,
                )
            self.map_fd(shard, fd, rows_nbytes, path)
        finally:
            os.close(fd)

    def map_fd(self, shard: int, fd: int, rows_nbytes: int, path: Path) -> None:
        """Map the first *rows_nbytes* of an open, already checked chunk file (*path*, for
        messages) into the slot of *shard*; the caller closes *fd*."""
        assert _LIBC is not None
        if rows_nbytes:
            address = self._base + shard * self.slot_nbytes
            flags = mmap.MAP_SHARED | _MAP_FIXED
            got = _LIBC[0](address, rows_nbytes, mmap.PROT_READ, flags, fd, 0)
            if got != address:
                raise OSError(ctypes.get_errno(), f"cannot map {path} into its block span")
        self.mapped.add(shard)
        self.complete = len(self.mapped) * self.slot_rows == self.rows.shape[0]

    def unmap_shard(self, shard: int) -> None:
        """Give the slot of *shard* back (``PROT_NONE``): its file's pages are released.

        The caller makes sure nothing reads the slot meanwhile (the reader holds its lock).
        """
        assert _LIBC is not None
        map_fn = _LIBC[0]
        address = self._base + shard * self.slot_nbytes
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE | _MAP_FIXED
        got = map_fn(address, self.slot_nbytes, _PROT_NONE, flags, -1, 0)
        if got != address:  # pragma: no cover - replacing an existing mapping cannot fail
            raise OSError(ctypes.get_errno(), "cannot release a block span slot")
        self.mapped.discard(shard)
        self.complete = False


def block_span(
    shard_rows: list[int],
    row_nbytes: int,
    dtype: np.dtype[Any],
    row_shape: tuple[int, ...],
) -> BlockSpan | None:
    """A :class:`BlockSpan` over shards of these row counts, or None where none can be made.

    None when mmap(2) is not reachable, rows are empty, or an odd row size would need an
    absurd reservation.
    """
    if _LIBC is None or row_nbytes <= 0 or not shard_rows:
        return None
    largest = max(max(shard_rows), 1)
    if largest * row_nbytes % mmap.PAGESIZE == 0 and all(n == largest for n in shard_rows[:-1]):
        slot_rows = largest  # the usual case: virtual row == global row
    else:
        unit = math.lcm(mmap.PAGESIZE, row_nbytes)
        if unit > _MAX_SLOT_NBYTES:
            return None
        slot_rows = -(-largest * row_nbytes // unit) * unit // row_nbytes
    if len(shard_rows) * slot_rows * row_nbytes > _MAX_SPAN_NBYTES:
        return None
    try:
        return BlockSpan(len(shard_rows), slot_rows, row_nbytes, dtype, row_shape)
    except OSError:  # e.g. address space limited by ulimit -v: the per-row path still works
        return None
