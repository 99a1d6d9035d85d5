"""The builder's default executors, whose workers never outlive the builder.

Process workers are forked from a fork server: one clean interpreter that imports the
shard writer (numpy, msgspec, this package) once, then forks a worker in milliseconds; its
only other thread is numpy's BLAS pool, which OpenBLAS shuts down around a fork. A spawned
worker pays an interpreter start and every import itself (~0.15 s of CPU each on an idle
machine, far more under load, all inside the build's time); forking the builder itself
would copy a process that may hold any threads (the caller's, a Dask client's) and an
initialized GPU context. The fork server stays up for the life of the builder's process,
so later builds start their workers at once; a worker takes the builder's environment of
the moment it starts, as a spawned one would. Each worker still runs the caller's main
module, as a spawned one does, where the fork server is not handed its path to preload
(Python 3.11 asks for the wrong key).

Each worker dies with the builder (SIGKILL, the OOM killer): see
:mod:`dataset_devkit.integrity.workers`, which every system's pools share.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Final

from dataset_devkit.integrity.workers import preload_fork_server, worker_pool

__all__ = [
    "default_workers",
    "process_pool",
    "start_fork_server",
    "thread_pool",
    "worker_started",
]

#: What the fork server imports before it forks any worker: the shard writer (which brings
#: numpy, msgspec and this package); ``__main__`` is the multiprocessing default (the
#: caller's script, whose functions the sources name), where the server is given its path.
_PRELOAD: Final = ("__main__", "dataset_devkit.vin_store._shard_task")


def default_workers() -> int:
    """One worker per available core, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(8, cores))


def worker_started() -> None:
    """An empty task: submitting it makes a pool start a worker now."""


def start_fork_server() -> None:
    """Start the fork server now, without waiting for it: it imports while the caller
    prepares the build (nothing, if it runs already)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover
        return  # Windows: spawn
    from multiprocessing import forkserver

    preload_fork_server(_PRELOAD)
    forkserver.ensure_running()


def process_pool(workers: int, *, start: bool = False) -> ProcessPoolExecutor:
    """*workers* processes forked from the fork server, which die with this process.

    *start*: fork them all now (a pool starts a worker only when a task finds none idle).
    """
    start_fork_server()
    pool = worker_pool(workers)
    if start:
        for _ in range(workers):
            pool.submit(worker_started)
    return pool


def thread_pool(workers: int) -> Executor:
    """Threads for shards the driver packed: writing and hashing release the GIL, and the
    rows need no copy into another process."""
    return ThreadPoolExecutor(workers, thread_name_prefix="vin-shard")
