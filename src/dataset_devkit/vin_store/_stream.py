"""An iterable build's shard streamed to a thread in blocks of a few MB as the driver packs it.

Packing a whole shard (128 MiB by default) before handing it over made the driver fault in
a shard's worth of fresh pages per shard, more than a build of a few shards ever recycles,
and left the last shard's hashing and writing to run after all the packing. Here a shard
task starts as soon as its first rows are packed and takes them a block at a time: the
driver packs into a small pool of recycled blocks (memory: the pool, whatever the shard or
sample size) while the thread hashes and writes the previous block, and the tail of the
build is one block. Small rows are copied from the samples (a producer may reuse its
arrays once it has yielded them, so the driver cannot hold on to them), into memory that
is already mapped and cache-warm. Large numeric rows (:data:`DIRECT_ROW_BYTES` and up) are
not copied at all: the driver hashes and writes each straight from the sample into the
shard's file for that block (:class:`DirectRows`) before it asks for the next sample, as a
worker producing its own samples does. Copying 2 MiB cost a fifth to a third of hashing
it (micro-benchmark, perf), for a writer thread that could only wait for it when the
producer is quick; a slow producer of large rows now also waits for their hashing, and
partitioned sources, produced by the workers in parallel, are what overlaps the two.
The shard's files are opened by the driver, so both may write into them: the driver the
large blocks' files, the thread every other file; the thread closes them all once the
feed's end, which follows the driver's last row, has arrived.

Threads only: the blocks never leave this process. On any other executor, and for a shard
a re-run may reuse (decided before its rows are written), the driver packs whole shards.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Final

import numpy.typing as npt

from dataset_devkit.vin_store import _shard_task
from dataset_devkit.vin_store._rows import RowBlock, Schema
from dataset_devkit.vin_store._shard_files import ShardFiles, ShardRecord
from dataset_devkit.vin_store._shard_task import ShardTask, key_prefix, shard_id_of, write_record
from dataset_devkit.vin_store.spec import SHARDS_DIR

__all__ = [
    "STREAM_BLOCK_BYTES",
    "BlockPool",
    "DirectRows",
    "Feed",
    "ShardCut",
    "open_streamed",
    "write_streamed",
]

#: Bytes of the small rows of one streamed block (at least one row): small enough to stay
#: in cache between the driver's copy and the writer's hash and write.
STREAM_BLOCK_BYTES: Final = 4 << 20


class ShardCut(Exception):
    """A streamed shard was cut short (the build stopped): nothing of it is kept."""


class DirectRows:
    """The numeric blocks whose rows go straight from the sample to the file of the shard
    the driver is filling (:attr:`files`, set per shard), and the sinks that write them."""

    def __init__(self, schema: Schema) -> None:
        threshold = _shard_task.DIRECT_ROW_BYTES
        self.nbytes = {n: b for n, b in schema.array_nbytes().items() if b >= threshold}
        self.files: ShardFiles | None = None

    def sinks(self) -> dict[str, Callable[[npt.NDArray[Any]], None]]:
        return {name: partial(self._write, name) for name in self.nbytes}

    def _write(self, name: str, row: npt.NDArray[Any]) -> None:
        assert self.files is not None, "a direct row outside a streamed shard"
        self.files.numeric[name].write_row(row)


class BlockPool:
    """At most *limit* recycled row blocks; :meth:`take` waits for one to come back.

    Blocks hold the rows of every numeric block but *direct*'s, which they hand to it."""

    def __init__(
        self, schema: Schema, capacity: int, val_fraction: float, limit: int, direct: DirectRows
    ) -> None:
        self.schema, self.capacity, self.val_fraction = schema, capacity, val_fraction
        self.limit, self.made, self.direct = limit, 0, direct
        self._free: queue.SimpleQueue[RowBlock] = queue.SimpleQueue()

    def take(self) -> RowBlock:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        if self.made < self.limit:
            self.made += 1
            return RowBlock(
                self.schema, self.capacity, self.val_fraction, direct=self.direct.sinks()
            )
        # Every block is with a shard task; each task gives its blocks back, even when it
        # fails, and the oldest unfinished one already has all its rows, so one returns.
        return self._free.get()

    def give_back(self, block: RowBlock) -> None:
        block.clear()
        self._free.put(block)


_END: Final = "end"
_CUT: Final = "cut"


class Feed:
    """The blocks of one shard, in order, then its end (or a cut)."""

    def __init__(self, pool: BlockPool) -> None:
        self.pool = pool
        self._queue: queue.SimpleQueue[RowBlock | str] = queue.SimpleQueue()

    def put(self, block: RowBlock) -> None:
        self._queue.put(block)

    def end(self) -> None:
        """Every row is in: the task finishes the shard."""
        self._queue.put(_END)

    def cut(self) -> None:
        """The build stops: the task drops the shard."""
        self._queue.put(_CUT)

    def get(self) -> RowBlock | str:
        return self._queue.get()


def open_streamed(task: ShardTask) -> ShardFiles:
    """Open the files of a streamed shard (in the driver, before its task starts)."""
    shard_id = shard_id_of(task.position)
    (Path(task.state) / f"{shard_id}.rec").unlink(missing_ok=True)
    return ShardFiles(Path(task.tree) / SHARDS_DIR / shard_id, task.schema, None)


def write_streamed(task: ShardTask, feed: Feed, files: ShardFiles) -> ShardRecord:
    """Write one shard from the blocks on *feed* into *files* (runs in an executor thread);
    the driver has written the direct rows into them by the time the feed ends."""
    shard_id = shard_id_of(task.position)
    record_path = Path(task.state) / f"{shard_id}.rec"
    failure: BaseException | None = None
    while True:
        item = feed.get()
        if isinstance(item, str):
            break
        try:
            if failure is None:
                files.write_block(item)
        except BaseException as exc:  # reported once the driver has sent every block
            failure = exc
        finally:
            feed.pool.give_back(item)
    if failure is None and item == _END:
        try:
            record = files.finish(shard_id, task.row_start, None, key_prefix(task))
            write_record(record_path, record)
            return record
        except BaseException as exc:
            failure = exc
    files.discard()
    if failure is not None:
        raise failure
    raise ShardCut(shard_id)
