"""Feeding shard tasks to an executor: from an iterable (packed here) or from sources.

Both paths fix the rows per shard from the first sample and the byte target, key every
shard by its inputs and options (so a re-run can reuse it), and hand finished shards, in
order, to the builder's fold; at most *max_pending* shards are in flight.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Iterable, Sequence, Sized
from concurrent.futures import Executor, Future, wait
from typing import Any

import msgspec

from dataset_devkit.integrity.progress import ProgressUpdate, report
from dataset_devkit.vin_store._rows import RowBlock, Schema, check_fields
from dataset_devkit.vin_store._shard_task import (
    Rows,
    ShardRecord,
    ShardTask,
    probe_schema,
    run_shard,
    shard_id_of,
    source_key,
)
from dataset_devkit.vin_store._workdir import BuildDirs
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.sources import VinOfflineShardSource, plan_pieces
from dataset_devkit.vin_store.spec import OFFLINE_DATASET_VERSION

__all__ = ["Run", "submit_samples", "submit_sources"]


def _rows_for(schema: Schema, shard_bytes: int | None, cap: int | None) -> int:
    rows = cap if shard_bytes is None else max(1, shard_bytes // max(1, schema.row_nbytes()))
    return min(rows, cap) if cap is not None and rows is not None else int(rows or 1)


def _options_key(schema: Schema, rows: int, val_fraction: float) -> str:
    described = msgspec.json.encode(
        {"format": OFFLINE_DATASET_VERSION, "rows": rows, "val": val_fraction, "schema": schema}
    )
    return hashlib.sha256(described).hexdigest()


class Run:
    """Submits shard tasks in order with at most *max_pending* in flight; folds results.

    A task's row buffers come back to ``free`` once its shard is written, so an iterable
    build reuses the same few shards' worth of memory instead of faulting in new pages.
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

    def _fold_one(self) -> None:
        future, block = self.pending.popleft()
        self.on_record(future.result())
        if block is not None:
            block.clear()
            self.free.append(block)

    def submit(self, task: ShardTask, block: RowBlock | None = None) -> None:
        while len(self.pending) >= self.max_pending:
            self._fold_one()
        self.pending.append((self.executor.submit(run_shard, task), block))

    def drain(self) -> None:
        while self.pending:
            self._fold_one()

    def abort(self, *, finish_submitted: bool) -> None:
        """Stop the build: wait for every submitted shard, cancelling those not started
        unless *finish_submitted* (their rows are complete, so a re-run can reuse them)."""
        futures = [future for future, _ in self.pending]
        if not finish_submitted:
            for future in futures:
                future.cancel()
        wait(futures)  # never release the build while a worker still writes into it


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
    block: RowBlock | None = None
    schema: Schema | None = None
    rows, options_key = 0, ""
    position = row_start = 0
    total = len(samples) if isinstance(samples, Sized) else None
    report(state["progress"], ProgressUpdate("build", unit="samples", total_items=total))

    def submit(full: RowBlock) -> None:
        nonlocal position, row_start
        assert schema is not None
        task = ShardTask(
            tree=str(dirs.tree),
            state=str(dirs.state),
            position=position,
            row_start=row_start,
            num_rows=full.count,
            schema=schema,
            val_fraction=val_fraction,
            options_key=options_key,
            rows=Rows.of(full),
        )
        position += 1
        row_start += full.count
        run.submit(task, full)

    last = -1
    for number, sample in enumerate(samples):
        check_fields(sample, number, last)
        last = last + 1 if sample.sample_index is None else int(sample.sample_index)
        if block is None:
            schema = Schema.of(sample)
            rows = _rows_for(schema, shard_bytes, cap)
            options_key = _options_key(schema, rows, val_fraction)
            block = RowBlock(schema, rows, val_fraction)
        block.add(sample, shard_id_of(position), block.count)
        if block.full:
            submit(block)
            block = run.free.pop() if run.free else RowBlock(block.schema, rows, val_fraction)
    if block is None:
        raise VinOfflineSchemaError("no samples: a store needs at least one")
    if block.count:
        submit(block)
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
) -> int:
    """Plan shards over the sources (a worker probes the first sample for the schema)."""
    schema = executor.submit(probe_schema, sources[0]).result()
    rows = _rows_for(schema, shard_bytes, cap)
    options_key = _options_key(schema, rows, val_fraction)
    plan = plan_pieces(sources, rows)
    total = sum(len(s) for s in sources)
    report(state["progress"], ProgressUpdate("build", unit="samples", total_items=total))
    row_start = 0
    for position, pieces in enumerate(plan):
        described = tuple((sources[i], a, b) for i, a, b in pieces)
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
                pieces=described,
                key=source_key(options_key, position, described),
            )
        )
        row_start += num_rows
    return rows
