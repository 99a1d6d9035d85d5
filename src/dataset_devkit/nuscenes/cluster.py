"""Where a build runs: the ``[executor]`` table and the executors it opens.

A build's work per recording (ingest, frame extraction) and the export's frame copies are
tasks for a ``concurrent.futures.Executor`` (:mod:`.common.executor`). By default they run on
local processes (one per core; the copies on as many threads, since hashing and JPEG decoding
release the GIL). With ``scheduler = "tcp://host:port"`` they run on a Dask ``distributed``
cluster through ``Client.get_executor()``: the machines must mount the recordings and the
output directory at the same paths. The executor never changes what is published: the same
recordings and config give the same root hash wherever they ran.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from dataset_devkit.errors import ConfigError, MissingDependencyError
from dataset_devkit.nuscenes.common.executor import ExecutorError, local_pool

__all__ = [
    "MAX_DEFAULT_WORKERS",
    "BuildExecutors",
    "ExecutorConfig",
    "ExecutorTable",
    "check_cluster",
    "default_workers",
    "open_executors",
    "parse_executor",
]

#: Local worker processes by default: one per core, up to this many.
MAX_DEFAULT_WORKERS = 32
#: A Dask scheduler address: ``scheme://host:port``.
_SCHEDULER_RE = re.compile(r"^(tcp|tls|ucx|ws|wss)://\S+:\d{1,5}$")
#: Modules a local worker process imports once, before the first task.
_PRELOAD = ("dataset_devkit.nuscenes.evidence.parallel",)


def default_workers() -> int:
    """One local process per core, at most :data:`MAX_DEFAULT_WORKERS`."""
    return min(MAX_DEFAULT_WORKERS, os.cpu_count() or 1)


class ExecutorTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[executor]`` as written in ``build.toml`` (every key optional)."""

    workers: int | None = None
    scheduler: str | None = None
    connect_timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class ExecutorConfig:
    """Where a build runs its per-recording work and frame copies.

    Attributes
    ----------
    workers
        Local worker processes: recordings are ingested and their frames extracted in
        parallel, and the export copies frames on as many threads (frames of a few
        kilobytes: on those processes, when there are several recordings). Unused with a
        scheduler.
    scheduler
        A Dask ``distributed`` scheduler address (``tcp://host:port``); its workers run every
        task and must see the recordings and the output directory at the same paths.
    connect_timeout_s
        How long to wait for the scheduler before failing.
    """

    workers: int = field(default_factory=default_workers)
    scheduler: str | None = None
    connect_timeout_s: float = 10.0


def parse_executor(table: ExecutorTable) -> ExecutorConfig:
    """Check ``[executor]``: local processes (``workers``) or a Dask ``scheduler``, not both."""
    if table.scheduler is not None:
        if table.workers is not None:
            raise ConfigError(
                "executor.workers: the Dask scheduler's workers run the build; set workers "
                "or scheduler, not both",
                key="executor.workers",
            )
        if not _SCHEDULER_RE.match(table.scheduler):
            raise ConfigError(
                "executor.scheduler: expected a Dask scheduler address like "
                f"'tcp://host:8786', found {table.scheduler!r}",
                key="executor.scheduler",
            )
        timeout = 10.0 if table.connect_timeout_s is None else table.connect_timeout_s
        if not (math.isfinite(timeout) and 0 < timeout <= 3600):
            raise ConfigError(
                f"executor.connect_timeout_s: expected seconds within (0, 3600], found {timeout}",
                key="executor.connect_timeout_s",
            )
        return ExecutorConfig(workers=1, scheduler=table.scheduler, connect_timeout_s=timeout)
    if table.connect_timeout_s is not None:
        raise ConfigError(
            "executor.connect_timeout_s: applies to a Dask scheduler only; set "
            "executor.scheduler or remove it",
            key="executor.connect_timeout_s",
        )
    workers = default_workers() if table.workers is None else table.workers
    if not 1 <= workers <= 1024:
        raise ConfigError(
            f"executor.workers: expected a number of processes within [1, 1024], found {workers}",
            key="executor.workers",
        )
    return ExecutorConfig(workers=workers)


@dataclass(frozen=True, slots=True)
class BuildExecutors:
    """The executors of one build: per-recording tasks, and the export's frame copies.

    None runs in the calling process (the copies then use ``copy_threads`` threads). With
    ``copies`` None and a local pool for ``recordings``, frames of a few kilobytes are
    copied on that pool: their cost is Python's work per frame, which threads cannot share.
    """

    recordings: Executor | None
    copies: Executor | None
    copy_threads: int | None = None


def _connect(config: ExecutorConfig) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise MissingDependencyError(
            "distributed", extra="dask", purpose="executor.scheduler (a Dask cluster)"
        ) from None
    try:
        return Client(  # type: ignore[no-untyped-call]
            config.scheduler, timeout=config.connect_timeout_s, set_as_default=False
        )
    except (OSError, TimeoutError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ExecutorError(
            f"executor.scheduler: cannot reach the Dask scheduler at {config.scheduler} "
            f"within {config.connect_timeout_s:g} s ({detail}); start it or fix the address"
        ) from None


def _missing(paths: Sequence[str]) -> list[str]:
    """On a worker: the paths it cannot see."""
    return [p for p in paths if not os.path.lexists(p)]


def check_cluster(client: Any, shared: Sequence[Path], timeout_s: float) -> None:
    """Refuse a cluster without workers, or whose workers do not see the build's paths.

    Without a worker every task would wait forever; a worker on a machine that does not
    mount the recordings or the output directory would fail each task it gets with a
    "not found" that does not say why.
    """
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except TimeoutError:
        raise ExecutorError(
            f"executor.scheduler: the Dask scheduler at {client.scheduler.address} has no "
            f"worker after {timeout_s:g} s; start workers with: dask worker "
            f"{client.scheduler.address}"
        ) from None
    paths = [str(p) for p in shared]
    for worker, missing in sorted(client.run(_missing, paths).items()):
        if missing:
            raise ExecutorError(
                f"executor.scheduler: Dask worker {worker} does not see {missing[0]} "
                f"({len(missing)} of {len(paths)} paths); every machine of the cluster must "
                "mount the recordings and paths.output_dir at the same paths"
            )


@contextmanager
def open_executors(
    config: ExecutorConfig,
    recordings: int,
    executor: Executor | None = None,
    shared: Sequence[Path] = (),
) -> Iterator[BuildExecutors]:
    """The executors a build of *recordings* recordings runs on.

    A given *executor* runs everything (the caller owns it). Otherwise a Dask client is
    connected for ``scheduler`` (and its workers checked to see the *shared* paths: the
    recordings and the output directory) and closed afterwards, or a local process pool is
    started (only when there is more than one recording to spread).
    """
    if executor is not None:
        yield BuildExecutors(recordings=executor, copies=executor)
        return
    if config.scheduler is None:
        with local_pool(config.workers, recordings, _PRELOAD) as pool:
            yield BuildExecutors(recordings=pool, copies=None, copy_threads=config.workers)
        return
    client = _connect(config)
    try:
        check_cluster(client, shared, config.connect_timeout_s)
        # pure=False: a task's key is not a hash of its (large) arguments.
        remote = client.get_executor(pure=False)
        yield BuildExecutors(recordings=remote, copies=remote)
    finally:
        client.close()
