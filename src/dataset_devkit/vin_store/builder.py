"""Build a complete VIN offline store, shards in parallel, resumable, published atomically.

Samples come either as one iterable (the driver checks and packs them into shards) or as
partitioned sources (:class:`~dataset_devkit.vin_store.sources.VinOfflineShardSource`:
workers produce their shard's samples themselves). Shards hold a fixed number of rows,
chosen from a byte target and the first sample, so the layout — and every byte, and the
root hash — depends only on the samples and options, never on the executor or on how the
samples were partitioned. Memory is bounded by the shards in flight, whatever the count.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from dataset_devkit.errors import ConfigError, VerificationFailed
from dataset_devkit.integrity import path_argument, publish_tree
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.integrity.staging import pin_parent
from dataset_devkit.integrity.stamps import FileStamp
from dataset_devkit.vin_store._by_value import carried, refuse_piped_main
from dataset_devkit.vin_store._index_out import IndexWriter
from dataset_devkit.vin_store._pool import (
    default_workers,
    process_pool,
    start_fork_server,
    thread_pool,
)
from dataset_devkit.vin_store._publish_files import write_store_files
from dataset_devkit.vin_store._rows import VinOfflineSample
from dataset_devkit.vin_store._shard_task import ShardRecord
from dataset_devkit.vin_store._submit import Run, submit_samples, submit_sources
from dataset_devkit.vin_store._workdir import BuildDirs
from dataset_devkit.vin_store.sources import VinOfflineShardSource
from dataset_devkit.vin_store.spec import VinOfflineMaterializedBlocks

__all__ = [
    "DEFAULT_SHARD_BYTES",
    "VinOfflineBuildResult",
    "VinOfflineSample",
    "build_process_pool",
    "build_vin_offline_store",
]

#: Fixed creation time written to the manifest unless the caller gives one (determinism).
DEFAULT_CREATED_AT = "1970-01-01T00:00:00Z"
#: Default shard size target (see docs/vin_store.md for the measurement behind it).
DEFAULT_SHARD_BYTES: Final = 128 << 20


@dataclass(frozen=True, slots=True)
class VinOfflineBuildResult:
    """What a build published."""

    store_dir: Path
    root_sha256: str
    num_samples: int
    num_shards: int
    reused_shards: int = 0


def _positive_int(value: object, name: str, *, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be an int >= 1, found {value!r}", key=name)
    return value


def _check_options(
    shard_bytes: object, rows_per_shard: object, val_fraction: object, max_pending: object
) -> None:
    _positive_int(shard_bytes, "shard_bytes", allow_none=True)
    _positive_int(rows_per_shard, "rows_per_shard", allow_none=True)
    _positive_int(max_pending, "max_pending", allow_none=True)
    if shard_bytes is None and rows_per_shard is None:
        raise ConfigError("give shard_bytes, rows_per_shard or both", key="shard_bytes")
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, int | float):
        raise ConfigError(
            f"val_fraction must be a number in [0, 1), found {val_fraction!r}", key="val_fraction"
        )
    if not 0.0 <= val_fraction < 1.0:
        raise ConfigError(
            f"val_fraction must be in [0, 1), found {val_fraction}", key="val_fraction"
        )


def _as_sources(samples: object) -> Sequence[VinOfflineShardSource] | None:
    """The sources of a partitioned build, None for an iterable of samples."""
    if isinstance(samples, Sequence) and samples and isinstance(samples[0], VinOfflineShardSource):
        for number, item in enumerate(samples):
            if not isinstance(item, VinOfflineShardSource):
                raise ConfigError(
                    f"source #{number}: expected a VinOfflineShardSource, found "
                    f"{type(item).__name__} (do not mix sources and samples)",
                    key="samples",
                )
        return samples
    if not isinstance(samples, Iterable):
        raise ConfigError(
            f"samples must be an iterable of VinOfflineSample or a sequence of "
            f"VinOfflineShardSource, found {type(samples).__name__}",
            key="samples",
        )
    return None


def build_process_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """The process pool a build from sources starts by default, to keep for several builds.

    Pass it as ``executor=`` to each build: its workers are started now (they get ready
    while you prepare the first build) and stay up, so a later build starts writing at
    once instead of starting processes. They die with this process, like the default
    pool's; shut the pool down (``with build_process_pool() as pool: ...``) when done.

    Parameters
    ----------
    workers
        Worker processes; default one per available core, at most 8. Give builds that
        share the pool ``workers=`` the same count, which sets how many shards they keep
        in flight.
    """
    count = _positive_int(workers, "workers", allow_none=True) or default_workers()
    return process_pool(count, start=True)


def build_vin_offline_store(
    samples: Iterable[VinOfflineSample] | Sequence[VinOfflineShardSource],
    out: Path,
    *,
    shard_bytes: int | None = DEFAULT_SHARD_BYTES,
    rows_per_shard: int | None = None,
    val_fraction: float = 0.0,
    executor: Executor | None = None,
    workers: int | None = None,
    max_pending: int | None = None,
    resume: bool = True,
    progress: OnProgress | None = None,
    materialized_blocks: VinOfflineMaterializedBlocks | None = None,
    source: Mapping[str, Any] | None = None,
    oracle: Mapping[str, Any] | None = None,
    vin: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    created_at: str = DEFAULT_CREATED_AT,
) -> VinOfflineBuildResult:
    """Write the samples as a new store at *out*, validated and published atomically.

    Parameters
    ----------
    samples
        Either the samples, in sample_index order (consumed once, streaming), or a
        sequence of :class:`VinOfflineShardSource` whose samples the workers produce.
        The same samples in the same order give the same bytes either way.
    out
        Final store path; it must not exist (a published store is never replaced).
    shard_bytes
        Target bytes per shard: rows per shard = this / the first sample's bytes (numeric
        rows exactly; records as the first sample's). None: use *rows_per_shard* alone.
    rows_per_shard
        Optional cap on the rows of a shard.
    val_fraction
        0 puts every sample in ``all``; otherwise a hash of the key picks ``train``/``val``.
        A sample's own ``split`` always wins.
    executor
        Where shards are written. Default: threads for an iterable (the driver packs rows;
        writing and hashing release the GIL), a process pool for sources (producing
        samples is Python work), its workers forked from a fork server that imported this
        package once; both of *workers* workers (default one per core, at most 8) that
        die with this process. A Dask client's ``get_executor()``
        works too when its workers see the same filesystem.
    max_pending
        Shards in flight at once. Default: *workers* + 1 for an iterable (its driver holds
        at most this many plus one shards of rows), twice *workers* (at least 4) for
        sources; raise it for an executor with more workers than this machine has cores.
    resume
        Reuse the shards a killed or failed build of the same *out* finished, when their
        inputs and options are the same (partitioned sources: the same functions and
        ranges; iterable: the same rows). False starts over.
    progress
        The shared progress protocol: a first update with the total samples when known
        (a sequence, or sources), then one per finished shard (stage ``"build"``, its rows
        as ``samples``), from this thread; the renderer derives rate and ETA.
    materialized_blocks
        Family flags; default inferred from block names. Checked against the shards.
    """
    _check_options(shard_bytes, rows_per_shard, val_fraction, max_pending)
    out = path_argument(out, "out").absolute()
    sources = _as_sources(samples)
    if not isinstance(resume, bool):
        raise ConfigError(f"resume must be a bool, found {resume!r}", key="resume")
    count = _positive_int(workers, "workers", allow_none=True) or default_workers()
    # A notebook's functions cannot be imported by worker processes: carried by value.
    shipped = None
    if sources is not None and not isinstance(executor, ThreadPoolExecutor):
        if executor is None:
            refuse_piped_main()  # the default pool could not start a worker
        shipped = carried(sources)
    os.close(pin_parent(out))  # the parent exists and out does not, before anything is made
    if executor is None and sources is not None:
        start_fork_server()  # it boots while this process prepares the build
    from dataset_devkit.vin_store.verify import raise_for_store_issues  # imports the reader

    dirs = BuildDirs(out, resume=resume)
    state: dict[str, Any] = {"records": [], "reused": 0, "samples": 0, "progress": progress}
    stamps: dict[str, FileStamp] = {}  # every file hashed as written: see publish_tree

    def fold(record: ShardRecord) -> None:
        index.add(record)
        state["records"].append((record.spec, record.files))
        for (rel, _, _), stamp in zip(record.files, record.stamps, strict=True):
            stamps[f"{record.spec.relative_dir}/{rel}"] = stamp
        state["reused"] += record.reused
        state["samples"] += record.spec.num_rows
        report(progress, ProgressUpdate("build", items=record.spec.num_rows, unit="samples"))

    with ExitStack() as stack:
        stack.callback(dirs.release)
        index = IndexWriter(dirs.tree)
        stack.callback(index.abandon)  # a failed build keeps no descriptor open
        if executor is None:
            executor = thread_pool(count) if sources is None else process_pool(count)
            # Every task has finished (or was cancelled and waited for) when this runs, so
            # this waits only for idle workers to exit (~15 ms). Not waiting let the pool's
            # manager thread close its wake-up pipe while the interpreter's exit hook
            # wrote to it: "Exception ignored ... Bad file descriptor" after the last line.
            stack.callback(executor.shutdown, wait=True)
        if max_pending is None:  # keep every worker busy; iterable: bound the packed rows
            max_pending = count + 1 if sources is None else max(4, 2 * count)
        run = Run(executor, max_pending, fold)
        try:
            if sources is None:
                rows = submit_samples(
                    samples, dirs, run, shard_bytes, rows_per_shard, val_fraction, state
                )
            else:
                rows = submit_sources(
                    sources,
                    dirs,
                    run,
                    executor,
                    shard_bytes,
                    rows_per_shard,
                    val_fraction,
                    state,
                    shipped,
                )
            run.drain()
            records = state["records"]
            dirs.drop_shards_except({spec.shard_id for spec, _ in records})
            stamps |= write_store_files(
                dirs.tree,
                index,
                records,
                rows_per_shard=rows,
                materialized_blocks=materialized_blocks,
                meta={
                    "source": source,
                    "oracle": oracle,
                    "vin": vin,
                    "provenance": provenance,
                    "created_at": created_at,
                },
            )
            published = publish_tree(
                dirs.tree,
                out,
                validate=raise_for_store_issues,
                progress=progress,
                user_staging=False,
                written=stamps,
            )
        except BaseException as exc:
            # Bad input, or a store that does not validate: the same call would fail the
            # same way, so nothing is kept. Anything else (a crash in the caller's code,
            # a full disk, Ctrl-C) keeps the finished shards for a re-run to reuse; after
            # a crash in the caller's code the shards already submitted are finished too,
            # so what is kept does not depend on how far the workers had got.
            bad_input = isinstance(exc, ConfigError | VerificationFailed)
            run.abort(finish_submitted=isinstance(exc, Exception) and not bad_input)
            if bad_input:
                dirs.discard()
            raise
        dirs.finish()
    return VinOfflineBuildResult(
        store_dir=out,
        root_sha256=published.root_sha256,
        num_samples=state["samples"],
        num_shards=len(records),
        reused_shards=state["reused"],
    )
