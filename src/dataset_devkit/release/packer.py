"""Cut a tree into a release: families, deterministic tar packages and their metadata.

Every file is read exactly once: delivered files are hashed while they are written into
their package, files of pending families are hashed only. When the tree carries a
``content_manifest.json`` the same pass verifies it, and its ``root_sha256`` becomes the
release's snapshot identity.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dataset_devkit.errors import ConfigError, VerificationFailed
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    ContentManifest,
    new_staging_dir,
    open_dir_nofollow,
    read_manifest,
    remove_staging,
)
from dataset_devkit.integrity.rename import rename_noreplace
from dataset_devkit.release import unpack
from dataset_devkit.release.errors import ReleaseExistsError, SnapshotMismatchError
from dataset_devkit.release.families import FamilyRules
from dataset_devkit.release.metadata import write_metadata
from dataset_devkit.release.planner import PlannedPackage, plan_packages
from dataset_devkit.release.source import SourceFile, SourceReader, scan_tree
from dataset_devkit.release.spec import (
    DEFAULT_PACKAGE_LIMIT,
    FileRow,
    PackageRecord,
    ReleaseManifest,
    SnapshotRecord,
    ValidationReport,
)
from dataset_devkit.release.tarwriter import TarPackageWriter
from dataset_devkit.release.validate import read_back_packages

__all__ = ["PackOptions", "PackResult", "pack_release"]

Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class PackOptions:
    """How to cut a release.

    Parameters
    ----------
    name
        The common root directory inside every package (default: the tree's folder name).
    package_limit
        Maximum bytes per package (default 4 GiB - 1, which also fits FAT32).
    rules
        Family rules (default: ``depth-*/**`` is ``depth``, the rest ``base``).
    deliver
        Families to package now (default: all); the others are listed as pending.
    previous
        An earlier release of the same snapshot whose delivered families are carried over,
        so a family can be published later with updated metadata.
    read_back
        Re-read every new package strictly and hash every member against ``files.jsonl``.
    restore_test
        Restore with the shipped ``unpack.py`` into scratch space: every new package
        (``full``), the first of each family (``sample``) or none.
    """

    name: str | None = None
    package_limit: int = DEFAULT_PACKAGE_LIMIT
    rules: FamilyRules = field(default_factory=FamilyRules)
    deliver: tuple[str, ...] | None = None
    previous: Path | None = None
    read_back: bool = True
    restore_test: Literal["full", "sample", "none"] = "sample"


@dataclass(frozen=True, slots=True)
class PackResult:
    """A finished release directory with its manifest and validation report."""

    release: Path
    manifest: ReleaseManifest
    validation: ValidationReport


def _check_source_manifest(tree: Path, files: list[SourceFile]) -> ContentManifest | None:
    if not any(f.path == CONTENT_MANIFEST_NAME for f in files):
        return None
    manifest = read_manifest(tree)
    listed = manifest.by_path()
    found = {f.path: f.size for f in files if f.path != CONTENT_MANIFEST_NAME}
    issues = [f"{p}: missing (listed in {CONTENT_MANIFEST_NAME})" for p in listed if p not in found]
    issues += [f"{p}: extra file not in {CONTENT_MANIFEST_NAME}" for p in found if p not in listed]
    issues += [
        f"{p}: {size} bytes, {CONTENT_MANIFEST_NAME} says {listed[p].size}"
        for p, size in found.items()
        if p in listed and listed[p].size != size
    ]
    if issues:
        raise VerificationFailed(f"{tree}: does not match its content manifest", sorted(issues))
    return manifest


def _load_previous(previous: Path | None, name: str, limit: int) -> unpack.Release | None:
    if previous is None:
        return None
    try:
        release = unpack.load_release(str(previous))
    except unpack.UnpackError as exc:
        raise VerificationFailed(
            f"{previous}: previous release does not load", [str(exc)]
        ) from None
    if release.name != name or release.manifest["package_limit_bytes"] != limit:
        raise SnapshotMismatchError(
            f"{previous}: previous release is {release.name!r} with a "
            f"{release.manifest['package_limit_bytes']}-byte limit; this one is {name!r} "
            f"with {limit}: a later family must use the same name and limit"
        )
    return release


def _write_packages(
    tree: Path,
    staging: Path,
    plans: dict[str, list[PlannedPackage]],
    deliver: set[str],
    name: str,
    progress: Progress | None,
    *,
    hash_packages: bool,
) -> tuple[dict[str, str], list[PackageRecord]]:
    """Read every file once: into its package and its hash, or only its hash (pending)."""
    digests: dict[str, str] = {}
    records: list[PackageRecord] = []
    with SourceReader(tree) as reader:
        for family, packages in sorted(plans.items()):
            if family in deliver:
                (staging / family).mkdir(mode=0o755)
            for plan in packages:
                if family not in deliver:
                    for item in plan.files:
                        digests[item.path] = _hash_only(reader, item, progress)
                    continue
                with TarPackageWriter(staging / plan.name, hash_package=hash_packages) as tar:
                    for item in plan.files:
                        tar.begin_member(f"{name}/{item.path}", item.size)
                        hasher = hashlib.sha256()
                        for chunk in reader.chunks(item):
                            hasher.update(chunk)
                            tar.write(chunk)
                            if progress is not None:
                                progress(len(chunk))
                        tar.end_member(item.size)
                        digests[item.path] = hasher.hexdigest()
                if tar.size != plan.size:  # the plan and the writer disagree: a bug, not data
                    raise RuntimeError(f"{plan.name}: wrote {tar.size} bytes, planned {plan.size}")
                records.append(
                    PackageRecord(
                        name=plan.name,
                        family=family,
                        size=tar.size,
                        sha256=tar.sha256,
                        member_count=tar.members,
                    )
                )
    return digests, records


def _hash_only(reader: SourceReader, item: SourceFile, progress: Progress | None) -> str:
    hasher = hashlib.sha256()
    for chunk in reader.chunks(item):
        hasher.update(chunk)
        if progress is not None:
            progress(len(chunk))
    return hasher.hexdigest()


def _snapshot(
    files: list[SourceFile], digests: dict[str, str], source: ContentManifest | None
) -> SnapshotRecord:
    if source is None:
        return SnapshotRecord(
            root_sha256=unpack.root_sha256((f.path, f.size, digests[f.path]) for f in files),
            source="computed",
            excluded=(),
            file_count=len(files),
            total_bytes=sum(f.size for f in files),
        )
    listed = source.by_path()
    issues = [
        f"{path}: SHA-256 {digest}, {CONTENT_MANIFEST_NAME} says {listed[path].sha256}"
        for path, digest in sorted(digests.items())
        if path in listed and listed[path].sha256 != digest
    ]
    if issues:
        raise VerificationFailed("the tree does not match its content manifest", issues)
    return SnapshotRecord(
        root_sha256=source.root_sha256,
        source="content_manifest",
        excluded=source.excluded,
        file_count=source.file_count,
        total_bytes=source.total_bytes,
    )


def _carry_over(
    previous: unpack.Release, snapshot: SnapshotRecord, rows: list[FileRow], carried: set[str]
) -> list[PackageRecord]:
    if previous.snapshot_root != snapshot.root_sha256:
        raise SnapshotMismatchError(
            f"the tree is snapshot {snapshot.root_sha256}, the previous release is snapshot "
            f"{previous.snapshot_root}: families of different snapshots are never mixed"
        )
    old = {r.path: (r.size, r.sha256, r.family, r.package) for r in previous.rows}
    diffs = [
        f"{r.path}: assigned differently than in the previous release"
        for r in rows
        if r.family in carried and old.get(r.path) != (r.size, r.sha256, r.family, r.package)
    ]
    if diffs:
        raise SnapshotMismatchError("carried-over families differ from the previous release", diffs)
    return [
        PackageRecord(**{k: p[k] for k in ("name", "family", "size", "sha256", "member_count")})
        for p in previous.packages_of(carried)
    ]


def pack_release(
    tree: Path, out: Path, options: PackOptions | None = None, *, progress: Progress | None = None
) -> PackResult:
    """Pack *tree* into the new release directory *out* (which must not exist).

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
    """
    opts = options or PackOptions()
    tree, out = Path(tree), Path(out).absolute()
    name = opts.name or tree.resolve().name
    if "/" in name or unpack.check_tree_names([name]):
        raise ConfigError(f"release name {name!r} is not a portable directory name", key="name")
    if opts.package_limit < 4096:
        raise ConfigError("package limit must be at least 4096 bytes", key="package_limit")
    if os.path.lexists(out):
        raise ReleaseExistsError(f"{out}: already exists; a release is never overwritten")
    files = scan_tree(tree)
    source = _check_source_manifest(tree, files)
    families = opts.rules.assign(f.path for f in files)
    present = set(families.values())
    previous = _load_previous(opts.previous, name, opts.package_limit)
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
    staging = new_staging_dir(out)
    try:
        digests, records = _write_packages(
            tree, staging, plans, deliver, name, progress, hash_packages=not opts.read_back
        )
        snapshot = _snapshot(files, digests, source)
        package_of = {f.path: p.name for ps in plans.values() for p in ps for f in p.files}
        rows = [
            FileRow(
                path=f.path,
                size=f.size,
                sha256=digests[f.path],
                family=families[f.path],
                package=package_of[f.path] if families[f.path] in deliver | carried else None,
            )
            for f in files
        ]
        if opts.read_back:
            records = read_back_packages(staging, name, records, rows)
        if previous is not None:
            records += _carry_over(previous, snapshot, rows, carried)
        manifest, validation = write_metadata(
            staging,
            out,
            name=name,
            snapshot=snapshot,
            rows=rows,
            packages=sorted(records, key=lambda r: r.name),
            plans=plans,
            delivered={*deliver, *carried},
            new_families=deliver,
            options=opts,
            previous=previous,
        )
        parent_fd = open_dir_nofollow(out.parent)
        try:
            rename_noreplace(parent_fd, staging.name, parent_fd, out.name)
        finally:
            os.close(parent_fd)
    except BaseException:
        remove_staging(staging)
        raise
    return PackResult(release=out, manifest=manifest, validation=validation)
