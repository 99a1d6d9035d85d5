"""Validate a stereo root: structure, videos, cameras, depth, indexes, and a reader check.

Every problem is collected (never only the first) and reported sorted. The reader check
reads frames 0, middle and last of both eyes through :class:`StereoDataset` for sample pairs
(all pairs with ``full``) and records exactly what was read and what was not; it is a reader
check, not a training run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import msgspec

from dataset_devkit.errors import (
    ConfigError,
    DevkitError,
    FormatError,
    MissingPathError,
    VerificationFailed,
)
from dataset_devkit.integrity import decode_json_record, hash_file, path_argument
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.stereo.cameras import camera_problems
from dataset_devkit.stereo.depth import depth_problems
from dataset_devkit.stereo.index import is_inside, load_index, load_requirements
from dataset_devkit.stereo.reader_check import reader_validation
from dataset_devkit.stereo.records import depth_meta
from dataset_devkit.stereo.spec import (
    EYES,
    INDEX_DEFAULT,
    INDEX_NODEPTH,
    INDEX_WITH_DEPTH,
    READER_VALIDATION,
    RELEASE_MANIFEST,
    REQUIREMENTS,
    REQUIREMENTS_WITH_DEPTH,
    SOURCE_MAPPING,
    SOURCE_RELEASE_MANIFEST,
    CameraFile,
    DepthMeta,
    DepthRef,
    IndexRow,
    PairMeta,
    ReaderValidation,
    ReleaseManifest,
    SourceMappingRow,
)
from dataset_devkit.stereo.special_files import special_files
from dataset_devkit.stereo.video import probe_video

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StereoValidationReport:
    """Outcome of :func:`validate_stereo`: every issue, sorted, and the reader check."""

    root: Path
    pairs: int
    with_depth: bool
    issues: list[str]
    reader: ReaderValidation | None

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.issues

    def raise_for_issues(self) -> None:
        """Raise :class:`VerificationFailed` listing every issue."""
        if self.issues:
            raise VerificationFailed(f"{self.root}: stereo validation failed", self.issues)


def _why(exc: Exception) -> str:
    """An OSError's reason without its errno and repeated path; a decode error as is."""
    return (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)


def _record(root: Path, rel: str, kind: type[T], issues: list[str]) -> T | None:
    """The strictly decoded document *rel*, or None with its issue (naming it) recorded."""
    try:
        return decode_json_record((root / rel).read_bytes(), kind, rel)
    except OSError as exc:
        issues.append(f"{rel}: {_why(exc)}")
    except FormatError as exc:
        issues.append(str(exc))
    return None


def _check_pair(root: Path, row: IndexRow, with_depth: bool, issues: list[str]) -> None:
    meta = _record(root, row.meta_path, PairMeta, issues)
    if meta is None:
        return
    stray = _stray_paths(row, meta)
    if stray:  # never open what a damaged meta.json points at outside the pair's files
        issues.extend(f"{row.meta_path} at {problem}" for problem in stray)
        return
    size = (meta.resolution.width, meta.resolution.height)
    if (meta.id, meta.num_frames, meta.fps, size) != (
        row.id,
        row.num_frames,
        row.fps,
        (row.resolution.width, row.resolution.height),
    ):
        issues.append(f"{row.meta_path}: id, frames, fps or resolution differ from the index")
    for eye in EYES:
        video = meta.videos.get(eye, "")
        try:
            info = probe_video(root / video)
        except DevkitError as exc:
            issues.append(f"{video}: {exc}")
        else:
            found = (info.num_frames, info.width, info.height)
            if found != (meta.num_frames, *size):
                issues.append(
                    f"{video}: {info.num_frames} frames at {info.width}x{info.height}, meta "
                    f"says {meta.num_frames} at {size[0]}x{size[1]}"
                )
            if abs(info.fps - meta.fps) > 1e-6 * meta.fps:
                issues.append(f"{video}: {info.fps} fps, meta says {meta.fps}")
        camera_path = meta.cameras.get(eye, "")
        camera = _record(root, camera_path, CameraFile, issues)
        if camera is None:
            continue
        issues.extend(
            f"{camera_path}: {p}" for p in camera_problems(camera, meta.num_frames, *size)
        )
    try:
        prompt = (root / row.prompt_path).read_bytes().decode("utf-8")
    except OSError as exc:
        issues.append(f"{row.prompt_path}: {exc.strerror} (the prompt_path of {INDEX_DEFAULT})")
    except UnicodeDecodeError as exc:
        issues.append(f"{row.prompt_path}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    else:
        if prompt.rstrip("\n") != row.cap:
            issues.append(f"{row.prompt_path}: differs from the index caption")
    if with_depth and meta.depth is not None:
        _check_depth(root, meta, meta.depth, issues)


def _stray_paths(row: IndexRow, meta: PairMeta) -> list[str]:
    """Paths of *meta* that are not the index row's files or not inside the root."""
    problems = []
    for eye in EYES:
        for field, expected in (
            ("videos", getattr(row, f"{eye}_video")),
            ("cameras", getattr(row, f"{eye}_camera")),
        ):
            found = getattr(meta, field).get(eye)
            if found != expected:
                problems.append(f"$.{field}.{eye}: {found!r}, the index says {expected!r}")
    if meta.depth is not None:
        ref = meta.depth
        named = {
            "zarr": ref.zarr,
            "meta": ref.meta,
            **{f"arrays.{k}": v for k, v in ref.arrays.items()},
        }
        problems.extend(
            f"$.depth.{key}: {value!r} is not a relative POSIX path inside the dataset root"
            for key, value in named.items()
            if not is_inside(value)
        )
    return problems


def _check_depth(root: Path, meta: PairMeta, ref: DepthRef, issues: list[str]) -> None:
    width, height = meta.resolution.width, meta.resolution.height
    depth = _record(root, ref.meta, DepthMeta, issues)
    if depth is not None:
        # Every value is fixed by the format and the pair except the two the build measured
        # (invalid pixel counts, checked per eye below) and the source's far limit.
        shape = [meta.num_frames, height, width]
        expected = depth_meta(shape, depth.invalid_pixels, depth.far_limit_m)
        for key in expected.__struct_fields__:
            if getattr(depth, key) != getattr(expected, key):
                issues.append(
                    f"{ref.meta} at $.{key}: {getattr(depth, key)!r}, expected "
                    f"{getattr(expected, key)!r}"
                )
        counts = depth.invalid_pixels
        if sorted(counts) != sorted(EYES) or not all(
            0 <= n <= meta.num_frames * height * width for n in counts.values()
        ):
            issues.append(
                f"{ref.meta} at $.invalid_pixels: {counts!r}, expected a count per eye "
                f"between 0 and {meta.num_frames * height * width}"
            )
        far = depth.far_limit_m
        if far is not None and not (math.isfinite(far) and far > 0):
            issues.append(f"{ref.meta} at $.far_limit_m: {far!r}, expected a positive number")
    issues.extend(depth_problems(root / ref.zarr, meta.num_frames, height, width))


def _check_indexes(root: Path, with_depth: bool, issues: list[str]) -> list[IndexRow]:
    rows = load_index(root / INDEX_DEFAULT)
    try:
        if (root / INDEX_DEFAULT).read_bytes() != (root / INDEX_NODEPTH).read_bytes():
            issues.append(f"{INDEX_NODEPTH}: differs from {INDEX_DEFAULT}")
    except OSError as exc:
        issues.append(f"{Path(exc.filename or INDEX_NODEPTH).name}: {_why(exc)}")
    plain = load_requirements(root, INDEX_DEFAULT)
    for name, req, use_depth in [("default", plain, False)] + (
        [("with-depth", load_requirements(root, INDEX_WITH_DEPTH), True)]
        if (root / INDEX_WITH_DEPTH).is_file()
        else []
    ):
        flags = (
            req.use_depth,
            req.use_camera,
            req.online_vae_encoding,
            req.online_text_encoding,
            req.is_v2v,
            req.num_samples,
        )
        if flags != (use_depth, True, True, True, False, len(rows)):
            issues.append(
                f"{REQUIREMENTS_WITH_DEPTH if use_depth else REQUIREMENTS}: {name} loader "
                "requirements (use_depth, use_camera, online_vae_encoding, "
                f"online_text_encoding, is_v2v, num_samples) = {flags}, expected "
                f"{(use_depth, True, True, True, False, len(rows))} ({INDEX_DEFAULT} has "
                f"{len(rows)} rows)"
            )
    if any(row.depth is not None for row in rows):
        issues.append(f"{INDEX_DEFAULT}: rows must not require depth")
    if (root / INDEX_WITH_DEPTH).is_file():
        deep = load_index(root / INDEX_WITH_DEPTH)
        if [r.id for r in deep] != [r.id for r in rows]:
            issues.append(f"{INDEX_WITH_DEPTH}: does not list the same samples as {INDEX_DEFAULT}")
        for a, b in zip(rows, deep, strict=False):
            if b.depth is None or msgspec.structs.replace(b, depth=None) != a:
                issues.append(f"{INDEX_WITH_DEPTH}: row {b.id} differs beyond its depth field")
    elif with_depth:
        issues.append(f"{INDEX_WITH_DEPTH}: missing (this dataset has no depth)")
    return rows


def _check_manifest(root: Path, with_depth: bool, issues: list[str]) -> None:
    manifest = _record(root, RELEASE_MANIFEST, ReleaseManifest, issues)
    if manifest is None:
        return
    for entry in manifest.files:
        if not is_inside(entry.path):
            issues.append(f"{RELEASE_MANIFEST}: {entry.path!r} is not a path inside the root")
            continue
        if entry.family == "depth" and not with_depth:
            continue
        path = root / entry.path
        if not path.is_file():
            issues.append(f"{entry.path}: listed in {RELEASE_MANIFEST} but missing")
        elif path.stat().st_size != entry.size:
            issues.append(f"{entry.path}: {path.stat().st_size} bytes, manifest says {entry.size}")
        elif _is_metadata(entry.path):
            # Small documents are hashed here (videos and depth chunks by verify or
            # unpack.py): a same-size edit of a value no other file repeats (a depth
            # far_limit_m) is caught by validate itself.
            try:
                digest = hash_file(path)[1]
            except (OSError, DevkitError) as exc:
                issues.append(f"{entry.path}: cannot be hashed ({exc})")
            else:
                if digest != entry.sha256:
                    issues.append(
                        f"{entry.path}: sha256 {digest}, {RELEASE_MANIFEST} says {entry.sha256}"
                    )


def _read_source(row: IndexRow | None, what: str) -> str:
    """`` (file)``: the file a failed read came from, so the issue names it."""
    if row is None:
        return ""
    eye, _, kind = what.partition(" ")
    files = {
        "video": getattr(row, f"{eye}_video", None),
        "camera": getattr(row, f"{eye}_camera", None),
        "depth": row.depth.arrays.get(eye) if row.depth is not None else None,
    }
    found = row.prompt_path if what == "prompt" else files.get(kind)
    if what == "pair":
        found = row.meta_path
    if kind == "depth" and row.depth is not None:
        found = f"{row.depth.zarr}/{found}"
    return f" ({found})" if found else ""


def _is_metadata(path: str) -> bool:
    """A JSON, JSON-lines, text or Zarr metadata document (not a video or a depth chunk)."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith((".json", ".jsonl", ".txt")) or name in _ZARR_METADATA


_ZARR_METADATA = frozenset((".zarray", ".zattrs", ".zgroup"))


def _check_source_records(root: Path, rows: list[IndexRow] | None, issues: list[str]) -> None:
    """``source_mapping.jsonl`` maps every sample; the source manifest decodes strictly."""
    try:
        lines = (root / SOURCE_MAPPING).read_bytes().splitlines()
        mapped = [decode_json_record(line, SourceMappingRow, SOURCE_MAPPING).id for line in lines]
    except OSError as exc:
        issues.append(f"{SOURCE_MAPPING}: {_why(exc)}")
    except FormatError as exc:
        issues.append(str(exc))
    else:
        if rows is not None and mapped != [row.id for row in rows]:
            issues.append(f"{SOURCE_MAPPING}: does not map the samples of {INDEX_DEFAULT}")
    _record(root, SOURCE_RELEASE_MANIFEST, ReleaseManifest, issues)


def _check_recorded_reads(root: Path, fresh: ReaderValidation, issues: list[str]) -> None:
    """The build's ``reader_validation.json`` passed, and what it hashed reads the same now."""
    recorded = _record(root, READER_VALIDATION, ReaderValidation, issues)
    if recorded is None:
        return
    if not recorded.passed:
        issues.append(f"{READER_VALIDATION}: the build's reader check did not pass")
    now = {(r.id, r.what, tuple(r.frames)): r.sha256 for r in fresh.reads}
    for read in recorded.reads:
        digest = now.get((read.id, read.what, tuple(read.frames)))
        if read.sha256 is not None and digest is not None and digest != read.sha256:
            issues.append(
                f"{READER_VALIDATION}: {read.id} {read.what} frames {read.frames} now read as "
                f"sha256 {digest}, the build recorded {read.sha256}"
            )


def validate_stereo(
    root: Path, *, with_depth: bool = False, full: bool = False, progress: OnProgress | None = None
) -> StereoValidationReport:
    """Check everything about a stereo root and run the reader check; never raises on issues.

    *progress* hears of each pair checked (stage ``"check pairs"``) and each pair read by
    the reader check (stage ``"read back"``; every pair with *full*).

    Raises
    ------
    ConfigError, MissingPathError
        *root* is not a path, is a file, or does not exist: nothing to validate.
    """
    root = path_argument(root, "root")
    if not root.is_dir():
        if root.exists():
            raise ConfigError(f"{root}: expected a dataset directory, found a file", key="root")
        raise MissingPathError("no such dataset directory", path=root)
    special = special_files(root)
    if special:  # opening a FIFO blocks forever: report them and read nothing
        return StereoValidationReport(
            root=root, pairs=0, with_depth=with_depth, issues=special, reader=None
        )
    issues: list[str] = []
    rows: list[IndexRow] = []
    indexed = False  # whether the indexes loaded: without them there is nothing to compare
    try:
        rows = _check_indexes(root, with_depth, issues)
        indexed = True
    except DevkitError as exc:
        issues.append(str(exc))
    report(progress, ProgressUpdate("check pairs", total_items=len(rows), unit="pairs"))
    for row in rows:
        _check_pair(root, row, with_depth, issues)
        report(progress, ProgressUpdate("check pairs", items=1, unit="pairs"))
    _check_manifest(root, with_depth, issues)
    _check_source_records(root, rows if indexed else None, issues)
    reader = None
    try:
        reader = reader_validation(root, use_depth=with_depth, full=full, progress=progress)
    except DevkitError as exc:
        issues.append(f"reader: {exc}")
    else:
        by_id = {row.id: row for row in rows}
        issues.extend(
            f"reader: {r.id} {r.what}{_read_source(by_id.get(r.id), r.what)}: {r.error}"
            for r in reader.reads
            if not r.ok
        )
        _check_recorded_reads(root, reader, issues)
    return StereoValidationReport(
        root=root, pairs=len(rows), with_depth=with_depth, issues=sorted(issues), reader=reader
    )
