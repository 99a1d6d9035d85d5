"""Thorough validation of a staging or published nuScenes dataroot, every issue at once.

``validate_dataroot`` is the one entry point the build service, ``dataset-devkit validate``,
``inspect`` and the SDK's callers use. A published dataroot is first checked against its
content manifest ``mz_extensions/content_manifest.json`` (missing, extra, changed, linked or
raced files; a manifest at the top of the dataroot is an unexpected file), then the same
structural, image and evidence checks as a staging root run, and ``validation.json`` must
hold exactly the success evidence the build service writes for these tables.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from dataset_devkit.errors import ConfigError, DevkitError, VerificationFailed
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, read_manifest, verify_tree
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate
from dataset_devkit.integrity.tree_size import tree_size
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.common.arguments import check_workers
from dataset_devkit.nuscenes.validation.evidence import check_evidence
from dataset_devkit.nuscenes.validation.extensions import (
    LoadedExtensions,
    check_source_contract,
    load_extensions,
)
from dataset_devkit.nuscenes.validation.graph import check_graph
from dataset_devkit.nuscenes.validation.images import check_images
from dataset_devkit.nuscenes.validation.io import DatarootReader, dataroot_path
from dataset_devkit.nuscenes.validation.result import expected_validation_document
from dataset_devkit.nuscenes.validation.schema import VERSION_RE
from dataset_devkit.nuscenes.validation.tables import LoadedTables, load_tables

__all__ = [
    "DatarootInvalid",
    "DatarootState",
    "Progress",
    "ValidationReport",
    "byte_counter",
    "check_version",
    "hash_counter",
    "validate_dataroot",
]

#: ``progress(stage, done, total)``: *done* units of *total* (0 when unknown) in *stage*,
#: the same convention as the exporter's progress.
Progress = Callable[[str, int, int], None]
#: What a dataroot is validated as: fresh from the exporter (``validation.json`` not run),
#: finalized by the build service (success evidence, no manifest yet), or published.
DatarootState: TypeAlias = Literal["staging", "finalized", "published"]

_TOP_LEVEL = {spec.VERSION, spec.SAMPLES_DIR, spec.SWEEPS_DIR, spec.MAPS_DIR, spec.EXTENSIONS_DIR}


class DatarootInvalid(VerificationFailed):
    """A dataroot failed validation; ``issues`` lists every problem, sorted."""


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Everything one validation run found.

    Attributes
    ----------
    dataroot, version
        What was validated.
    state
        What it was validated as (``staging``, ``finalized`` or ``published``).
    issues
        Every issue, sorted; empty when the dataroot is valid.
    root_sha256
        The content manifest's root hash (published dataroots only).
    tables, extensions
        The loaded content, for callers that go on to summarize it (only when ``ok``).
    """

    dataroot: Path
    version: str
    state: DatarootState
    issues: tuple[str, ...]
    tables: LoadedTables = field(repr=False, compare=False)
    extensions: LoadedExtensions = field(repr=False, compare=False)
    root_sha256: str | None = None

    @property
    def ok(self) -> bool:
        """Whether no issue was found."""
        return not self.issues

    def raise_for_issues(self) -> None:
        """Raise :class:`DatarootInvalid` listing every issue, if there is any."""
        if self.issues:
            n = len(self.issues)
            raise DatarootInvalid(
                f"{self.dataroot}: not a valid {self.version} dataroot "
                f"({n} issue{'s' if n != 1 else ''})" + _level_hint(self.dataroot, self.version),
                self.issues,
            )


def _level_hint(root: Path, version: str) -> str:
    """Point at the dataroot when the path given is one level above or below it."""
    try:
        if (root / version / version).is_dir() and not (root / version).is_symlink():
            return f"; did you mean {root / version}? (the build's output_dir holds the dataroot)"
        if root.name == version and (root / "scene.json").is_file():
            return f"; did you mean {root.parent}? (this is the table folder inside the dataroot)"
    except OSError:
        return ""
    return ""


def byte_counter(progress: Progress | None, stage: str, total: int) -> Callable[[int], None] | None:
    """Adapt ``progress(stage, done, total)`` to a thread-safe ``advance(n)`` callback."""
    if progress is None:
        return None
    lock = threading.Lock()
    done = [0]

    def advance(n: int) -> None:
        with lock:
            done[0] += n
            progress(stage, done[0], total)

    return advance


def hash_counter(progress: Progress | None, stage: str, total: int) -> OnProgress | None:
    """Adapt ``progress(stage, done, total)`` to the integrity scan's :class:`ProgressUpdate`
    values (bytes hashed; the file counts are not part of this stage convention)."""
    advance = byte_counter(progress, stage, total)
    if advance is None:
        return None
    count = advance

    def hashed(update: ProgressUpdate) -> None:
        if update.nbytes:
            count(update.nbytes)

    return hashed


def _manifest_digests(root: Path) -> dict[str, str] | None:
    """``path -> sha256`` from the content manifest, or None when it cannot be read (the
    manifest verification has reported why)."""
    try:
        manifest = read_manifest(root, location=spec.CONTENT_MANIFEST_PATH)
    except DevkitError:
        return None
    return {entry.path: entry.sha256 for entry in manifest.files}


def check_version(version: str) -> str:
    """Return *version* if it is the v1 contract's, else raise ConfigError naming it."""
    if not isinstance(version, str) or not VERSION_RE.match(version):
        raise ConfigError(
            f"unsafe dataset version {version!r}: expected {spec.VERSION!r}", key="version"
        )
    if version != spec.VERSION:
        raise ConfigError(
            f"unsupported dataset version {version!r}: the v1 contract is {spec.VERSION!r}",
            key="version",
        )
    return version


def _check_top_level(reader: DatarootReader, issues: list[str]) -> None:
    for name, kind in reader.list_dir(""):
        if name == CONTENT_MANIFEST_NAME:
            issues.append(
                f"{name}: unexpected {kind} at the top of the dataroot (the content manifest "
                f"belongs at {spec.CONTENT_MANIFEST_PATH})"
            )
        elif name not in _TOP_LEVEL:
            issues.append(f"{name}: unexpected {kind} at the top of the dataroot")
    for table in spec.FORBIDDEN_TABLES:
        if (f"{table}.json", "file") in reader.list_dir(spec.VERSION):
            issues.append(f"{spec.VERSION}/{table}.json: must not exist (lidar-only table)")


def validate_dataroot(
    dataroot: str | Path,
    version: str = spec.VERSION,
    *,
    state: DatarootState = "published",
    progress: Progress | None = None,
    workers: int = 2,
) -> ValidationReport:
    """Validate *dataroot* and return a report listing every issue (it does not raise for them).

    Parameters
    ----------
    dataroot
        The dataroot directory (it holds ``<version>/``, ``samples/``, ``mz_extensions/``).
    version
        Must be ``v1.0-trainval``.
    state
        ``published`` (default): the content manifest ``mz_extensions/content_manifest.json``
        must verify and ``validation.json`` must hold the success evidence; ``finalized``:
        the same evidence, no manifest yet; ``staging``: no manifest and ``validation.json``
        at ``state: "not_run"``.
    progress
        Called as ``progress(stage, done, total)`` while hashing and decoding.
    workers
        Threads used to decode images.
    """
    enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of acyclic rows: see sdk_load.load_index
    try:
        return _validate(dataroot, version, state, progress, workers)
    finally:
        if enabled:
            gc.enable()


def _validate(
    dataroot: str | Path,
    version: str,
    state: DatarootState,
    progress: Progress | None,
    workers: int,
) -> ValidationReport:
    check_version(version)
    check_workers(workers)
    if state not in ("staging", "finalized", "published"):
        raise ConfigError(f"unknown dataroot state {state!r}", key="state")
    published = state == "published"
    root = dataroot_path(dataroot)
    issues: list[str] = []
    root_sha256 = None
    manifest: dict[str, str] | None = None
    with DatarootReader(root) as reader:
        if published:
            total_bytes = tree_size(root) or 0 if progress is not None else 0
            verification = verify_tree(
                root,
                location=spec.CONTENT_MANIFEST_PATH,
                progress=hash_counter(progress, "hash", total_bytes),
            )
            issues.extend(f"content manifest: {line}" for line in verification.issues)
            root_sha256 = verification.root_sha256
            # Files the verification already flagged are not re-reported as races below.
            flagged = {issue.path for issue in verification.details}
            digests = _manifest_digests(root)
            if digests is not None:
                manifest = {p: d for p, d in digests.items() if p not in flagged}
        try:
            _check_top_level(reader, issues)
        except DevkitError as exc:
            issues.append(f"{root}: cannot list the dataroot ({exc})")
        tables = load_tables(reader, version, issues, compact=True)
        check_graph(tables, issues)
        tables.forget_derived()  # not needed again: kept, they would add to the peak below
        extensions = load_extensions(reader, issues, manifest=published, share_with=tables)
        check_source_contract(tables, extensions, issues)
        expected = expected_validation_document(tables, passed=state != "staging")
        check_evidence(tables, extensions, issues, expected_validation=expected)
        total = len(tables.tables["sample_data"])
        check_images(
            reader,
            tables,
            issues,
            progress=byte_counter(progress, "check-images", total),
            workers=workers,
            manifest=manifest,
        )
    return ValidationReport(
        dataroot=root,
        version=version,
        state=state,
        issues=tuple(sorted(set(issues))),
        root_sha256=root_sha256,
        tables=tables,
        extensions=extensions,
    )
