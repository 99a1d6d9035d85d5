"""Process pools whose workers die with the process that started them (the builder).

A ``ProcessPoolExecutor`` worker blocks reading its call queue, whose write end it holds
itself: when the builder is killed (SIGKILL, the OOM killer), no EOF ever arrives, and the
worker (with the fork server and resource tracker, which wait for it) is orphaned forever,
holding its memory. Each worker therefore watches the builder: a thread blocks on a pidfd of
the builder (Linux 5.3+) and exits the worker when it becomes readable, or else checks every
0.5 s that the builder is still its parent or grandparent (a fork server sits between them).
A worker whose parent is the builder (a spawn pool) also asks Linux to SIGKILL it when that
parent dies (``PR_SET_PDEATHSIG``, through ctypes: the standard library has no binding),
which holds even while the worker's Python code does not get the GIL.

Workers take the builder's environment of the moment they start, as a spawned one would: a
fork server keeps the environment it started with, and it may have started long before.
Every pool the systems start for their workers comes from :func:`worker_pool`.
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
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Final, Literal

__all__ = [
    "StartMethod",
    "available_cores",
    "die_with",
    "init_worker",
    "preload_fork_server",
    "start_method",
    "worker_pool",
]

_PR_SET_PDEATHSIG: Final = 1

StartMethod = Literal["forkserver", "spawn"]


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or ``taskset``
    narrows), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


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


def _watch(builder: int, pidfd: int | None) -> None:
    if pidfd is not None:
        select.select([pidfd], [], [])  # readable once the builder has exited
        os._exit(1)
    while True:
        if not _below(builder):
            os._exit(1)
        time.sleep(0.5)


def die_with(builder: int) -> None:
    """Exit this process as soon as the *builder* process is gone (at once if it is)."""
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
    threading.Thread(target=_watch, args=(builder, pidfd), daemon=True).start()


def init_worker(builder: int, environ: dict[str, str]) -> None:
    """Worker initializer: take the builder's environment of now, and exit as soon as the
    *builder* process is gone."""
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    die_with(builder)


def start_method() -> StartMethod:
    """``forkserver`` where the platform has it, else ``spawn`` (Windows)."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def preload_fork_server(modules: Sequence[str]) -> None:
    """Have the fork server import *modules* once when it starts (no effect once it runs);
    a caller's own preload list is kept."""
    if start_method() != "forkserver":  # pragma: no cover - Windows
        return
    from multiprocessing import forkserver

    theirs = getattr(forkserver._forkserver, "_preload_modules", None) or []
    forkserver.set_forkserver_preload(list(dict.fromkeys([*theirs, *modules])))


def worker_pool(
    workers: int, *, method: StartMethod | None = None, preload: Sequence[str] = ()
) -> ProcessPoolExecutor:
    """*workers* processes that die with this process (see the module docstring).

    *method*: ``forkserver`` (the default where there is one: forking a process that may run
    threads, such as progress bars and decode pools, can deadlock the child) or ``spawn``.
    *preload* names modules a fork server not yet running imports once, so each worker
    starts warm; a caller's own preload list is kept.
    """
    chosen = method or start_method()
    if chosen == "forkserver" and chosen != start_method():  # pragma: no cover - Windows
        chosen = "spawn"
    if preload and chosen == "forkserver":
        preload_fork_server(preload)
    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context(chosen),
        initializer=init_worker,
        initargs=(os.getpid(), dict(os.environ)),
    )
