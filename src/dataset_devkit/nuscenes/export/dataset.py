"""``export_dataset``: immutable evidence to a staging dataroot in the official nuScenes layout.

The exporter re-derives scenes, selection and splits from the evidence and refuses to write
when they, the config or the namespace disagree. Every write goes through pinned no-follow
directory descriptors with exclusive leaf creation (the integrity core's :class:`SafeDir`).
A failed export may leave a partial staging root for audit; callers remove it before
retrying (the build service does that for its sibling staging directories).
"""

from __future__ import annotations

import os
import stat
import struct
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np

from dataset_devkit.errors import (
    ConfigError,
    DestinationExistsError,
    FormatError,
    IntegrityError,
    UnsafePathError,
)
from dataset_devkit.integrity import SafeDir, open_dir_nofollow, path_argument
from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.nuscenes.common.arguments import (
    check_instance,
    check_output_location,
    check_workers,
)
from dataset_devkit.nuscenes.common.tokens import encode_canonical
from dataset_devkit.nuscenes.evidence import Evidence, derive, read_evidence, recheck_evidence
from dataset_devkit.nuscenes.evidence.records import Derived, EvidenceDocument
from dataset_devkit.nuscenes.export.extensions import build_extensions
from dataset_devkit.nuscenes.export.images import FrameSource, copy_all
from dataset_devkit.nuscenes.export.parallel import copy_through
from dataset_devkit.nuscenes.export.tables import Tables, build_tables
from dataset_devkit.nuscenes.spec import (
    EMPTY_TABLES,
    EXTENSION_FILES,
    EXTENSIONS_DIR,
    MAP_FILENAME,
    SOURCE_CONTRACTS,
    SOURCE_MCAP,
    TABLE_NAMES,
    VERSION,
    PipelineConfig,
)

__all__ = ["ExportResult", "export_dataset", "scaffold_png"]

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote: table row counts, image count and bytes, the staging root."""

    staging_dataroot: Path
    table_counts: dict[str, int]
    images: int
    image_bytes: int
    scenes: int
    evidence_sha256: str


def scaffold_png() -> bytes:
    """The deterministic 1x1 black 8-bit grayscale PNG of the compatibility map."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\x00\x00", 9)  # filter byte 0, one black pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def _diff_config(expected: PipelineConfig, given: PipelineConfig) -> list[str]:
    a = encode_canonical(expected)
    b = encode_canonical(given)
    if a == b:
        return []
    import json

    flat_a, flat_b = _flatten(json.loads(a)), _flatten(json.loads(b))
    keys = sorted(set(flat_a) | set(flat_b))
    return [
        f"{k}: evidence {flat_a.get(k)!r}, given {flat_b.get(k)!r}"
        for k in keys
        if flat_a.get(k) != flat_b.get(k)
    ]


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else key))
        return out
    return {prefix: value}


def _recompute(doc: EvidenceDocument) -> None:
    """Re-derive scenes, selection and splits; refuse evidence that disagrees."""
    contract = SOURCE_CONTRACTS.get(doc.source_type)
    if contract is None or any(r.source_type != doc.source_type for r in doc.recordings):
        raise FormatError(
            f"source type {doc.source_type!r} of the evidence is outside the fixed contract "
            f"or not shared by every recording"
        )
    fresh = derive(doc.recordings, doc.config)
    issues = []
    if fresh.selection != doc.derived.selection:
        issues.append("ordered scenario selection steps differ")
    if fresh.selected_scene_ids != doc.derived.selected_scene_ids:
        issues.append("selected scenes differ")
    if fresh.splits != doc.derived.splits:
        issues.append("train/test splits differ")
    if fresh.rejected_by != doc.derived.rejected_by:
        issues.append("selection rejections differ")
    recorded = {s.scene_id: s for s in doc.derived.scenes}
    for scene in fresh.scenes:
        if recorded.get(scene.scene_id) != scene:
            issues.append(f"scene graph of {scene.scene_id} differs")
    extra = set(recorded) - {s.scene_id for s in fresh.scenes}
    issues.extend(f"scene {sid} is not derivable from its recording" for sid in sorted(extra))
    if issues:
        raise IntegrityError(
            "evidence disagrees with what its inputs and config produce; not exporting",
            sorted(issues),
        )


def _open_destination(path: Path) -> SafeDir:
    """Pin the destination: created if absent, else it must be an empty real directory."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return SafeDir.create(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(
            "export destination must be absent or an empty real directory", path=path
        )
    pinned = SafeDir(open_dir_nofollow(path), path)
    if pinned.listdir():
        pinned.close()
        raise DestinationExistsError(
            f"{path}: export destination is not empty; nothing is overwritten"
        )
    return pinned


def _check_apart(staging: Path, evidence_root: Path) -> None:
    """Refuse a staging root inside the evidence (it would add files to immutable evidence)."""
    real_staging = Path(os.path.realpath(staging))
    real_evidence = Path(os.path.realpath(evidence_root))
    if real_staging == real_evidence or real_evidence in real_staging.parents:
        raise ConfigError(
            f"staging_dataroot {staging} is inside the evidence {evidence_root}; export "
            "outside it (evidence is immutable)",
            key="staging_dataroot",
        )
    if real_staging in real_evidence.parents:
        raise ConfigError(
            f"staging_dataroot {staging} contains the evidence {evidence_root}; export into "
            "a separate directory",
            key="staging_dataroot",
        )


def _pose_hint(doc: EvidenceDocument) -> str:
    """Why key frames lack an ego pose, when the recordings themselves say it."""
    gnss = [
        r
        for r in doc.recordings
        if isinstance(r.pose_frame, msgspec.UnsetType) and r.source_type == SOURCE_MCAP
    ]
    no_fix = [r.recording_id for r in gnss if r.observations.gnss_fixes == 0]
    if no_fix:
        return (
            f"; the pose source is GNSS (the default) and {', '.join(no_fix)} has no GNSS fix "
            "(no NavSatFix or LocationFix message): take the ego pose from the transform tree "
            'with [ingest.pose] source = "tf", world_frame = "map" (or source = "odometry", '
            'topic = "/odom"); `dataset-devkit recording inspect` lists what a recording has'
        )
    tolerance_ms = doc.config.scenario.pose_tolerance_ms
    sparse = []
    for r in gnss:
        gaps = np.diff(np.asarray(r.gnss.times, dtype=np.int64)) / 1e6
        wide = gaps[gaps > tolerance_ms]
        if len(wide):
            sparse.append(
                f"{r.recording_id}: {len(wide)} of {len(gaps)} gaps, up to {wide.max():.0f} ms"
            )
    if sparse:
        return (
            f"; GNSS fixes are farther apart than scenario.pose_tolerance_ms = {tolerance_ms:g} "
            f"({'; '.join(sparse)}): a position is interpolated only between fixes at most "
            "that far apart; raise scenario.pose_tolerance_ms above the gap between fixes"
        )
    return ""


def _why_no_scene(derived: Derived, doc: EvidenceDocument) -> str:
    """Say which rule or which validity reason rejected every scene window."""
    if not derived.scenes:
        return "the evidence selects no scene: the recordings hold no camera frame"
    counts = Counter(
        "invalid" if why.startswith("invalid: ") else why.split(": ", 1)[0]
        for why in derived.rejected_by.values()
    )
    invalid = next((sc for sc in derived.scenes if not sc.valid), None)
    parts = [f"{n} by {why}" for why, n in sorted(counts.items())]
    return (
        f"the evidence selects no scene of {len(derived.scenes)} scene windows; rejected "
        + ", ".join(parts)
        + (f" (first invalid window: {'; '.join(invalid.reasons)})" if invalid else "")
        + "; nothing to export"
        + (_pose_hint(doc) if invalid and "without ego pose" in " ".join(invalid.reasons) else "")
    )


def export_dataset(
    staging_dataroot: Path | str,
    evidence: Evidence | Path | str,
    *,
    config: PipelineConfig | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
    executor: Executor | None = None,
) -> ExportResult:
    """Write the official ``v1.0-trainval`` layout plus ``mz_extensions/`` from *evidence*.

    Parameters
    ----------
    staging_dataroot
        Absent, or an empty real directory.
    evidence
        An opened :class:`Evidence` (rechecked against its manifest) or its directory
        (verified in full).
    config
        The resolved global config the caller expects; it must equal the evidence's config,
        namespace included.
    progress
        ``progress(stage, done, total)``, called from the calling thread.
    workers
        Threads verifying and copying JPEGs (hashing and decoding release the GIL);
        defaults to one per core (at most 32), or to one when the mean frame is under
        8 KiB, where threads only hand the GIL back and forth.
    executor
        Runs the verified JPEG copies in batches instead of the thread pool (a process pool,
        a Dask cluster's workers sharing this filesystem); see :mod:`.parallel`.
    """
    staging_dataroot = path_argument(staging_dataroot, "staging_dataroot")
    if config is not None:
        check_instance(config, PipelineConfig, "config")
    check_workers(workers)
    report = progress or (lambda stage, done, total: None)
    if not isinstance(evidence, Evidence):
        evidence = path_argument(evidence, "evidence")
    # before reading the evidence in full: checks that would otherwise fail after it
    check_output_location(Path(staging_dataroot), "staging_dataroot", allow_empty_dir=True)
    _check_apart(staging_dataroot, evidence.root if isinstance(evidence, Evidence) else evidence)
    ev = read_evidence(evidence) if not isinstance(evidence, Evidence) else evidence
    if isinstance(evidence, Evidence):
        recheck_evidence(ev)
    _check_apart(staging_dataroot, ev.root)
    doc = ev.document
    if config is not None:
        diffs = _diff_config(doc.config, config)
        if diffs:
            raise ConfigError(
                "config or namespace differs from the evidence: " + "; ".join(diffs),
                key=diffs[0].split(":", 1)[0],
            )
    _recompute(doc)
    if not doc.derived.selected_scene_ids:
        raise FormatError(_why_no_scene(doc.derived, doc), path=ev.root)
    tables = build_tables(doc)
    staging = Path(staging_dataroot)
    with _open_destination(staging) as root, FrameSource(ev.root, ev.manifest) as source:

        def write_the_rest() -> None:
            extensions = build_extensions(doc, tables, ev.root_sha256)
            with root.mkdir(MAP_FILENAME.split("/")[0]) as maps:
                maps.write_bytes(MAP_FILENAME.split("/", 1)[1], scaffold_png())
            _write_tables(root, tables)
            with root.mkdir(EXTENSIONS_DIR) as ext:
                for name in EXTENSION_FILES:
                    ext.write_bytes(name, encode_canonical(extensions[name]))

        pairs = sorted({tuple(f.record.filename.split("/")[:2]) for f in tables.frames})
        dirs: dict[tuple[str, ...], SafeDir] = {}
        try:
            for folder in sorted({p[0] for p in pairs}):
                with root.mkdir(folder) as parent:
                    for pair in pairs:
                        if pair[0] == folder:
                            dirs[pair] = parent.mkdir(pair[1])
            if executor is not None:
                image_bytes = copy_through(
                    executor,
                    Path(ev.root).absolute(),
                    ev.manifest,
                    staging.absolute(),
                    [(f.image, *_folder_and_name(f.record.filename)) for f in tables.frames],
                    report,
                    alongside=write_the_rest,  # the tables are written while the frames copy
                )
            else:
                jobs = [
                    (
                        f.image,
                        dirs[tuple(f.record.filename.split("/")[:2])],
                        f.record.filename.split("/")[2],
                    )
                    for f in tables.frames
                ]
                # the tables and extensions are written while the frames copy
                image_bytes = copy_all(
                    source, jobs, workers=workers, report=report, alongside=write_the_rest
                )
        finally:
            for d in dirs.values():
                d.close()
    counts = {
        name: len(getattr(tables, name)) if name not in EMPTY_TABLES else 0 for name in TABLE_NAMES
    }
    return ExportResult(
        staging_dataroot=staging,
        table_counts=counts,
        images=len(tables.frames),
        image_bytes=image_bytes,
        scenes=len(tables.scene),
        evidence_sha256=ev.root_sha256,
    )


def _folder_and_name(filename: str) -> tuple[str, str]:
    folder, name = filename.rsplit("/", 1)
    return folder, name


#: Rows of a table encoded at once by :func:`_write_rows`. The tables are written while the
#: frames copy, and one JSON encode holds the GIL throughout: a small block (a few hundred
#: microseconds) lets the copying threads take their turns between blocks.
_ROWS_PER_BLOCK = 256


def _write_tables(root: SafeDir, tables: Tables) -> None:
    with root.mkdir(VERSION) as version:
        for name in TABLE_NAMES:
            rows: Sequence[object] = () if name in EMPTY_TABLES else getattr(tables, name)
            _write_rows(version, f"{name}.json", rows)


def _write_rows(parent: SafeDir, name: str, rows: Sequence[object]) -> None:
    """Write ``encode_canonical(list(rows))`` as *name*, encoded a block of rows at a time.

    The same bytes (canonical JSON has no whitespace, so a list is its items' encodings
    joined by commas), but a table of an hour-long drive never exists at once as plain
    dicts and JSON chunks: only one block of rows does, and the file grows as it goes.
    """
    with naming(parent.path / name), parent.open_write(name) as handle:
        handle.write(b"[")
        for start in range(0, len(rows), _ROWS_PER_BLOCK):
            if start:
                handle.write(b",")
            handle.write(encode_canonical(list(rows[start : start + _ROWS_PER_BLOCK]))[1:-1])
        handle.write(b"]")
