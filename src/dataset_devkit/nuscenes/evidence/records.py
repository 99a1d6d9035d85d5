"""On-disk records of the immutable evidence directory (``evidence.json`` + frame JPEGs).

The evidence keeps two kinds of content: the *inputs* read from the recordings (camera
calibration and capture times, pose and GNSS streams, observations) and the *derived*
results (scene windows, audits, selection, splits, chosen frames). Export re-derives the
second from the first with the same pure functions and refuses on any difference.
"""

from __future__ import annotations

from typing import Final

import msgspec

from dataset_devkit.nuscenes.common.streams import FixRows, PoseRows, QuatRows
from dataset_devkit.nuscenes.spec import (
    AnnotationRecord,
    CameraGridAudit,
    Matrix3,
    PipelineConfig,
    Quat,
    RecordingObservations,
    Rejection,
    SelectionStep,
    Vec3,
)

__all__ = [
    "EVIDENCE_FILE",
    "FRAMES_DIR",
    "Derived",
    "EvCamera",
    "EvFrame",
    "EvImage",
    "EvRecording",
    "EvScene",
    "EvSplit",
    "EvidenceDocument",
]

EVIDENCE_FILE: Final = "evidence.json"
FRAMES_DIR: Final = "frames"


class _Ev(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class EvCamera(_Ev, frozen=True, kw_only=True, forbid_unknown_fields=True):
    source_name: str
    channel: str
    topic: str
    frame_id: str
    width: int
    height: int
    intrinsic: Matrix3
    distortion_model: str
    distortion: tuple[float, ...]
    translation: Vec3
    rotation: Quat
    timestamps_ns: tuple[int, ...]
    #: Frames that did not decode cleanly, left out of ``timestamps_ns``: (time, reason).
    invalid_frames: tuple[tuple[int, str], ...] = ()
    #: Added (additive): how the source stores the frames (``png``, ``rgb8``, ``h264``);
    #: unset for JPEG frames copied verbatim.
    source_encoding: str | msgspec.UnsetType = msgspec.UNSET


class EvRecording(_Ev, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Inputs of one recording, as read by its ingest backend."""

    recording_id: str
    source_type: str
    backend: str
    source_name: str
    source_size: int
    source_digest: str
    vehicle: str
    location: str
    truncated: bool
    longitude_deg: float
    observations: RecordingObservations
    filtering: tuple[Rejection, ...]
    cameras: tuple[EvCamera, ...]
    #: Streams as arrays (``[t, [x, y, z]]`` etc. in JSON): see :mod:`..common.streams`.
    translations: PoseRows
    rotations: QuatRows
    gnss: FixRows
    track: PoseRows
    #: Horizontal distance (m) of each GNSS fix from the ego pose at its time, where the
    #: poses are a separate stream (decoded recordings): ``(fix time, metres)``.
    gnss_pose_offsets_m: tuple[tuple[int, float], ...] = ()
    #: Added (additive): ``recording_local_tf_v1`` when the poses are in the recording's own
    #: tree or pose-topic frame (then frames need no GNSS fix); unset: the source default.
    pose_frame: str | msgspec.UnsetType = msgspec.UNSET
    #: Added (additive): that frame's name (``map``) and how the poses were made.
    world_frame: str | msgspec.UnsetType = msgspec.UNSET
    pose_source: str | msgspec.UnsetType = msgspec.UNSET
    #: Added (additive): ``simulation`` when the header stamps are a simulator's clock.
    clock: str | msgspec.UnsetType = msgspec.UNSET


class EvFrame(_Ev, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One chosen camera frame of a valid scene, with its ego pose and GNSS context."""

    channel: str
    timestamp_ns: int
    is_key_frame: bool
    #: Grid index of the key frame, or of the nearest key frame for a sweep.
    grid_index: int
    ego_translation: Vec3
    ego_rotation: Quat
    #: The nearest GNSS fix; None where the poses need no fix and none is near.
    gnss_timestamp_ns: int | None
    gnss_east_m: float | None
    gnss_north_m: float | None


class EvScene(_Ev, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One scene window of a recording (every window, valid or not)."""

    scene_id: str
    source_digest: str
    scene_index: int
    start_timestamp_ns: int
    end_timestamp_ns: int
    grid_timestamps_ns: tuple[int, ...]
    valid: bool
    reasons: tuple[str, ...]
    audits: tuple[CameraGridAudit, ...]
    channels: tuple[str, ...]
    distance_m: float
    mean_speed_mps: float
    max_speed_mps: float
    #: None where the clock or the position give no local time (then ``time_of_day`` is
    #: ``unknown``): simulation stamps, poses in a local frame without GNSS fixes.
    local_solar_hour: float | None
    time_of_day: str
    #: Empty unless the scene is valid.
    frames: tuple[EvFrame, ...]


class EvSplit(_Ev, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_id: str
    split: str
    group_id: str


class Derived(_Ev, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Everything computed from the inputs and the config; recomputed by export."""

    scenes: tuple[EvScene, ...]
    selection: tuple[SelectionStep, ...]
    selected_scene_ids: tuple[str, ...]
    #: scene id -> the first rule that rejected it (unselected scenes only).
    rejected_by: dict[str, str]
    splits: tuple[EvSplit, ...]


class EvImage(_Ev, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A frame's JPEG stored in the evidence directory."""

    source_digest: str
    channel: str
    timestamp_ns: int
    path: str
    size: int
    sha256: str
    width: int
    height: int


class EvidenceDocument(_Ev, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    namespace: str
    config: PipelineConfig
    config_fingerprint: str
    source_type: str
    #: Original source camera name -> normalized channel.
    channel_mapping: dict[str, str]
    recordings: tuple[EvRecording, ...]
    derived: Derived
    images: tuple[EvImage, ...]
    label_file_name: str
    label_file_sha256: str
    labels: tuple[AnnotationRecord, ...]
    rejections: tuple[Rejection, ...]
