"""Packages written by worker processes, each task one whole package.

Once planned, a package is independent of every other: its bytes follow from its plan and
its files' contents alone. On a tree of small files a pack is Python work per file (the
checked read, the hash, the tar header, the strict read-back), which threads cannot spread
over the cores: they share one GIL. With ``PackOptions(workers=N)`` each of N processes
takes whole packages: it reads and hashes the package's files with the same checks as the
one-process pack, writes the package, flushes it to disk and reads it back strictly. The
results are gathered in plan order, so the release is byte for byte the one-process
release.

The workers come from :func:`dataset_devkit.integrity.workers.worker_pool` (a fork server
where there is one): they die with the packer, and a killed pack leaves a staging directory
that the next pack of the same release removes, as it always has.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

from dataset_devkit.integrity.workers import worker_pool
from dataset_devkit.release import unpack
from dataset_devkit.release.errors import PackWorkerError
from dataset_devkit.release.planner import PlannedPackage
from dataset_devkit.release.source import SourceReader, read_each
from dataset_devkit.release.spec import PackageRecord
from dataset_devkit.release.tarwriter import TarPackageWriter
from dataset_devkit.release.validate import fsync_package, read_back_package

__all__ = [
    "SMALL_FILES_MEAN",
    "WrittenPackage",
    "package_pool",
    "workers_help",
    "write_package",
    "write_packages_in_workers",
]


#: Mean file size under which the packages go to the workers. Below it a file costs more in
#: Python's per-file work (tens of microseconds) than in hashing and copying its bytes, which
#: the one-process pack already spreads over the cores (its hashing and I/O release the GIL,
#: and each finished package's fsync and read-back run on threads while the next one is
#: written). Measured on two cores: 58,233 files of at most 96 bytes packed in 0.58x the
#: time on two workers, 1,339 files averaging 390 KiB in 1.46x the time.
SMALL_FILES_MEAN: Final = 64 << 10


def workers_help(plans: Sequence[PlannedPackage]) -> bool:
    """Whether worker processes speed up writing *plans*: more than one package, and files
    under :data:`SMALL_FILES_MEAN` on average."""
    count = sum(len(plan.files) for plan in plans)
    total = sum(item.size for plan in plans for item in plan.files)
    return len(plans) > 1 and total < SMALL_FILES_MEAN * count


@dataclass(frozen=True, slots=True)
class WrittenPackage:
    """One package written, flushed and (when asked) read back by a worker."""

    record: PackageRecord
    #: The SHA-256 of each of the plan's files, in the plan's order.
    digests: tuple[str, ...]
    #: What the strict read-back found wrong (empty when it passed or did not run).
    problems: tuple[str, ...]


def write_package(
    tree: Path, staging: Path, name: str, plan: PlannedPackage, read_back: bool
) -> WrittenPackage:
    """Write *plan* as ``staging/<plan.name>`` (task): read and hash each file once, archive
    it, flush the package, and read it back strictly when *read_back* (the package's
    SHA-256 then comes from that read, as in the one-process pack)."""
    digests: list[str] = []
    path = staging / plan.name
    with (
        SourceReader(tree) as reader,
        TarPackageWriter(path, hash_package=not read_back, fsync=False) as tar,
    ):
        items = iter(plan.files)
        for read in read_each(reader, plan.files):
            item = next(items)
            member = f"{name}/{item.path}"
            if read is None:
                digests.append(reader.read(item, partial(tar.add_member, member, item.size)))
            else:
                tar.add_bytes(member, read[0])
                digests.append(read[1])
    if tar.size != plan.size:  # the plan and the writer disagree: a bug, not data
        raise RuntimeError(f"{plan.name}: wrote {tar.size} bytes, planned {plan.size}")
    fsync_package(path)
    record = PackageRecord(
        name=plan.name,
        family=plan.family,
        size=tar.size,
        sha256=tar.sha256,
        member_count=tar.members,
    )
    problems: list[str] = []
    if read_back:
        rows = {
            f.path: unpack.FileRow(f.path, f.size, digest, plan.family, plan.name)
            for f, digest in zip(plan.files, digests, strict=True)
        }
        record, problems = read_back_package(staging, name, record, rows)
    return WrittenPackage(record, tuple(digests), tuple(problems))


@contextmanager
def package_pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """*workers* processes for :func:`write_packages_in_workers`, or None for one.

    The processes are started at once, from a thread of their own, so that they come up
    (the fork server imports the release package; each worker prepares the caller's main
    module) while this thread scans the tree, instead of after it: on a tree of small files
    that start costs as much as writing a third of the packages.
    """
    if workers <= 1:
        yield None
        return
    with worker_pool(workers, preload=[__name__]) as pool:
        starter = threading.Thread(
            target=_start, args=(pool, workers), name="pack-workers-start", daemon=True
        )
        starter.start()
        try:
            yield pool
        finally:
            starter.join()


def _start(pool: ProcessPoolExecutor, workers: int) -> None:
    """Have *pool* start its processes: one trivial task each (a task that fails here
    fails again, named, when the packages are submitted)."""
    with suppress(Exception):
        for future in [pool.submit(os.getpid) for _ in range(workers)]:
            future.result()


def write_packages_in_workers(
    pool: ProcessPoolExecutor,
    tree: Path,
    staging: Path,
    name: str,
    plans: Sequence[PlannedPackage],
    read_back: bool,
    *,
    alongside: Callable[[], None],
    on_package: Callable[[PlannedPackage], None],
) -> list[WrittenPackage]:
    """Write every plan on *pool*'s processes; return the results in plan order.

    *alongside* runs in this process while the workers write (the hashing of families that
    are not delivered); *on_package* is called in plan order as each result is taken. The
    first failure in plan order is raised after the pending packages are cancelled: the
    data's own errors keep their type and message (naming the file), a worker that died
    becomes :class:`PackWorkerError`.
    """
    futures: list[Future[WrittenPackage]] = []
    try:
        for plan in plans:
            with _stopped_worker(plan):
                futures.append(pool.submit(write_package, tree, staging, name, plan, read_back))
        alongside()
        written = []
        for plan, future in zip(plans, futures, strict=True):
            with _stopped_worker(plan):
                written.append(future.result())
            on_package(plan)
        return written
    except BaseException:
        for future in futures:
            future.cancel()
        raise


@contextmanager
def _stopped_worker(plan: PlannedPackage) -> Iterator[None]:
    """A pool whose worker died (now or before) raises :class:`PackWorkerError` naming the
    package it was to write."""
    try:
        yield
    except BrokenProcessPool as exc:
        raise PackWorkerError(
            f"{plan.name}: a worker process writing packages stopped ({exc}); a script that "
            'packs with workers > 1 must run it under `if __name__ == "__main__":`'
        ) from exc
