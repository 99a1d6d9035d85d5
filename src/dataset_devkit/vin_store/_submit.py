"""Feeding shard tasks to an executor: from an iterable (packed here) or from sources.

Both paths fix the rows per shard from the first sample and the byte target, key every
shard by its inputs and options (so a re-run can reuse it), and hand finished shards, in
order, to the builder's fold; at most *max_pending* shards are in flight.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Sequence, Sized
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from typing import Any

import msgspec

from dataset_devkit.integrity.progress import ProgressUpdate, report
from dataset_devkit.vin_store._pool import worker_started
from dataset_devkit.vin_store._rows import RowBlock, Schema, VinOfflineSample, check_fields
from dataset_devkit.vin_store._shard_files import ShardFiles
from dataset_devkit.vin_store._shard_task import (
    Rows,
    ShardRecord,
    ShardTask,
    probe_schema,
    run_shard,
    shard_id_of,
    source_key,
)
from dataset_devkit.vin_store._stream import (
    STREAM_BLOCK_BYTES,
    BlockPool,
    DirectRows,
    Feed,
    open_streamed,
    write_streamed,
)
from dataset_devkit.vin_store._workdir import BuildDirs
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.sources import VinOfflineShardSource, plan_pieces
from dataset_devkit.vin_store.spec import OFFLINE_DATASET_VERSION

__all__ = ["Run", "submit_samples", "submit_sources"]


def _rows_for(schema: Schema, shard_bytes: int | None, cap: int | None) -> int:
    rows = cap if shard_bytes is None else max(1, shard_bytes // max(1, schema.row_nbytes()))
    return min(rows, cap) if cap is not None and rows is not None else int(rows or 1)


#: The bytes a shard's files take for the same rows: 2 since block arrays name their
#: dimensions. Part of every resume key, so a build resumed after an upgrade rewrites the
#: shards an earlier version wrote instead of mixing both layouts in one store.
SHARD_LAYOUT = 2


def _options_key(schema: Schema, rows: int, val_fraction: float) -> str:
    described = msgspec.json.encode(
        {
            "format": OFFLINE_DATASET_VERSION,
            "layout": SHARD_LAYOUT,
            "rows": rows,
            "val": val_fraction,
            "schema": schema,
        }
    )
    return hashlib.sha256(described).hexdigest()


class Run:
    """Submits shard tasks in order with at most *max_pending* in flight; folds results.

    A packed task's row buffers come back to ``free`` once its shard is written, so an
    iterable build reuses the same memory instead of faulting in new pages. ``feed`` is the
    streamed shard the driver is still filling, if any: stopping the build cuts it.
    """

    def __init__(
        self,
        executor: Executor,
        max_pending: int,
        on_record: Callable[[ShardRecord], None],
    ) -> None:
        self.executor, self.max_pending, self.on_record = executor, max_pending, on_record
        self.pending: collections.deque[tuple[Future[ShardRecord], RowBlock | None]] = (
            collections.deque()
        )
        self.free: list[RowBlock] = []
        self.feed: Feed | None = None

    def _fold_one(self) -> None:
        future, block = self.pending.popleft()
        self.on_record(future.result())
        if block is not None:
            block.clear()
            self.free.append(block)

    def _room(self) -> None:
        while len(self.pending) >= self.max_pending:
            self._fold_one()

    def submit(self, task: ShardTask, block: RowBlock | None = None) -> None:
        self._room()
        self.pending.append((self.executor.submit(run_shard, task), block))

    def stream(self, task: ShardTask, feed: Feed) -> ShardFiles:
        """Start a shard whose blocks will come on *feed*; its files, open."""
        self._room()
        files = open_streamed(task)
        try:
            future = self.executor.submit(write_streamed, task, feed, files)
        except BaseException:
            files.discard()
            raise
        self.pending.append((future, None))
        self.feed = feed
        return files

    def drain(self) -> None:
        while self.pending:
            self._fold_one()

    def abort(self, *, finish_submitted: bool) -> None:
        """Stop the build: wait for every submitted shard, cancelling those not started
        unless *finish_submitted* (their rows are complete, so a re-run can reuse them);
        a streamed shard still being filled is cut."""
        if self.feed is not None:
            self.feed.cut()
            self.feed = None
        futures = [future for future, _ in self.pending]
        if not finish_submitted:
            for future in futures:
                future.cancel()
        wait(futures)  # never release the build while a worker still writes into it


class _Packing:
    """The shard an iterable build is filling: streamed to a thread, or packed whole."""

    def __init__(self, run: Run, task: ShardTask, pool: BlockPool | None) -> None:
        self.run, self.task, self.pool = run, task, pool
        self.shard_id = shard_id_of(task.position)
        self.count = 0
        if pool is not None:
            self.feed = Feed(pool)
            pool.direct.files = run.stream(task, self.feed)
            self.block = pool.take()
        else:
            self.block = (
                run.free.pop()
                if run.free
                else RowBlock(task.schema, task.num_rows, task.val_fraction)
            )

    def add(self, sample: VinOfflineSample) -> None:
        self.block.add(sample, self.shard_id, self.count)
        self.count += 1
        if self.pool is not None and self.block.full:
            self.feed.put(self.block)
            self.block = self.pool.take()

    def close(self) -> int:
        """Hand the last rows over; the shard's row count."""
        if self.pool is None:
            task = dataclasses.replace(self.task, num_rows=self.count, rows=Rows.of(self.block))
            self.run.submit(task, self.block)
        else:
            if self.block.count:
                self.feed.put(self.block)
            else:
                self.pool.give_back(self.block)
            self.pool.direct.files = None
            self.feed.end()
            self.run.feed = None
        return self.count


def submit_samples(
    samples: Iterable[Any],
    dirs: BuildDirs,
    run: Run,
    shard_bytes: int | None,
    cap: int | None,
    val_fraction: float,
    state: dict[str, Any],
) -> int:
    """Check and pack samples into shards of fixed rows in the driver; return the rows."""
    stream = isinstance(run.executor, ThreadPoolExecutor)
    pool: BlockPool | None = None
    schema: Schema | None = None
    rows, options_key = 0, ""
    position = row_start = 0
    total = len(samples) if isinstance(samples, Sized) else None
    report(state["progress"], ProgressUpdate("build", unit="samples", total_items=total))
    shard: _Packing | None = None
    last = -1
    for number, sample in enumerate(samples):
        check_fields(sample, number, last)
        last = last + 1 if sample.sample_index is None else int(sample.sample_index)
        if schema is None:
            schema = Schema.of(sample)
            rows = _rows_for(schema, shard_bytes, cap)
            options_key = _options_key(schema, rows, val_fraction)
            if stream:
                direct = DirectRows(schema)
                buffered = max(1, schema.row_nbytes() - sum(direct.nbytes.values()))
                capacity = max(1, min(rows, STREAM_BLOCK_BYTES // buffered))
                pool = BlockPool(schema, capacity, val_fraction, run.max_pending + 2, direct)
        if shard is None:
            reusable = (dirs.state / f"{shard_id_of(position)}.rec").exists()
            task = ShardTask(
                tree=str(dirs.tree),
                state=str(dirs.state),
                position=position,
                row_start=row_start,
                num_rows=rows,
                schema=schema,
                val_fraction=val_fraction,
                options_key=options_key,
            )
            shard = _Packing(run, task, None if reusable else pool)
        shard.add(sample)
        if shard.count == rows:
            row_start += shard.close()
            position += 1
            shard = None
    if schema is None:
        raise VinOfflineSchemaError("no samples: a store needs at least one")
    if shard is not None:
        shard.close()
    return rows


def submit_sources(
    sources: Sequence[VinOfflineShardSource],
    dirs: BuildDirs,
    run: Run,
    executor: Executor,
    shard_bytes: int | None,
    cap: int | None,
    val_fraction: float,
    state: dict[str, Any],
    shipped: Sequence[VinOfflineShardSource] | None = None,
) -> int:
    """Plan shards over the sources (a worker probes the first sample for the schema).

    While one worker probes, the others are started with an empty task: a process pool
    starts a worker only when a task finds none idle, so otherwise the second worker's
    start-up (interpreter and imports, ~0.5 s) would begin only after the probe.
    *shipped* are the same sources as the workers get them (an interactive session's
    functions carried by value): tasks carry those, while each shard's resume key is made
    from *sources*, so it names the function as before.
    """
    shipped = sources if shipped is None else shipped
    probe = executor.submit(probe_schema, shipped[0])
    for _ in range(max(0, min(run.max_pending, len(sources)) - 1)):
        executor.submit(worker_started)
    schema = probe.result()
    rows = _rows_for(schema, shard_bytes, cap)
    options_key = _options_key(schema, rows, val_fraction)
    plan = plan_pieces(sources, rows)
    total = sum(len(s) for s in sources)
    report(state["progress"], ProgressUpdate("build", unit="samples", total_items=total))
    row_start = 0
    for position, pieces in enumerate(plan):
        described = tuple((sources[i], a, b) for i, a, b in pieces)
        carried = tuple((shipped[i], a, b) for i, a, b in pieces)
        num_rows = sum(b - a for _, a, b in pieces)
        run.submit(
            ShardTask(
                tree=str(dirs.tree),
                state=str(dirs.state),
                position=position,
                row_start=row_start,
                num_rows=num_rows,
                schema=schema,
                val_fraction=val_fraction,
                options_key=options_key,
                pieces=carried,
                key=source_key(options_key, position, described),
            )
        )
        row_start += num_rows
    return rows
