"""Cut a tree into a release: families, deterministic tar packages and their metadata.

Every file is read exactly once: delivered files are hashed while they are written into
their package, files of pending families are hashed only. When the tree carries a
``content_manifest.json`` (at the top, or in the one subdirectory whose manifest names
itself, like a nuScenes dataroot's ``mz_extensions/``) the same pass verifies it, and its
``root_sha256`` becomes the release's snapshot identity.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import (
    new_staging_dir,
    open_dir_nofollow,
    path_argument,
    remove_staging,
    remove_stale_staging,
)
from dataset_devkit.integrity.modes import ReadableBy, check_readable_by, folder_mode
from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, byte_reporter, report
from dataset_devkit.integrity.rename import rename_noreplace
from dataset_devkit.release import unpack
from dataset_devkit.release.errors import ReleaseExistsError
from dataset_devkit.release.metadata import (
    index_group_order,
    write_files_jsonl,
    write_metadata,
)
from dataset_devkit.release.options import PackOptions
from dataset_devkit.release.package_workers import (
    PackageChecks,
    package_pool,
    workers_help,
    write_packages_in_workers,
)
from dataset_devkit.release.planner import PlannedPackage, plan_packages
from dataset_devkit.release.scan import scan_tree
from dataset_devkit.release.snapshot import (
    carry_over,
    check_source_manifest,
    load_previous,
    snapshot_record,
)
from dataset_devkit.release.source import SourceReader, read_ahead
from dataset_devkit.release.spec import (
    FileRow,
    PackageRecord,
    ReleaseManifest,
    ValidationReport,
)
from dataset_devkit.release.tarwriter import TarPackageWriter
from dataset_devkit.release.validate import (
    collect_read_backs,
    fsync_package,
    raise_read_back_problems,
    read_back_package,
    restore_test_name,
)

__all__ = ["PackOptions", "PackResult", "pack_release"]

AfterPackage = Callable[[PackageRecord, dict[str, unpack.FileRow]], None]


@dataclass(frozen=True, slots=True)
class PackResult:
    """A finished release directory with its manifest and validation report."""

    release: Path
    manifest: ReleaseManifest
    validation: ValidationReport


def _write_packages(
    tree: Path,
    staging: Path,
    plans: dict[str, list[PlannedPackage]],
    deliver: set[str],
    name: str,
    progress: OnProgress | None,
    *,
    after_package: AfterPackage,
    hash_package: bool,
) -> tuple[dict[str, str], list[PackageRecord]]:
    """Read every file once: into its package and its hash, or only its hash (pending).

    *after_package* receives each finished, closed package with its rows: its fsync and
    read-back run there, on other threads, while the next package is written. Without a
    read-back (*hash_package*) the writer hashes the package bytes as it writes them.
    """
    digests: dict[str, str] = {}
    records: list[PackageRecord] = []
    advance = byte_reporter(progress, "pack")
    done = ProgressUpdate("pack", items=1)
    delivered = [
        item
        for family, packages in sorted(plans.items())
        if family in deliver
        for plan in packages
        for item in plan.files
    ]
    # Small files are read (and hashed) ahead on threads of their own, in batches, while
    # this thread lays them out in the packages; large files are streamed here.
    with (
        SourceReader(tree) as reader,
        ThreadPoolExecutor(max_workers=2, thread_name_prefix="pack-read") as readers,
        closing(read_ahead(tree, delivered, readers)) as ahead,  # on error: the rest cancelled
    ):
        for family, packages in sorted(plans.items()):
            if family in deliver:
                (staging / family).mkdir(mode=0o755)
            for plan in packages:
                if family not in deliver:
                    for item in plan.files:
                        digests[item.path] = reader.sha256(item, advance)
                        report(progress, done)
                    continue
                with TarPackageWriter(
                    staging / plan.name, hash_package=hash_package, fsync=False
                ) as tar:
                    for item in plan.files:
                        member = f"{name}/{item.path}"
                        read = next(ahead)
                        if read is None:
                            archive = partial(tar.add_member, member, item.size, progress=advance)
                            digests[item.path] = reader.read(item, archive)
                        else:
                            tar.add_bytes(member, read[0], advance)
                            digests[item.path] = read[1]
                        report(progress, done)
                if tar.size != plan.size:  # the plan and the writer disagree: a bug, not data
                    raise RuntimeError(f"{plan.name}: wrote {tar.size} bytes, planned {plan.size}")
                record = PackageRecord(
                    name=plan.name,
                    family=family,
                    size=tar.size,
                    sha256=tar.sha256,
                    member_count=tar.members,
                )
                records.append(record)
                rows = {
                    f.path: unpack.FileRow(f.path, f.size, digests[f.path], family, plan.name)
                    for f in plan.files
                }
                after_package(record, rows)
    return digests, records


def _write_in_this_process(
    tree: Path,
    staging: Path,
    plans: dict[str, list[PlannedPackage]],
    deliver: set[str],
    name: str,
    progress: OnProgress | None,
    *,
    read_back: bool,
) -> tuple[dict[str, str], list[PackageRecord]]:
    """:func:`_write_packages` with each finished package's fsync and read-back on a thread
    pool: read-backs use the CPUs, fsyncs wait on the disk, both overlap the writing."""
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1) + 1) as pool:
        checks: list[Future[tuple[PackageRecord, list[str]]]] = []
        flushes: list[Future[None]] = []

        def finish(record: PackageRecord, rows: dict[str, unpack.FileRow]) -> None:
            flushes.append(pool.submit(fsync_package, staging / record.name))
            if read_back:
                checks.append(pool.submit(read_back_package, staging, name, record, rows))

        digests, records = _write_packages(
            tree,
            staging,
            plans,
            deliver,
            name,
            progress,
            after_package=finish,
            hash_package=not read_back,
        )
        if read_back:
            records = collect_read_backs(check.result() for check in checks)
        for flush in flushes:
            flush.result()
    return digests, records


def _write_packages_in_workers(
    pool: ProcessPoolExecutor,
    tree: Path,
    staging: Path,
    plans: dict[str, list[PlannedPackage]],
    deliver: set[str],
    name: str,
    progress: OnProgress | None,
    *,
    read_back: bool,
) -> tuple[dict[str, str], list[PackageRecord], PackageChecks]:
    """:func:`_write_packages` with each new package written by the worker processes of
    *pool*, while this one hashes the files of the families not delivered.
    Returns the digests, the packages' records and their flushes and read-backs, which
    are still running."""
    digests: dict[str, str] = {}
    advance = byte_reporter(progress, "pack")
    delivered = [plan for family in sorted(deliver) for plan in plans[family]]
    for family in sorted(deliver):
        (staging / family).mkdir(mode=0o755)

    def hash_pending() -> None:
        with SourceReader(tree) as reader:
            for family, packages in sorted(plans.items()):
                if family in deliver:
                    continue
                for plan in packages:
                    for item in plan.files:
                        digests[item.path] = reader.sha256(item, advance)
                        report(progress, ProgressUpdate("pack", items=1))

    def package_done(plan: PlannedPackage) -> None:
        if advance is not None:
            advance(sum(item.size for item in plan.files))
        report(progress, ProgressUpdate("pack", items=len(plan.files)))

    written, checks = write_packages_in_workers(
        pool,
        tree,
        staging,
        name,
        delivered,
        read_back,
        alongside=hash_pending,
        on_package=package_done,
    )
    for plan, package in zip(delivered, written, strict=True):
        digests.update(zip((item.path for item in plan.files), package.digests, strict=True))
    return digests, [package.record for package in written], checks


def _wait_for_checks(checks: PackageChecks | None) -> None:
    """Wait for the workers' flushes and read-backs of the new packages (None: the packages
    were written here and already checked).

    Raises
    ------
    ReleaseVerificationError
        Listing every package or member that did not read back.
    """
    if checks is not None:
        raise_read_back_problems(checks.problems())


def _index_groups(
    plans: dict[str, list[PlannedPackage]], digests: dict[str, str], packaged: set[str]
) -> list[tuple[str, str | None, Iterator[tuple[str, int, str]]]]:
    """The rows of ``files.jsonl`` by package (a pending family's as one group), in the
    index's order; each group's rows are produced only when it is written."""
    groups: list[tuple[str, str | None, Iterator[tuple[str, int, str]]]] = []
    for family, packages in plans.items():
        if family in packaged:
            groups += [(family, plan.name, _rows_of([plan], digests)) for plan in packages]
        else:
            groups.append((family, None, _rows_of(packages, digests)))
    return sorted(groups, key=lambda group: index_group_order(group[0], group[1]))


def _rows_of(
    packages: list[PlannedPackage], digests: dict[str, str]
) -> Iterator[tuple[str, int, str]]:
    for plan in packages:
        for item in plan.files:
            yield item.path, item.size, digests[item.path]


def _carried_rows(
    plans: dict[str, list[PlannedPackage]], digests: dict[str, str], carried: set[str]
) -> Iterator[FileRow]:
    """The rows of the families an earlier release delivered, to compare with its index."""
    for family in sorted(carried):
        for plan in plans[family]:
            for item in plan.files:
                yield FileRow(
                    path=item.path,
                    size=item.size,
                    sha256=digests[item.path],
                    family=family,
                    package=plan.name,
                )


def _fsync_dir(path: Path) -> None:
    fd = open_dir_nofollow(path)
    try:
        with naming(path):
            os.fsync(fd)
    finally:
        os.close(fd)


def pack_release(
    tree: Path, out: Path, options: PackOptions | None = None, *, progress: OnProgress | None = None
) -> PackResult:
    """Pack *tree* into the new release directory *out* (which must not exist).

    *progress* hears of the one read of the tree as stage ``"pack"``: its byte and file
    totals, then bytes as they are read and each file done.

    The release is built in a sibling staging directory, verified (read-back and restore
    test as configured) and renamed into place without replacing anything; on any error
    the staging directory is removed and *out* is untouched.

    Raises
    ------
    ReleaseExistsError
        *out* exists.
    UnsafeTreeError
        The tree holds links, special files or names unsafe on Windows or macOS.
    PackageLimitError
        A file is larger than one package may be.
    VerificationFailed
        The tree does not match its content manifest, or the release does not verify.
    SnapshotMismatchError
        *previous* was cut from a different snapshot.
    PackWorkerError
        A worker process (``workers`` > 1) was killed or could not start.
    """
    path_argument(tree, "tree")
    path_argument(out, "out")
    if options is not None and not isinstance(options, PackOptions):
        raise ConfigError(f"options must be PackOptions, found {type(options).__name__}")
    opts = options or PackOptions()
    tree, out = Path(tree), Path(out).absolute()
    name = opts.name if opts.name is not None else tree.resolve().name
    # A name past the length limits is refused below, naming every file it makes too long.
    too_long = len(name.encode("utf-8", "surrogatepass")) > unpack.MAX_NAME_BYTES
    if "/" in name or (unpack.check_tree_names([name]) and not too_long):
        raise ConfigError(f"release name {name!r} is not a portable directory name", key="name")
    limit = opts.package_limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 4096 <= limit < 1 << 63:
        raise ConfigError(
            f"package limit must be an int of 4096 to 2**63 - 1 bytes, found {limit!r}",
            key="package_limit",
        )
    readable = check_readable_by(opts.readable_by)
    if os.path.lexists(out):
        raise ReleaseExistsError(f"{out}: already exists; a release is never overwritten")
    # the worker processes (if any) start while the tree is scanned
    with package_pool(opts.workers) as pool:
        return _pack(tree, out, opts, name, readable, progress, pool)


def _pack(
    tree: Path,
    out: Path,
    opts: PackOptions,
    name: str,
    readable: ReadableBy,
    progress: OnProgress | None,
    pool: ProcessPoolExecutor | None,
) -> PackResult:
    """:func:`pack_release` once its arguments are checked; *pool* writes the packages."""
    files = scan_tree(tree, name, pool=pool)
    if not files:
        raise ConfigError(
            f"{tree}: the tree holds no files; there is nothing to release", key="tree"
        )
    source = check_source_manifest(tree, files)
    families = opts.rules.assign(f.path for f in files)
    present = set(families.values())
    previous = load_previous(opts.previous, name, opts.package_limit)
    carried = (
        {f for f, info in previous.families.items() if info["status"] == "delivered"}
        if previous
        else set()
    )
    deliver = set(opts.deliver) if opts.deliver is not None else present - carried
    if deliver - present or deliver & carried or not deliver:
        raise ConfigError(
            f"cannot deliver {sorted(deliver)}: the tree has families {sorted(present)}, "
            f"already delivered: {sorted(carried)}",
            key="deliver",
        )
    plans = plan_packages(files, families, root_name=name, limit=opts.package_limit)
    report(
        progress,
        ProgressUpdate("pack", total_bytes=sum(f.size for f in files), total_items=len(files)),
    )
    # Left by killed packers (their release and restore-test scratch directories); a live
    # packer's staging directories are locked and stay.
    remove_stale_staging(out)
    remove_stale_staging(restore_test_name(out))
    staging = new_staging_dir(out)
    checks: PackageChecks | None = None
    try:
        new = [plan for family in sorted(deliver) for plan in plans[family]]
        if pool is not None and workers_help(new):
            digests, records, checks = _write_packages_in_workers(
                pool, tree, staging, plans, deliver, name, progress, read_back=opts.read_back
            )
        else:
            digests, records = _write_in_this_process(
                tree, staging, plans, deliver, name, progress, read_back=opts.read_back
            )
        snapshot = snapshot_record(tree, files, digests, source)
        if previous is not None:
            records += carry_over(
                previous, snapshot, _carried_rows(plans, digests, carried), carried
            )
        index_sha256, totals = write_files_jsonl(
            staging, _index_groups(plans, digests, deliver | carried)
        )
        package_counts = {family: len(packages) for family, packages in plans.items()}
        # The per-file lists are not needed past the index: dropped before the validation
        # loads the release the way unpack.py does, so the two never add up in memory.
        del files, families, plans, digests, source
        manifest, validation = write_metadata(
            staging,
            out,
            name=name,
            snapshot=snapshot,
            files_jsonl_sha256=index_sha256,
            family_totals=totals,
            packages=sorted(records, key=lambda r: r.name),
            package_counts=package_counts,
            delivered={*deliver, *carried},
            new_families=deliver,
            options=opts,
            previous=previous,
            packages_checked=partial(_wait_for_checks, checks),
        )
        # Durable before visible: the family folders' and the release folder's entries, then
        # the parent's new entry after the no-replace rename.
        for folder in [*(staging / f for f in sorted(deliver)), staging]:
            _fsync_dir(folder)
        with naming(staging):
            staging.chmod(folder_mode(readable))  # created 0700; opened up only on request
        parent_fd = open_dir_nofollow(out.parent)
        try:
            rename_noreplace(parent_fd, staging.name, parent_fd, out.name)
            with naming(out.parent):
                os.fsync(parent_fd)
        finally:
            os.close(parent_fd)
    except BaseException:
        if checks is not None:
            checks.cancel()
        remove_staging(staging)
        raise
    return PackResult(release=out, manifest=manifest, validation=validation)
