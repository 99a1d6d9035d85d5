"""Run a stage's independent tasks through any ``concurrent.futures.Executor``.

A build spreads its per-recording work (ingest, frame extraction) and the export's frame
copies over an executor: a local process pool by default, or a Dask ``distributed`` cluster
(``Client.get_executor()``) whose workers share the output filesystem. The tasks are plain
module-level functions over paths and picklable records, so any executor can run them; the
results are gathered in task order, never in completion order, which keeps every output
byte-identical whatever ran it.

A failed task is raised naming its subject (the recording, the frame batch): the dataset's own
typed errors keep their type, and anything else (a worker killed, a scheduler gone) becomes
:class:`ExecutorError`.
"""

from __future__ import annotations

import copy
import functools
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, TypeVar

from dataset_devkit.errors import DevkitError
from dataset_devkit.integrity.workers import worker_pool

__all__ = ["ExecutorError", "Task", "local_pool", "run_tasks"]

R = TypeVar("R")

#: ``(subject, args)``: the subject names the task in errors (a recording's path).
Task = tuple[str, tuple[Any, ...]]

#: Tasks submitted ahead of the one being collected: bounds the results held in memory.
_IN_FLIGHT = 64


class ExecutorError(DevkitError):
    """A task failed on an executor for a reason outside the data: a worker process died, a
    Dask worker was lost, the scheduler went away, or the task raised an unexpected error."""


def _named(exc: BaseException, subject: str) -> BaseException:
    """*exc* with *subject* in its message (typed errors keep their type)."""
    if isinstance(exc, DevkitError):
        if subject in str(exc):
            return exc
        named = copy.copy(exc)
        head = str(exc.args[0]) if exc.args else ""
        named.args = (f"{subject}: {head}", *exc.args[1:])
        return named
    hint = ""
    if isinstance(exc, BrokenProcessPool):
        # Most often a script without a main guard: each worker re-imports it and starts
        # the build again, which multiprocessing refuses.
        hint = (
            "; a local worker process exited (a script that builds must run the build under "
            '`if __name__ == "__main__":`, as worker processes import it)'
        )
    return ExecutorError(f"{subject}: failed on a worker: {type(exc).__name__}: {exc}{hint}")


def run_tasks(
    executor: Executor | None,
    fn: Callable[..., R],
    tasks: Sequence[Task],
    *,
    on_result: Callable[[int, R], None] | None = None,
    alongside: Callable[[], None] | None = None,
) -> list[R]:
    """``[fn(*args) for _, args in tasks]``, run on *executor* (inline when None).

    Results come back in task order; *on_result(i, result)* is called in that order from the
    calling thread (progress). At most a bounded number of tasks are in flight. On the first
    failure (in task order) the pending tasks are cancelled, the running ones waited for, and
    the failure is raised naming its subject: a typed error keeps its type, anything else
    from an executor becomes an :class:`ExecutorError`.

    *alongside* runs in the calling thread once the first tasks are submitted (inline:
    after the last), so the caller's own work overlaps the executor's. If it fails, the
    tasks are stopped as above and the first failed task, if any, is raised in its place.
    """
    results: list[R] = []

    def collect(i: int, get: Callable[[], R]) -> None:
        try:
            result = get()
        except DevkitError as exc:
            raise _named(exc, tasks[i][0]) from exc
        except Exception as exc:
            if executor is None:
                raise  # in this process: a caller's callback or a bug, raised as it is
            raise _named(exc, tasks[i][0]) from exc
        results.append(result)
        if on_result is not None:
            on_result(i, result)

    if executor is None:
        for i, (_, args) in enumerate(tasks):
            collect(i, functools.partial(fn, *args))
        if alongside is not None:
            alongside()
        return results
    pending: deque[tuple[int, Future[R]]] = deque()
    try:
        for i, (_, args) in enumerate(tasks):
            pending.append((i, executor.submit(fn, *args)))
            if len(pending) >= _IN_FLIGHT:
                if alongside is not None:
                    _run_alongside(alongside, pending, collect)
                    alongside = None
                j, future = pending.popleft()
                collect(j, future.result)
        if alongside is not None:
            _run_alongside(alongside, pending, collect)
        while pending:
            j, future = pending.popleft()
            collect(j, future.result)
    except BaseException:
        # Cancel what has not started and wait for what has: the caller removes the
        # half-written output next, and no task may still be writing into it then.
        running = [future for _, future in pending if not future.cancel()]
        wait(running)
        raise
    return results


def _run_alongside(
    alongside: Callable[[], None],
    pending: deque[tuple[int, Future[R]]],
    collect: Callable[[int, Callable[[], R]], None],
) -> None:
    """Run *alongside*; if it fails, stop the tasks and raise the first task that failed
    (its data error names the cause), or else the failure of *alongside*."""
    try:
        alongside()
    except BaseException:
        for _, future in pending:
            future.cancel()
        wait([future for _, future in pending if not future.cancelled()])
        for j, future in pending:
            if not future.cancelled() and future.exception() is not None:
                collect(j, future.result)  # raises the task's own error, named
        raise


@contextmanager
def local_pool(workers: int, tasks: int, preload: Sequence[str] = ()) -> Iterator[Executor | None]:
    """A pool of ``min(workers, tasks)`` local processes, or None (run inline) for one.

    Processes start through the ``forkserver`` (``spawn`` where there is none): forking a
    process that may run threads (progress bars, decode pools) can deadlock the child.
    *preload* names modules the fork server imports once, so each worker starts warm. The
    workers die with this process, also when it is killed
    (:mod:`dataset_devkit.integrity.workers`).
    """
    count = min(workers, tasks)
    if count <= 1:
        yield None
        return
    with worker_pool(count, preload=preload) as pool:
        yield pool
