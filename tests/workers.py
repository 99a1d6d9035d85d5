"""Run a reader in worker processes of each start method, as a DataLoader's workers would.

``fork`` copies the parent with the handles it opened and none of its threads; ``spawn`` and
``forkserver`` (the Linux default from Python 3.14) unpickle the reader in a fresh
interpreter. Each call starts two workers one after the other: the first is forked by the
calling thread, the second by the pool's own handler thread, as a pool that replaces its
workers (``maxtasksperchild``) does. A fork from another thread is the harsher case: the
child drops the calling thread's state, and with it that thread's thread-local objects
(PyAV 19 keeps one video scaler per thread, whose worker threads the child does not have).
A worker that hangs fails the test after a bounded wait instead of blocking the suite; the
pool kills it on exit.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import pytest

T = TypeVar("T")

#: The start methods this platform has, in the order a DataLoader user meets them.
START_METHODS: Final = tuple(
    m for m in ("fork", "forkserver", "spawn") if m in multiprocessing.get_all_start_methods()
)

#: Seconds a worker may take: the slowest start (spawn under load) is a few seconds.
WORKER_TIMEOUT: Final = 120.0


def run_in_worker(method: str, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in two new workers started with *method*; both must agree."""
    context = multiprocessing.get_context(method)
    results = []
    with context.Pool(1, maxtasksperchild=1) as pool:
        for forked_by in ("the calling thread", "the pool's handler thread"):
            pending = pool.apply_async(function, args)
            try:
                results.append(pending.get(WORKER_TIMEOUT))
            except multiprocessing.TimeoutError:
                pytest.fail(
                    f"a {method} worker started by {forked_by} did not answer in "
                    f"{WORKER_TIMEOUT:.0f} s: it hangs on something inherited from the parent "
                    "(a lock, a thread pool or a thread-local object)"
                )
    first, second = results
    assert _same(first, second), f"the two {method} workers read different values"
    return first


def _same(a: Any, b: Any) -> bool:
    import numpy as np

    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


def _exit_cleanly() -> None:
    pass


def fork_from_another_thread() -> None:
    """Fork a child from a new thread (as a pool replacing a worker does); fail if it hangs.

    The child drops the state of every other thread, this one's included: whatever this
    thread left in thread-local storage is freed there, in a process without its threads.
    """
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_exit_cleanly)
    starter = threading.Thread(target=child.start)
    starter.start()
    starter.join(WORKER_TIMEOUT)
    child.join(WORKER_TIMEOUT)
    if child.exitcode is None:
        child.kill()
        child.join()
        pytest.fail(
            f"a child forked from another thread did not exit in {WORKER_TIMEOUT:.0f} s: "
            "freeing this thread's thread-local objects there hangs"
        )
    assert child.exitcode == 0
