"""The rendered export a stereo dataset is built from: its schema, loading and checks.

A source is a directory with an ``export.json`` (schema below, documented in
``docs/stereo.md``) whose relative paths name the left/right MP4s, one Unreal Engine camera
track per eye and optional per-frame depth (``.npy``, float metres, camera Z) per eye.
"""

from __future__ import annotations

import math
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec
import numpy as np

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.stereo.cameras import (
    camera_file,
    intrinsics_from_fov,
    rotation_problem,
    ue_pose_to_opencv,
)
from dataset_devkit.stereo.errors import SourceError, SourceIssues
from dataset_devkit.stereo.spec import EYES, CameraFile
from dataset_devkit.stereo.video import VideoInfo, probe_video

SOURCE_FILE = "export.json"
SOURCE_FORMAT = "genvr-render-export"
CAMERA_FORMAT = "ue-camera-track"
_STRICT: dict[str, Any] = {"frozen": True, "kw_only": True, "forbid_unknown_fields": True}


class UERotation(msgspec.Struct, **_STRICT):
    """An Unreal ``FRotator`` in degrees."""

    pitch: float
    yaw: float
    roll: float


class UECameraFrame(msgspec.Struct, **_STRICT):
    """One frame of an Unreal camera track, as the engine reports it."""

    location_cm: tuple[float, float, float]
    rotation_deg: UERotation
    fov_deg: float
    resolution: tuple[int, int]
    principal_point: tuple[float, float]
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)


class UECameraTrack(msgspec.Struct, **_STRICT):
    """A per-eye camera file of the export."""

    format: str
    version: int
    frames: list[UECameraFrame]


class SourceEye(msgspec.Struct, **_STRICT):
    """The files of one eye, relative to the export directory."""

    video: str
    camera: str
    depth: str | None = None


class SceneMetadata(msgspec.Struct, **_STRICT):
    """Procedural scene facts the prompt is generated from."""

    map_name: str
    environment: str
    time_of_day: str
    weather: str
    camera_motion: str
    subjects: list[str]


class SourcePair(msgspec.Struct, **_STRICT):
    """One accepted stereo pair of the export."""

    map: int
    scene: int
    cams: int
    fps: float
    num_frames: int
    width: int
    height: int
    left: SourceEye
    right: SourceEye
    scene_metadata: SceneMetadata
    depth_far_m: float | None = None

    @property
    def pair_id(self) -> str:
        """``mapNNNN/sceneNNNN/camsNN``: the pair's directory under the project."""
        return f"map{self.map:04d}/scene{self.scene:04d}/cams{self.cams:02d}"


class SourceExport(msgspec.Struct, **_STRICT):
    """``export.json``."""

    format: str
    version: int
    dataset: str
    snapshot: str
    pairs: list[SourcePair]


@dataclass(frozen=True, slots=True)
class LoadedPair:
    """A source pair whose files were all found and checked, with its cameras converted."""

    pair: SourcePair
    videos: dict[str, VideoInfo]
    cameras: dict[str, CameraFile]
    has_depth: bool


@dataclass(frozen=True, slots=True)
class LoadedSource:
    """A fully checked export."""

    root: Path
    export: SourceExport
    pairs: tuple[LoadedPair, ...]
    has_depth: bool


def _decode(path: Path, data: bytes, kind: type[Any]) -> Any:
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = re.search(r" - at `([^`]*)`$", text)
        field = match.group(1) if match else None
        message = text[: match.start()] if match else text
        raise SourceError(message, path=path, field=field) from exc
    except msgspec.DecodeError as exc:
        raise SourceError(f"is not valid JSON ({exc})", path=path) from exc


def source_path(root: Path, relative: str, field: str) -> Path:
    """Resolve a relative export path, refusing absolute paths and ``..`` escapes."""
    posix = PurePosixPath(relative)
    if not relative or posix.is_absolute() or "\\" in relative or ".." in posix.parts:
        raise SourceError(
            f"{relative!r} is not a relative POSIX path inside the export",
            path=root / SOURCE_FILE,
            field=field,
        )
    return root / posix


def _not_copyable(path: Path) -> str | None:
    """Why a video cannot be copied byte for byte, or ``None``.

    The copy refuses symbolic links and special files, so the build says so up front instead
    of failing halfway through. Hard links (an NTFS export's duplicates) are copied as bytes.
    """
    try:
        info = path.lstat()
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be inspected ({exc.strerror})"
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link; export the file itself"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    return None  # hard links are fine: the dataset stores a plain copy of the bytes


def _camera(
    root: Path, pair: SourcePair, eye: str, field: str, issues: list[str]
) -> CameraFile | None:
    path = source_path(root, getattr(pair, eye).camera, field)
    problem = _not_copyable(path)  # a FIFO would block the read forever
    if problem:
        issues.append(f"{path}: camera file {problem}")
        return None
    try:
        track: UECameraTrack = _decode(path, path.read_bytes(), UECameraTrack)
    except OSError as exc:
        issues.append(f"{path}: camera file cannot be read ({exc.strerror})")
        return None
    except SourceError as exc:
        issues.append(str(exc))
        return None
    where = f"{path}"
    if (track.format, track.version) != (CAMERA_FORMAT, 1):
        issues.append(
            f"{where}: format {track.format!r} v{track.version}, expected ue-camera-track v1"
        )
        return None
    if len(track.frames) != pair.num_frames:
        issues.append(f"{where}: {len(track.frames)} camera frames, expected {pair.num_frames}")
        return None
    poses, intrinsics, before = [], [], len(issues)
    for number, frame in enumerate(track.frames):
        at = f"{where} at $.frames[{number}]"
        if tuple(frame.resolution) != (pair.width, pair.height):
            issues.append(
                f"{at}.resolution: {list(frame.resolution)}, expected [{pair.width}, {pair.height}]"
            )
        if not 0.0 < frame.fov_deg < 180.0:
            issues.append(f"{at}.fov_deg: {frame.fov_deg}, expected 0 < fov < 180")
        values = [*frame.location_cm, *frame.principal_point, frame.fov_deg, *frame.scale]
        if not np.all(np.isfinite(values)):
            issues.append(f"{at}: non-finite camera value")
            continue
        pose = ue_pose_to_opencv(
            frame.location_cm,
            frame.rotation_deg.pitch,
            frame.rotation_deg.yaw,
            frame.rotation_deg.roll,
            frame.scale,
        )
        problem = rotation_problem(pose[:3, :3])
        if problem:
            issues.append(f"{at}: rotation with scale {list(frame.scale)} is {problem}")
        poses.append(pose)
        intrinsics.append(intrinsics_from_fov(frame.fov_deg, pair.width, *frame.principal_point))
    if len(issues) != before:
        return None
    return camera_file(np.stack(intrinsics), np.stack(poses), pair.height, pair.width)


def _check_pair(root: Path, index: int, pair: SourcePair, issues: list[str]) -> LoadedPair | None:
    before = len(issues)
    name = f"$.pairs[{index}] ({pair.pair_id})"
    videos: dict[str, VideoInfo] = {}
    cameras: dict[str, CameraFile] = {}
    depths = [getattr(pair, eye).depth for eye in EYES]
    if (depths[0] is None) != (depths[1] is None):
        issues.append(f"{name}: depth is given for one eye only")
    for eye in EYES:
        files: SourceEye = getattr(pair, eye)
        video = source_path(root, files.video, f"$.pairs[{index}].{eye}.video")
        problem = _not_copyable(video)
        if problem:
            issues.append(f"{name}: {eye} video {files.video} {problem}")
        else:
            try:
                info = probe_video(video)
            except FormatError as exc:
                issues.append(f"{name}: {eye} video: {exc}")
            else:
                found = (info.num_frames, info.width, info.height)
                if found != (pair.num_frames, pair.width, pair.height):
                    issues.append(
                        f"{name}: {eye} video {files.video} has {info.num_frames} frames at "
                        f"{info.width}x{info.height}, export says {pair.num_frames} frames at "
                        f"{pair.width}x{pair.height}"
                    )
                if abs(info.fps - pair.fps) > 1e-6 * pair.fps:
                    issues.append(
                        f"{name}: {eye} video {files.video} runs at {info.fps} fps, "
                        f"export says {pair.fps}"
                    )
                videos[eye] = info
        camera = _camera(root, pair, eye, f"$.pairs[{index}].{eye}.camera", issues)
        if camera is not None:
            cameras[eye] = camera
        if files.depth is not None:
            _check_depth(root, index, pair, eye, files.depth, issues)
    if len(issues) != before:
        return None
    return LoadedPair(pair=pair, videos=videos, cameras=cameras, has_depth=depths[0] is not None)


def _check_depth(
    root: Path, index: int, pair: SourcePair, eye: str, relative: str, issues: list[str]
) -> None:
    path = source_path(root, relative, f"$.pairs[{index}].{eye}.depth")
    problem = _not_copyable(path)  # np.load would follow a link or block on a FIFO
    if problem:
        issues.append(f"{path}: depth file {problem}")
        return
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        issues.append(f"{path}: depth cannot be read as .npy ({exc})")
        return
    expected = (pair.num_frames, pair.height, pair.width)
    if array.shape != expected or array.dtype.kind != "f":
        issues.append(
            f"{path}: depth is {array.dtype} {list(array.shape)}, expected float "
            f"{list(expected)} (frames, height, width)"
        )
    elif array.ndim > 1 and not array.flags.c_contiguous:  # streamed frame by frame
        issues.append(f"{path}: depth is stored in Fortran order; save it C-ordered")


def _load_pair(
    root: Path, index: int, pair: SourcePair, seen: set[str], issues: list[str]
) -> LoadedPair | None:
    """Check one pair of the export (its numbers, then its files); ``None`` when it fails."""
    if pair.pair_id in seen:
        issues.append(f"$.pairs[{index}]: duplicate pair {pair.pair_id}")
        return None
    seen.add(pair.pair_id)
    if pair.num_frames < 1 or pair.width < 1 or pair.height < 1 or not pair.fps > 0:
        issues.append(
            f"$.pairs[{index}]: num_frames, width, height and fps must be positive, found "
            f"{pair.num_frames}, {pair.width}, {pair.height} and {pair.fps}"
        )
        return None
    if pair.depth_far_m is not None and not 0 < pair.depth_far_m < math.inf:
        issues.append(
            f"$.pairs[{index}].depth_far_m: expected a positive number of metres, "
            f"found {pair.depth_far_m}"
        )
        return None
    return _check_pair(root, index, pair, issues)


def load_source(root: Path, *, progress: OnProgress | None = None) -> LoadedSource:
    """Read and check a whole export; raise once with every problem found.

    *progress* hears of each pair checked (stage ``"check source"``, unit ``pairs``): the
    check reads every video, the first long part of a build.
    """
    path = root / SOURCE_FILE
    problem = _not_copyable(path)
    if problem == "is missing":
        raise SourceError(
            f"not a render export: it holds no {SOURCE_FILE} (stereo build takes the folder a "
            f"renderer exported: {SOURCE_FILE}, the left/right videos and camera tracks)",
            path=root,
        )
    if problem:
        raise SourceError(problem, path=path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot be read ({exc.strerror})", path=path) from exc
    export: SourceExport = _decode(path, data, SourceExport)
    if (export.format, export.version) != (SOURCE_FORMAT, 1):
        raise SourceError(
            f"format {export.format!r} version {export.version}, expected {SOURCE_FORMAT!r} 1",
            path=path,
            field="$.format",
        )
    if not export.pairs:
        raise SourceError("lists no pairs", path=path, field="$.pairs")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", export.dataset + export.snapshot):
        raise SourceError("dataset and snapshot must be plain names", path=path, field="$.dataset")
    issues: list[str] = []
    seen: set[str] = set()
    loaded: list[LoadedPair] = []
    report(progress, ProgressUpdate("check source", total_items=len(export.pairs), unit="pairs"))
    for index, pair in enumerate(export.pairs):
        checked = _load_pair(root, index, pair, seen, issues)
        if checked is not None:
            loaded.append(checked)
        report(progress, ProgressUpdate("check source", items=1, unit="pairs"))
    with_depth = {item.has_depth for item in loaded}
    if len(with_depth) > 1:
        issues.append("depth must be given for every pair or for none")
    if issues:
        raise SourceIssues(str(path), issues)
    ordered = tuple(sorted(loaded, key=lambda item: item.pair.pair_id))
    return LoadedSource(root=root, export=export, pairs=ordered, has_depth=True in with_depth)
