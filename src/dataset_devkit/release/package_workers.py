"""Packages written by worker processes, each task one whole package.

Once planned, a package is independent of every other: its bytes follow from its plan and
its files' contents alone. On a tree of small files a pack is Python work per file (the
checked read, the hash, the tar header, the strict read-back), which threads cannot spread
over the cores: they share one GIL. With ``PackOptions(workers=N)`` each of N processes
takes whole packages: it reads and hashes the package's files with the same checks as the
one-process pack and writes the package, hashing it as it goes. The results are gathered
in plan order, so the release is byte for byte the one-process release. Each package's
flush to disk and strict read-back is a second task, queued behind the writes: the last
read-backs run while the packer writes the index and the metadata, and the packer waits
for every one of them before it validates the release.

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
from dataset_devkit.release.scan import SourceFile
from dataset_devkit.release.source import SourceReader, read_each
from dataset_devkit.release.spec import PackageRecord
from dataset_devkit.release.tarwriter import TarPackageWriter
from dataset_devkit.release.validate import fsync_package, read_back_package

__all__ = [
    "SMALL_FILES_MEAN",
    "PackageChecks",
    "WrittenPackage",
    "check_package",
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
    """One package written by a worker; its flush and read-back follow as a task of their
    own (:func:`check_package`)."""

    #: The package's record; its SHA-256 is the one the writer took of the bytes it wrote.
    record: PackageRecord
    #: The SHA-256 of each of the plan's files, in the plan's order.
    digests: tuple[str, ...]


def write_package(tree: Path, staging: Path, name: str, plan: PlannedPackage) -> WrittenPackage:
    """Write *plan* as ``staging/<plan.name>`` (task): read and hash each file once, archive
    it, and hash the package as it is written. Its flush and read-back are left to
    :func:`check_package`."""
    digests: list[str] = []
    path = staging / plan.name
    with SourceReader(tree) as reader, TarPackageWriter(path, fsync=False) as tar:
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
    record = PackageRecord(
        name=plan.name,
        family=plan.family,
        size=tar.size,
        sha256=tar.sha256,
        member_count=tar.members,
    )
    return WrittenPackage(record, tuple(digests))


def check_package(
    staging: Path,
    name: str,
    record: PackageRecord,
    files: tuple[list[str], list[int], tuple[str, ...]],
    read_back: bool,
) -> list[str]:
    """Flush one written package to disk and, when *read_back*, read it back strictly
    (task): every member against its file's (path, size, SHA-256) in *files*, and the
    package's SHA-256 against the one its writer took. Returns every problem found."""
    fsync_package(staging / record.name)
    if not read_back:
        return []
    rows = {
        path: unpack.FileRow(path, size, digest, record.family, record.name)
        for path, size, digest in zip(*files, strict=True)
    }
    read, problems = read_back_package(staging, name, record, rows)
    if read.sha256 != record.sha256:
        problems.append(
            f"{record.name}: read back with SHA-256 {read.sha256}, written with {record.sha256}"
        )
    return problems


def _write_sent_package(
    tree: Path, staging: Path, name: str, sent: tuple[str, str, list[str], list[int], int]
) -> WrittenPackage:
    """:func:`write_package` of a plan sent as :func:`_sendable` columns (task)."""
    package, family, paths, sizes, size = sent
    plan = PlannedPackage(package, family, tuple(map(SourceFile, paths, sizes)), size)
    return write_package(tree, staging, name, plan)


def _sendable(plan: PlannedPackage) -> tuple[str, str, list[str], list[int], int]:
    """*plan* as plain columns for a worker: pickle writes one object per file of a plan
    of dataclasses, which on 58,233 small files took 0.1 s in the packer and 0.1 s more in
    the workers; a list of paths and a list of sizes pickle in a few milliseconds."""
    paths = [item.path for item in plan.files]
    return plan.name, plan.family, paths, [item.size for item in plan.files], plan.size


class PackageChecks:
    """The flush and read-back of every written package, running on the workers while the
    packer writes the index and the metadata (the last packages' read-backs would
    otherwise keep those waiting, and the metadata work would leave the workers idle)."""

    def __init__(self) -> None:
        self._pending: list[tuple[PlannedPackage, Future[list[str]]]] = []

    def add(self, plan: PlannedPackage, check: Future[list[str]]) -> None:
        self._pending.append((plan, check))

    def problems(self) -> list[str]:
        """Wait for every check; return their problems in plan order.

        Raises
        ------
        PackWorkerError
            A worker process died while checking a package.
        """
        found: list[str] = []
        try:
            for plan, check in self._pending:
                with _stopped_worker(plan):
                    found += check.result()
        finally:
            self.cancel()
        return found

    def cancel(self) -> None:
        """Cancel the checks not yet started (the pack failed: nothing will be published)."""
        for _, check in self._pending:
            check.cancel()


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
) -> tuple[list[WrittenPackage], PackageChecks]:
    """Write every plan on *pool*'s processes; return the results in plan order, and the
    packages' flushes and read-backs, which keep running on the pool after this returns.

    *alongside* runs in this process while the workers write (the hashing of families that
    are not delivered); *on_package* is called in plan order as each result is taken, and
    that package's check is submitted after it returns. The first failure in plan order is
    raised after the pending packages and checks are cancelled: the data's own errors keep
    their type and message (naming the file), a worker that died becomes
    :class:`PackWorkerError`.
    """
    futures: list[Future[WrittenPackage]] = []
    checks = PackageChecks()
    sent = [_sendable(plan) for plan in plans]  # the columns go to the write and the check
    try:
        for plan, columns in zip(plans, sent, strict=True):
            with _stopped_worker(plan):
                futures.append(pool.submit(_write_sent_package, tree, staging, name, columns))
        alongside()
        written = []
        for plan, columns, future in zip(plans, sent, futures, strict=True):
            with _stopped_worker(plan):
                package = future.result()
            written.append(package)
            on_package(plan)
            _, _, paths, sizes, _ = columns
            with _stopped_worker(plan):
                check = pool.submit(
                    check_package,
                    staging,
                    name,
                    package.record,
                    (paths, sizes, package.digests),
                    read_back,
                )
            checks.add(plan, check)
        return written, checks
    except BaseException:
        for future in futures:
            future.cancel()
        checks.cancel()
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
