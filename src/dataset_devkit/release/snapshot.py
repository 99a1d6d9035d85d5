"""The release's identity: the source snapshot, its content manifest, and earlier releases."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.errors import VerificationFailed
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    ManifestNotFoundError,
    locate_manifest,
    read_manifest,
)
from dataset_devkit.release import unpack
from dataset_devkit.release.errors import SnapshotMismatchError
from dataset_devkit.release.scan import SourceFile
from dataset_devkit.release.spec import FileRow, PackageRecord, SnapshotRecord

__all__ = [
    "SourceManifest",
    "carry_over",
    "check_source_manifest",
    "load_previous",
    "snapshot_record",
]


def _may_hold_manifest(path: str) -> bool:
    """Whether *path* is where discovery looks: the top, or one directory down."""
    return path == CONTENT_MANIFEST_NAME or (
        path.count("/") == 1 and path.endswith("/" + CONTENT_MANIFEST_NAME)
    )


@dataclass(frozen=True, slots=True)
class SourceManifest:
    """What a pack keeps of the tree's content manifest: its identity, not its entries.

    The entries (one per file) are checked against the listing and dropped; the hashes are
    checked through the root (:func:`snapshot_record`), so a 50,000-file manifest is not
    held in memory next to the packer's own index while every file is read.
    """

    location: str
    root_sha256: str
    excluded: tuple[str, ...]
    file_count: int
    total_bytes: int


def check_source_manifest(tree: Path, files: list[SourceFile]) -> SourceManifest | None:
    """Read the tree's content manifest, if any, and check its listing and sizes (no hashing).

    The manifest is found the integrity core's way: ``content_manifest.json`` at the top, or
    the one subdirectory manifest that names itself in ``excluded`` (a nuScenes dataroot's
    ``mz_extensions/content_manifest.json``). Only that path is left out of the comparison;
    a same-named file anywhere else is content. The hashes are compared later, in the same
    read that archives each file.
    """
    if not any(_may_hold_manifest(f.path) for f in files):
        return None
    try:
        location = locate_manifest(tree)
    except ManifestNotFoundError:
        return None  # only nested files that do not claim to be this tree's manifest
    manifest = read_manifest(tree, location=location)
    listed = manifest.by_path()
    found = {f.path: f.size for f in files if f.path != location}
    issues = [f"{p}: missing (listed in {location})" for p in listed if p not in found]
    issues += [f"{p}: extra file not in {location}" for p in found if p not in listed]
    issues += [
        f"{p}: {size} bytes, {location} says {listed[p].size}"
        for p, size in found.items()
        if p in listed and listed[p].size != size
    ]
    if issues:
        raise VerificationFailed(f"{tree}: does not match its content manifest", sorted(issues))
    return SourceManifest(
        location=location,
        root_sha256=manifest.root_sha256,
        excluded=manifest.excluded,
        file_count=manifest.file_count,
        total_bytes=manifest.total_bytes,
    )


def load_previous(previous: Path | None, name: str, limit: int) -> unpack.Release | None:
    """Load an earlier release of the same tree; its name and package limit must match."""
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


def snapshot_record(
    tree: Path, files: list[SourceFile], digests: dict[str, str], source: SourceManifest | None
) -> SnapshotRecord:
    """The snapshot identity: the content manifest's root (every hash checked against it)
    or, without one, the same root formula computed over every file.

    With a manifest, the root of the hashes just read must be the manifest's root: equal
    roots mean equal entries. Only when they differ is the manifest read again, to name
    every file whose hash differs.
    """
    if source is None:
        return SnapshotRecord(
            root_sha256=unpack.root_sha256((f.path, f.size, digests[f.path]) for f in files),
            source="computed",
            excluded=(),
            file_count=len(files),
            total_bytes=sum(f.size for f in files),
        )
    found = unpack.root_sha256(
        (f.path, f.size, digests[f.path]) for f in files if f.path != source.location
    )
    if found != source.root_sha256:
        listed = read_manifest(tree, location=source.location).by_path()
        issues = [
            f"{path}: SHA-256 {digest}, {source.location} says {listed[path].sha256}"
            for path, digest in sorted(digests.items())
            if path in listed and listed[path].sha256 != digest
        ] or [f"{source.location}: root {source.root_sha256}, its files hash to root {found}"]
        raise VerificationFailed("the tree does not match its content manifest", issues)
    return SnapshotRecord(
        root_sha256=source.root_sha256,
        source="content_manifest",
        excluded=source.excluded,
        file_count=source.file_count,
        total_bytes=source.total_bytes,
    )


def carry_over(
    previous: unpack.Release,
    snapshot: SnapshotRecord,
    rows: Iterable[FileRow],
    carried: set[str],
) -> list[PackageRecord]:
    """Check that *previous* is the same snapshot, cut identically, and return its records
    for the families it already delivered."""
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
