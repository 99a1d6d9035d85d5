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

A ``ProcessPoolExecutor`` worker blocks reading its call queue, whose write end it holds
itself: when the builder is killed (SIGKILL, the OOM killer), no EOF ever arrives, and the
worker (with the fork server and resource tracker, which wait for it) is orphaned forever.
Each worker therefore watches the builder: a thread blocks on a pidfd of the builder
(Linux 5.3+) and exits the worker when it becomes readable, or else checks every 0.5 s
that the builder is still its parent or grandparent. A worker whose parent is the builder
(a spawn pool) also asks Linux to SIGKILL it when that parent dies (``PR_SET_PDEATHSIG``,
through ctypes: the standard library has no binding), which holds even while the worker's
Python code does not get the GIL.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Final

__all__ = [
    "default_workers",
    "process_pool",
    "start_fork_server",
    "thread_pool",
    "worker_started",
]

_PR_SET_PDEATHSIG: Final = 1
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


def _parent_of(pid: int) -> int | None:
    """The parent of process *pid*, from /proc; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses
            return int(stream.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _below(builder: int) -> bool:
    """Whether *builder* is this process's parent or its parent's parent (fork server)."""
    parent = os.getppid()
    return parent == builder or _parent_of(parent) == builder


def _watch_builder(builder: int, pidfd: int | None) -> None:
    if pidfd is not None:
        select.select([pidfd], [], [])  # readable once the builder has exited
        os._exit(1)
    while True:
        if not _below(builder):
            os._exit(1)
        time.sleep(0.5)


def _init_worker(builder: int, environ: dict[str, str]) -> None:
    """Worker initializer: take the builder's environment of now (a fork server keeps the
    one it started with), and exit as soon as the *builder* process is gone."""
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    _die_with_builder(builder)


def _die_with_builder(builder: int) -> None:
    """Exit this worker as soon as the *builder* process is gone."""
    if sys.platform.startswith("linux") and os.getppid() == builder:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
            pass
    try:
        pidfd: int | None = os.pidfd_open(builder)
    except (AttributeError, OSError):  # pragma: no cover - not Linux 5.3+
        pidfd = None
    # Checked after the pidfd is open: if the builder died before, its pid may name another
    # process now, but then this worker (or its fork server) has been reparented already.
    if not _below(builder):
        os._exit(1)
    threading.Thread(target=_watch_builder, args=(builder, pidfd), daemon=True).start()


def worker_started() -> None:
    """An empty task: submitting it makes a pool start a worker now."""


def start_fork_server() -> None:
    """Start the fork server now, without waiting for it: it imports while the caller
    prepares the build (nothing, if it runs already)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover
        return  # Windows: spawn
    from multiprocessing import forkserver

    # Read when the server starts (once it runs, this changes nothing); a caller's own
    # preload list is kept.
    theirs = getattr(forkserver._forkserver, "_preload_modules", None) or []
    forkserver.set_forkserver_preload(list(dict.fromkeys([*theirs, *_PRELOAD])))
    forkserver.ensure_running()


def process_pool(workers: int, *, start: bool = False) -> ProcessPoolExecutor:
    """*workers* processes forked from the fork server, which die with this process.

    *start*: fork them all now (a pool starts a worker only when a task finds none idle).
    """
    start_fork_server()
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_init_worker,
        initargs=(os.getpid(), dict(os.environ)),
    )
    if start:
        for _ in range(workers):
            pool.submit(worker_started)
    return pool


def thread_pool(workers: int) -> Executor:
    """Threads for shards the driver packed: writing and hashing release the GIL, and the
    rows need no copy into another process."""
    return ThreadPoolExecutor(workers, thread_name_prefix="vin-shard")
