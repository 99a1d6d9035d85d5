"""``recording.json`` of a decoded recording folder: its strict schema and every value check.

The schema is documented in docs/nuscenes.md; a test keeps the two in step. Every mistake is a
:class:`FormatError` naming the file and the JSON path of the field.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Literal

import msgspec

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import decode_json_record
from dataset_devkit.nuscenes.common.geometry import rvec_to_quat
from dataset_devkit.nuscenes.common.tokens import normalize_channel
from dataset_devkit.nuscenes.ingest.model import check_intrinsic
from dataset_devkit.nuscenes.ingest.source import open_regular
from dataset_devkit.nuscenes.spec import Matrix3, Vec3

__all__ = ["RECORDING_FILE", "SAFE_RECORDING_ID", "load_recording"]

RECORDING_FILE = "recording.json"

_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
#: A recording id, in recording.json or an MCAP ``recording`` metadata record.
SAFE_RECORDING_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
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


def load_recording(folder: Path) -> tuple[_Recording, bytes]:
    """Read and check ``folder/recording.json``; returns the record and its exact bytes."""
    meta = folder / RECORDING_FILE
    with open_regular(meta, RECORDING_FILE) as f:
        raw = f.read()
    doc = decode_json_record(raw, _Recording, meta)
    if not SAFE_RECORDING_ID.fullmatch(doc.recording_id):
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
    channels: dict[str, int] = {}
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
            channel = normalize_channel(cam.name)
        except FormatError as exc:
            raise FormatError(exc.detail, path=meta, field=f"{where}.name") from None
        if channel in channels:
            j = channels[channel]
            raise FormatError(
                f"name {cam.name!r} normalizes to {channel}, as $.cameras[{j}].name "
                f"{doc.cameras[j].name!r} does; rename one so each camera has its own channel",
                path=meta,
                field=f"{where}.name",
            )
        channels[channel] = i
        if cam.width < 1 or cam.height < 1:
            raise FormatError("width and height must be positive", path=meta, field=where)
        if not cam.timestamps_ns:
            raise FormatError(
                "a camera needs at least one frame timestamp",
                path=meta,
                field=f"{where}.timestamps_ns",
            )
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
