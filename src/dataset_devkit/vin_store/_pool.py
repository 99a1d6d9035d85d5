"""The builder's default executors, whose workers never outlive the builder.

A ``ProcessPoolExecutor`` worker blocks reading its call queue, whose write end it holds
itself: when the builder is killed (SIGKILL, the OOM killer), no EOF ever arrives and the
worker, with the resource tracker it keeps alive, is orphaned forever. Each worker
therefore asks Linux to SIGKILL it when its parent dies (``PR_SET_PDEATHSIG``, through
ctypes: the standard library has no binding), and, where that is unavailable or the parent
died before the request took effect, a daemon thread checks the parent every 0.5 s.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Final

__all__ = ["default_workers", "process_pool", "thread_pool", "worker_started"]

_PR_SET_PDEATHSIG: Final = 1


def default_workers() -> int:
    """One worker per available core, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(8, cores))


def _watch_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(0.5)


def _die_with_parent(parent: int) -> None:
    """Worker initializer: exit as soon as *parent* is gone."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
            pass
    if os.getppid() != parent:  # died before the request above took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def worker_started() -> None:
    """An empty task: submitting it makes a pool start a worker now."""


def process_pool(workers: int) -> Executor:
    """A spawn process pool (fork would copy a parent that may hold threads) of workers
    that die with the builder."""
    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )


def thread_pool(workers: int) -> Executor:
    """Threads for shards the driver packed: writing and hashing release the GIL, and the
    rows need no copy into another process."""
    return ThreadPoolExecutor(workers, thread_name_prefix="vin-shard")
