"""Ingest backend for decoded recording folders (``decoded_hf``, privacy transformed, local ENU).

The folder is ``recording.json`` (schema in docs/nuscenes.md) plus one video per camera.
Metadata is read at ingest; frames are decoded with PyAV only when the scene grid asks for
them, and written as JPEG at quality 95.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from dataset_devkit.errors import FormatError, MissingDependencyError, UnsafePathError
from dataset_devkit.integrity import decode_json_record
from dataset_devkit.nuscenes.geodesy import to_web_mercator
from dataset_devkit.nuscenes.geometry import rvec_to_quat
from dataset_devkit.nuscenes.ingest.model import (
    CameraStream,
    GnssContext,
    RecordingSource,
    TimedQuat,
    TimedVec3,
    check_intrinsic,
)
from dataset_devkit.nuscenes.ingest.source import SourceDigest, open_regular, source_identity
from dataset_devkit.nuscenes.jpeg import encode_jpeg
from dataset_devkit.nuscenes.spec import (
    JPEG_QUALITY,
    SOURCE_DECODED,
    Matrix3,
    RecordingObservations,
    Vec3,
)
from dataset_devkit.nuscenes.tokens import normalize_channel

__all__ = ["BACKEND_DECODED", "RECORDING_FILE", "read_decoded"]

BACKEND_DECODED = "pyav"
RECORDING_FILE = "recording.json"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_MAX_NS = (1 << 63) - 1


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class _Origin(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    latitude_deg: float
    longitude_deg: float
    altitude_m: float


class _Camera(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    video: str
    timestamps_ns: list[int]
    width: int
    height: int
    K: Matrix3
    rotation_vector: Vec3
    translation: Vec3
    distortion_model: str
    distortion: list[float]


class _Pose(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    timestamp_ns: int
    translation: Vec3
    rotation_vector: Vec3


class _Fix(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    timestamp_ns: int
    latitude_deg: float
    longitude_deg: float
    altitude_m: float


class _Recording(_Strict, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: Literal[1]
    recording_id: str
    vehicle: str
    location: str
    enu_origin: _Origin
    cameras: list[_Camera]
    ego_poses: list[_Pose]
    gnss: list[_Fix]


def _increasing(times: list[int], path: Path, where: str) -> None:
    for i in range(1, len(times)):
        if times[i] <= times[i - 1]:
            raise FormatError(
                f"timestamps must strictly increase: {times[i - 1]} then {times[i]}",
                path=path,
                field=f"{where}[{i}]",
            )
    if times and times[0] < 0:
        raise FormatError("timestamps must be non-negative", path=path, field=f"{where}[0]")
    if times and times[-1] > _MAX_NS:
        raise FormatError(
            f"timestamps must fit in a signed 64-bit integer, found {times[-1]}",
            path=path,
            field=f"{where}[{len(times) - 1}]",
        )


def _finite(values: Any, path: Path, where: str) -> None:
    flat: list[float] = []
    stack = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, list | tuple):
            stack.extend(v)
        else:
            flat.append(float(v))
    if not all(math.isfinite(v) for v in flat):
        raise FormatError("values must be finite", path=path, field=where)


def _rotation(rvec: Vec3, path: Path, where: str) -> None:
    try:
        rvec_to_quat(rvec)
    except FormatError as exc:
        raise FormatError(exc.detail, path=path, field=where) from None


def _load(folder: Path) -> tuple[_Recording, bytes]:
    meta = folder / RECORDING_FILE
    with open_regular(meta, RECORDING_FILE) as f:
        raw = f.read()
    doc = decode_json_record(raw, _Recording, meta)
    if not _SAFE_ID.fullmatch(doc.recording_id):
        raise FormatError("unsafe recording_id", path=meta, field="$.recording_id")
    origin = doc.enu_origin
    _finite([origin.latitude_deg, origin.longitude_deg, origin.altitude_m], meta, "$.enu_origin")
    if not (-90.0 <= origin.latitude_deg <= 90.0 and -180.0 <= origin.longitude_deg <= 180.0):
        raise FormatError(
            "latitude_deg must be within [-90, 90] and longitude_deg within [-180, 180], found "
            f"{origin.latitude_deg}, {origin.longitude_deg}",
            path=meta,
            field="$.enu_origin",
        )
    if not doc.cameras:
        raise FormatError("at least one camera is required", path=meta, field="$.cameras")
    names: dict[str, int] = {}
    videos: dict[str, int] = {}
    for i, cam in enumerate(doc.cameras):
        where = f"$.cameras[{i}]"
        if not _SAFE_NAME.fullmatch(cam.video):
            raise FormatError(f"unsafe video name {cam.video!r}", path=meta, field=f"{where}.video")
        for seen, value, key in ((names, cam.name, "name"), (videos, cam.video, "video")):
            if value in seen:
                raise FormatError(
                    f"{key} {value!r} repeats $.cameras[{seen[value]}].{key}; each camera "
                    f"needs its own {key}",
                    path=meta,
                    field=f"{where}.{key}",
                )
            seen[value] = i
        try:
            normalize_channel(cam.name)
        except FormatError as exc:
            raise FormatError(exc.detail, path=meta, field=f"{where}.name") from None
        if cam.width < 1 or cam.height < 1:
            raise FormatError("width and height must be positive", path=meta, field=where)
        _increasing(cam.timestamps_ns, meta, f"{where}.timestamps_ns")
        _finite([cam.K, cam.rotation_vector, cam.translation, cam.distortion], meta, where)
        _rotation(cam.rotation_vector, meta, f"{where}.rotation_vector")
        try:
            check_intrinsic(cam.K, cam.width, cam.height, f"camera {cam.name!r}")
        except FormatError as exc:
            raise FormatError(exc.detail, path=meta, field=f"{where}.K") from exc
    _increasing([p.timestamp_ns for p in doc.ego_poses], meta, "$.ego_poses")
    _increasing([g.timestamp_ns for g in doc.gnss], meta, "$.gnss")
    for i, p in enumerate(doc.ego_poses):
        _finite([p.translation, p.rotation_vector], meta, f"$.ego_poses[{i}]")
        _rotation(p.rotation_vector, meta, f"$.ego_poses[{i}].rotation_vector")
    for i, g in enumerate(doc.gnss):
        _finite([g.latitude_deg, g.longitude_deg, g.altitude_m], meta, f"$.gnss[{i}]")
        if not (-90.0 <= g.latitude_deg <= 90.0 and -180.0 <= g.longitude_deg <= 180.0):
            raise FormatError("latitude/longitude out of range", path=meta, field=f"$.gnss[{i}]")
    return doc, raw


def _av_error() -> type[Exception]:
    import av

    return av.FFmpegError


def _open_video(path: Path) -> Any:
    try:
        import av
    except ImportError as exc:
        raise MissingDependencyError("av", extra="video", purpose="decoding recordings") from exc
    with open_regular(
        path, "video"
    ):  # refuses symlinks and special files before PyAV opens the name
        pass
    try:
        return av.open(str(path))
    except av.FFmpegError as exc:
        raise FormatError(f"cannot open video: {exc}", path=path) from exc


def read_decoded(folder: Path | str) -> RecordingSource:
    """Read a decoded recording folder into a :class:`RecordingSource`."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        raise UnsafePathError("a decoded recording must be a real directory", path=folder)
    doc, _ = _load(folder)
    digest = SourceDigest(BACKEND_DECODED)
    identities: dict[str, tuple[int, int, int, int]] = {}
    size = 0
    for name in sorted({RECORDING_FILE, *(c.video for c in doc.cameras)}):
        with open_regular(folder / name, name if name == RECORDING_FILE else "video") as f:
            identities[name] = source_identity(f)
            size += digest.add_file(name, f)
    cameras = []
    for cam in doc.cameras:
        with _open_video(folder / cam.video) as container:
            ctx = container.streams.video[0].codec_context if container.streams.video else None
            if ctx is None or not (ctx.width and ctx.height):
                raise FormatError(
                    f"no decodable video stream (container format {container.format.name!r})",
                    path=folder / cam.video,
                )
            if (ctx.width, ctx.height) != (cam.width, cam.height):
                raise FormatError(
                    f"video is {ctx.width}x{ctx.height}, calibration says {cam.width}x{cam.height}",
                    path=folder / cam.video,
                )
        cameras.append(
            CameraStream(
                source_name=cam.name,
                topic=cam.video,
                frame_id=cam.name,
                width=cam.width,
                height=cam.height,
                intrinsic=cam.K,
                distortion_model=cam.distortion_model,
                distortion=tuple(cam.distortion),
                translation=cam.translation,
                rotation=rvec_to_quat(cam.rotation_vector, f"camera {cam.name} rotation_vector"),
                timestamps_ns=tuple(cam.timestamps_ns),
            )
        )
    translations = tuple(TimedVec3(p.timestamp_ns, p.translation) for p in doc.ego_poses)
    rotations = tuple(
        TimedQuat(p.timestamp_ns, rvec_to_quat(p.rotation_vector)) for p in doc.ego_poses
    )
    gnss = []
    for fx in doc.gnss:
        east, north = to_web_mercator(fx.latitude_deg, fx.longitude_deg)
        gnss.append(GnssContext(fx.timestamp_ns, east, north))
    observations = RecordingObservations(
        messages_read=0,
        image_frames={
            c.name: len(c.timestamps_ns) for c in sorted(doc.cameras, key=lambda c: c.name)
        },
        calibrations={c.name: 1 for c in sorted(doc.cameras, key=lambda c: c.name)},
        poses=len(doc.ego_poses),
        gnss_fixes=len(doc.gnss),
        truncated=False,
        truncation_detail="",
        rejected_messages=0,
    )
    videos = {c.name: (c.video, list(c.timestamps_ns)) for c in doc.cameras}
    return RecordingSource(
        source_type=SOURCE_DECODED,
        backend=BACKEND_DECODED,
        recording_id=doc.recording_id,
        source_name=folder.name,
        source_size=size,
        source_digest=digest.hexdigest(),
        vehicle=doc.vehicle,
        location=doc.location,
        truncated=False,
        cameras=tuple(cameras),
        translations=translations,
        rotations=rotations,
        gnss=tuple(gnss),
        track=translations,
        observations=observations,
        filtering=(),
        extract_frames=lambda wanted: _extract(folder, identities, videos, wanted),
        longitude_deg=doc.enu_origin.longitude_deg,
    )


def _extract(
    folder: Path,
    identities: Mapping[str, tuple[int, int, int, int]],
    videos: Mapping[str, tuple[str, list[int]]],
    wanted: Mapping[str, frozenset[int]],
) -> Iterator[tuple[str, int, bytes]]:
    """Decode each camera's video in order and encode the wanted frames as JPEG (quality 95)."""
    for name in sorted(wanted):
        times = wanted[name]
        if not times:
            continue
        video, stamps = videos[name]
        path = folder / video
        with open_regular(path, "video") as f:
            if source_identity(f) != identities[video]:
                raise UnsafePathError("video changed since it was ingested", path=path)
        decoded = 0
        with _open_video(path) as container:
            frames = container.decode(video=0)
            while True:
                try:
                    frame = next(frames, None)
                except _av_error() as exc:  # a corrupt packet: name the file and the frame
                    raise FormatError(
                        f"video does not decode after frame {decoded} of {len(stamps)}: {exc}",
                        path=path,
                    ) from None
                if frame is None:
                    break
                index, decoded = decoded, decoded + 1
                if index >= len(stamps):
                    raise FormatError(
                        f"video has more frames than the {len(stamps)} timestamps", path=path
                    )
                if stamps[index] in times:
                    yield name, stamps[index], encode_jpeg(frame.to_image(), JPEG_QUALITY)
        if decoded != len(stamps):
            raise FormatError(f"video has {decoded} frames but {len(stamps)} timestamps", path=path)
