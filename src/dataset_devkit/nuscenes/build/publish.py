"""Finalize a validated staging dataroot and publish it read-only under its final name.

Order matters and is the seed's: validate everything, run the official loader, and only then
replace ``validation.json`` with deterministic success evidence; the integrity core then
writes ``mz_extensions/content_manifest.json`` last, seals the tree (0400/0500), fsyncs,
rechecks, renames it atomically without replacing anything and checks it again after the
rename.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from dataset_devkit.errors import (
    DestinationExistsError,
    FormatError,
    PublicationError,
    UnsafePathError,
)
from dataset_devkit.integrity import SafeDir, canonical_json, publish_tree
from dataset_devkit.integrity.modes import ReadableBy
from dataset_devkit.integrity.tree_size import tree_size
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.dataroot import (
    Progress,
    ValidationReport,
    hash_counter,
    validate_dataroot,
)
from dataset_devkit.nuscenes.validation.fleet import FleetNotes, fleet_notes
from dataset_devkit.nuscenes.validation.loader import OfficialLoaderCheck, check_official_loader
from dataset_devkit.nuscenes.validation.result import (
    expected_validation_document,
    loader_target,
)

__all__ = [
    "PublishedDataroot",
    "PublishedSummary",
    "check_final_destination",
    "final_dataroot",
    "publish_dataroot",
]


@dataclass(frozen=True, slots=True)
class PublishedSummary:
    """What the final validation found in the published tables, without the tables.

    The loaded tables grow with the dataset (tens of KB per key-frame sample as Python
    rows); the build only needs their sizes, the camera channels and the fleet's notes, so
    only these outlive the recheck and the hashing that follows it.
    """

    scenes: int
    samples: int
    images: int
    channels: tuple[str, ...]
    notes: FleetNotes


@dataclass(frozen=True, slots=True)
class PublishedDataroot:
    """A published dataroot: where it is, its root hash and what was checked."""

    dataroot: Path
    root_sha256: str
    summary: PublishedSummary
    loader: OfficialLoaderCheck


def _summarize(report: ValidationReport) -> PublishedSummary:
    tables = report.tables.tables
    ext = report.extensions
    return PublishedSummary(
        scenes=len(tables["scene"]),
        samples=len(tables["sample"]),
        images=len(tables["sample_data"]),
        channels=tuple(sorted(row["channel"] for row in tables["sensor"])),
        notes=fleet_notes(
            ext.get(spec.RECORDINGS_FILE),
            ext.get(spec.VALIDITY_FILE),
            ext.get(spec.PIPELINE_AUDIT_FILE),
        ),
    )


def final_dataroot(output_dir: str | Path) -> Path:
    """The final dataroot of a build: ``output_dir/v1.0-trainval``."""
    return Path(output_dir).absolute() / spec.VERSION


def check_final_destination(final: Path) -> None:
    """Refuse an existing final name and a parent that is a symlink or not a directory."""
    parent = final.parent
    try:
        st = os.lstat(parent)
    except FileNotFoundError:
        raise PublicationError(f"{parent}: output directory does not exist") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError("output directory is a symlink; refusing to follow it", path=parent)
    if not stat.S_ISDIR(st.st_mode):
        raise PublicationError(f"{parent}: output directory is not a directory")
    try:
        os.lstat(final)
    except FileNotFoundError:
        return
    raise DestinationExistsError(
        f"{final}: already exists; a published dataroot is never replaced "
        "(build into an absent destination)"
    )


def _write_success_evidence(staging: Path, data: bytes) -> None:
    with SafeDir.open(staging) as root, root.opendir(spec.EXTENSIONS_DIR) as ext:
        st = os.stat(spec.VALIDATION_FILE, dir_fd=ext.fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise UnsafePathError(
                "not a single-link regular file", path=ext.path / spec.VALIDATION_FILE
            )
        os.unlink(spec.VALIDATION_FILE, dir_fd=ext.fd)
        ext.write_bytes(spec.VALIDATION_FILE, data)


def publish_dataroot(
    staging: str | Path,
    final: str | Path,
    *,
    progress: Progress | None = None,
    on_phase: Callable[[str], None] | None = None,
    workers: int = 2,
    readable_by: ReadableBy = "owner",
) -> PublishedDataroot:
    """Validate, finalize and publish the staging dataroot *staging* as *final*.

    Parameters
    ----------
    staging
        A staging dataroot written by the exporter, a sibling of *final*.
    final
        The absent final dataroot (``output_dir/v1.0-trainval``).
    progress
        ``progress(stage, done, total)`` for validation and hashing.
    on_phase
        Called with each publication phase name (see ``integrity.PUBLISH_PHASES``).
    workers
        Image decode threads.
    readable_by
        ``"owner"`` (the contract's 0400/0500, the default), ``"group"`` (0440/0550) or
        ``"all"`` (0444/0555): who besides the owner may read the published dataroot.

    Raises
    ------
    DatarootInvalid
        Validation found issues (all listed); nothing was finalized.
    MissingDependencyError
        The ``nuscenes`` extra is missing: the official-loader check cannot be skipped.
    FormatError
        The official loader rejected the dataroot or resolved something else.
    PublicationError, DestinationExistsError
        Publication failed; *final* was not created or replaced.
    """
    staging, final = Path(staging).absolute(), Path(final).absolute()
    check_final_destination(final)
    report = validate_dataroot(staging, state="staging", progress=progress, workers=workers)
    report.raise_for_issues()
    scene, sample, channel = loader_target(report.tables)
    success = canonical_json(
        msgspec.to_builtins(expected_validation_document(report.tables, passed=True))
    )
    # The loaded tables grow with the dataset and the official loader loads its own copy:
    # only what is needed from them is kept, so the two never share the build's peak memory.
    # The summary returned is the recheck's, of the finalized tree that is published.
    del report
    if progress is not None:
        progress("official-loader", 0, 1)
    loader = check_official_loader(staging, spec.VERSION, scene)
    if progress is not None:
        progress("official-loader", 1, 1)
    if (loader.scene_token, loader.sample_token, loader.channel) != (scene, sample, channel):
        raise FormatError(
            f"the official loader resolved {loader.scene_token}/{loader.sample_token}/"
            f"{loader.channel}, the tables say {scene}/{sample}/{channel}",
            path=staging,
        )
    _write_success_evidence(staging, success)
    rechecked: list[PublishedSummary] = []

    def recheck(tree: Path) -> None:
        # Re-run every check on the finalized tree just before its manifest is written, so
        # nothing changed since validation slips into the manifest. Its tables are dropped
        # here: only their summary is kept through the hashing.
        final_report = validate_dataroot(tree, state="finalized", workers=workers)
        final_report.raise_for_issues()
        rechecked.append(_summarize(final_report))

    result = publish_tree(
        staging,
        final,
        validate=recheck,
        manifest_location=spec.CONTENT_MANIFEST_PATH,
        # publish_tree hashes the tree twice (manifest, then the sealed recheck).
        progress=hash_counter(progress, "hash", 2 * (tree_size(staging) or 0) if progress else 0),
        on_phase=on_phase,
        readable_by=readable_by,
        user_staging=False,
    )
    return PublishedDataroot(
        dataroot=result.final,
        root_sha256=result.root_sha256,
        summary=rechecked[-1],
        loader=loader,
    )
