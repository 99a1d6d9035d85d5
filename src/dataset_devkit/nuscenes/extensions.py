"""The ``mz_extensions/`` documents written next to the official tables: our contract.

Source, recordings, GNSS, validity, validation, tags, annotations, split, config and pipeline
audit documents, with the schema versions of :mod:`.constants`. Changes are additive only.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from dataset_devkit.nuscenes.constants import (
    ANNOTATIONS_FILE,
    CONFIG_FILE,
    GNSS_FILE,
    PIPELINE_AUDIT_FILE,
    RECORDINGS_FILE,
    SOURCE_FILE,
    SPLIT_FILE,
    TAGS_FILE,
    VALIDATION_FILE,
    VALIDITY_FILE,
    Matrix3,
    PoseFrame,
    Privacy,
    Record,
    SourceType,
    SplitName,
    ValidationState,
    Vec3,
)
from dataset_devkit.nuscenes.options import (
    PipelineConfig,
    SelectionRule,
)

__all__ = [
    "EXTENSION_RECORDS",
    "AnnotationMatch",
    "AnnotationRecord",
    "AnnotationSceneReference",
    "AnnotationWindow",
    "AnnotationsDocument",
    "CameraGridAudit",
    "CameraRecord",
    "ChronologyEntry",
    "ConfigDocument",
    "GnssDocument",
    "GnssRow",
    "PipelineAuditDocument",
    "RecordingChronology",
    "RecordingObservations",
    "RecordingRecord",
    "RecordingValidity",
    "RecordingsDocument",
    "Rejection",
    "SceneTags",
    "SceneValidity",
    "SceneWindowAudit",
    "SelectionStep",
    "SourceDocument",
    "SplitAssignment",
    "SplitDocument",
    "TagsDocument",
    "ValidationCheck",
    "ValidationDocument",
    "ValidityDocument",
]


class SourceDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``source.json``: the backend boundary, machine-readable."""

    schema_version: int
    source_type: SourceType
    privacy: Privacy
    pose_frame: PoseFrame
    #: 1.0 for decoded output; ``None`` (no privacy resolution claim) for restricted raw.
    global_horizontal_resolution_m: float | None
    global_crs: str
    #: ``"verbatim"`` (MCAP JPEG bytes copied), ``"reencoded"`` (decoded video, quality 95),
    #: or ``"per_camera"`` (message-log cameras: JPEG copied verbatim, every other source
    #: encoding — raw, PNG, video — encoded once at quality 95; ``recordings.json`` names each
    #: camera's source encoding).
    jpeg_policy: Literal["verbatim", "reencoded", "per_camera"]
    jpeg_quality: int | None
    scaffold_map_token: str
    #: Added (additive): with ``pose_frame = recording_local_tf_v1``, the name of that frame
    #: in the recordings' transform trees (``map``, ``odom``).
    world_frame: str | msgspec.UnsetType = msgspec.UNSET


class CameraRecord(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One source camera of one recording and its normalized channel."""

    source_name: str
    channel: str
    sensor_token: str
    calibrated_sensor_token: str
    width: int
    height: int
    #: Row-major K, also written as ``camera_intrinsic``.
    intrinsic: Matrix3
    #: Distortion is not removed (that needs re-encoding); model and D are kept here.
    distortion_model: str
    distortion: tuple[float, ...]
    frame_id: str
    topic: str
    frames_observed: int
    frames_exported: int
    #: Added (additive): how the source stored the frames (``png``, ``rgb8``, ``bayer_rggb8``,
    #: ``h264``); unset for JPEG frames copied verbatim.
    source_encoding: str | msgspec.UnsetType = msgspec.UNSET


class RecordingRecord(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``recordings.json`` row: one input recording, its fingerprint and its fate."""

    recording_id: str
    log_token: str
    source_type: SourceType
    backend: str
    source_name: str
    source_size: int
    #: ``sha256(backend || 0x00 || exact source bytes)`` as ``"<backend>:sha256:<hex>"``.
    source_digest: str
    truncated: bool
    start_timestamp_ns: int
    end_timestamp_ns: int
    cameras: tuple[CameraRecord, ...]
    scene_tokens: tuple[str, ...]
    #: Added (additive): every input recording is listed. ``selected`` is false for one that
    #: contributes no exported scene; then ``log_token``, the camera tokens and
    #: ``scene_tokens`` are empty and ``reason`` says why (the chronology has each window's).
    selected: bool = True
    reason: str = ""
    #: Added (additive): what a truncated recording lost (``""`` when complete).
    truncation_detail: str = ""
    #: Added (additive): where the ego poses came from (``tf map -> base_link``), when
    #: ``[ingest.pose]`` declares it.
    pose_source: str | msgspec.UnsetType = msgspec.UNSET
    #: Added (additive): ``simulation`` when the header stamps are a simulator's clock.
    clock: str | msgspec.UnsetType = msgspec.UNSET


class RecordingsDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    #: Original source camera name -> normalized ``CAM_*`` channel, over all recordings.
    channel_mapping: dict[str, str]
    recordings: tuple[RecordingRecord, ...]


class GnssRow(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One exported ego pose and its GNSS context."""

    ego_pose_token: str
    sample_data_token: str
    source_digest: str
    timestamp_ns: int
    #: Exactly ``ego_pose.translation``.
    translation_xyz_m: Vec3
    #: Whole metres in :data:`GLOBAL_CRS`.
    published_east_m: int
    published_north_m: int
    fix_timestamp_ns: int


class GnssDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    global_crs: str
    global_horizontal_resolution_m: float | None
    rows: tuple[GnssRow, ...]


class CameraGridAudit(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How one camera covered one scene's 2 Hz grid."""

    channel: str
    grid_points: int
    matched: int
    missing_grid_indices: tuple[int, ...]
    max_abs_offset_ns: int
    frames_in_window: int
    frames_without_pose: int
    #: Sample audit (added, additive): per grid point, the matched key frame's signed offset
    #: from the grid time in ns, or ``None`` when no frame matched.
    offsets_ns: tuple[int | None, ...] = ()


class SceneWindowAudit(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_index: int
    start_timestamp_ns: int
    end_timestamp_ns: int
    valid: bool
    reasons: tuple[str, ...]
    cameras: tuple[CameraGridAudit, ...]


class RecordingObservations(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Complete per-source observations, before any filtering."""

    messages_read: int
    image_frames: dict[str, int]
    calibrations: dict[str, int]
    poses: int
    gnss_fixes: int
    truncated: bool
    truncation_detail: str
    rejected_messages: int
    #: Added (additive): per camera, frames that did not decode cleanly (a damaged packet the
    #: decoder concealed or lost, or a frame predicted from one); they are never exported.
    invalid_frames: dict[str, int] = msgspec.field(default_factory=dict)
    #: Added (additive): for each such camera, the runs of invalid frames and why.
    invalid_frame_detail: tuple[str, ...] = ()


class RecordingValidity(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    source_digest: str
    recording_id: str
    valid: bool
    reasons: tuple[str, ...]
    observations: RecordingObservations
    scene_windows: tuple[SceneWindowAudit, ...]


class SceneValidity(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Aggregate of one selected scene, with its official sample references."""

    scene_token: str
    scene_name: str
    source_digest: str
    scene_index: int
    valid: bool
    reasons: tuple[str, ...]
    nbr_samples: int
    sample_tokens: tuple[str, ...]
    channels: tuple[str, ...]
    max_abs_offset_ns: int
    #: Added (additive): the original nanosecond grid time of each sample, in chain order.
    sample_timestamps_ns: tuple[int, ...] = ()


class ValidityDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    recordings: tuple[RecordingValidity, ...]
    scenes: tuple[SceneValidity, ...]


class ValidationCheck(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    passed: bool
    detail: str


class ValidationDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``validation.json``: ``not_run`` from the exporter; Task 9 writes ``passed``."""

    schema_version: int
    state: ValidationState
    checks: tuple[ValidationCheck, ...] = ()
    #: The scene/sample/channel the official loader resolved, once validation ran.
    loader_scene_token: str = ""
    loader_sample_token: str = ""
    loader_channel: str = ""


class SceneTags(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Tags computed from the data (never from human labels)."""

    scene_token: str
    scene_name: str
    source_digest: str
    duration_s: float
    distance_m: float
    mean_speed_mps: float
    max_speed_mps: float
    #: ``unknown`` (and no solar hour) for simulation stamps or local poses without GNSS.
    time_of_day: Literal["night", "dawn", "day", "dusk", "unknown"]
    local_solar_hour: float | None
    channels: tuple[str, ...]
    nbr_samples: int


class TagsDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    tags: tuple[SceneTags, ...]


class AnnotationRecord(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One human label, as imported from the label file."""

    annotation_id: str
    recording_id: str
    label: str
    start_ns: int
    end_ns: int
    attributes: dict[str, str]


class AnnotationWindow(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The label's interval clipped to its recording."""

    window_token: str
    annotation_id: str
    source_digest: str
    start_timestamp_ns: int
    end_timestamp_ns: int


class AnnotationMatch(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A label window overlapping an exported scene."""

    match_token: str
    annotation_id: str
    window_token: str
    scene_token: str
    overlap_start_ns: int
    overlap_end_ns: int


class AnnotationSceneReference(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_token: str
    annotation_ids: tuple[str, ...]
    match_tokens: tuple[str, ...]


class AnnotationsDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    #: Name and SHA-256 of the imported label file, empty when none was given.
    label_file_name: str
    label_file_sha256: str
    records: tuple[AnnotationRecord, ...]
    windows: tuple[AnnotationWindow, ...]
    matches: tuple[AnnotationMatch, ...]
    scene_references: tuple[AnnotationSceneReference, ...]


class SplitAssignment(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_token: str
    scene_name: str
    split: SplitName
    #: Adjacent scenes of a recording share a group; a group never straddles splits.
    group_id: str


class SplitDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``split.json``: our own full, disjoint train/test assignment."""

    schema_version: int
    namespace: str
    method: str
    test_fraction: float
    assignments: tuple[SplitAssignment, ...]


class ConfigDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    config: PipelineConfig
    #: ``sha256`` hex of the canonical JSON of ``config``.
    config_fingerprint: str
    evidence_fingerprint: str


class ChronologyEntry(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One scene window of a recording, selected or not (compact, complete)."""

    scene_index: int
    start_timestamp_ns: int
    end_timestamp_ns: int
    selected: bool
    #: Empty when not selected.
    scene_token: str
    #: Why it was not selected (the first rule that rejected it), or ``""``.
    reason: str


class RecordingChronology(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    source_digest: str
    entries: tuple[ChronologyEntry, ...]


class SelectionStep(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One rule of the ordered selection and the scenes it rejected."""

    rule: SelectionRule
    candidates_before: int
    candidates_after: int
    rejected_scene_ids: tuple[str, ...]


class Rejection(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Something the pipeline refused or dropped, and why."""

    subject: str
    reason: str


class PipelineAuditDocument(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    filtering: tuple[Rejection, ...]
    rejections: tuple[Rejection, ...]
    selection: tuple[SelectionStep, ...]
    #: Selected scene ids (``<source_digest>#<scene_index>``) in final order.
    selected_scene_ids: tuple[str, ...]
    chronology: tuple[RecordingChronology, ...]


#: Extension file name -> document type.
EXTENSION_RECORDS: Final[dict[str, type[Record]]] = {
    SOURCE_FILE: SourceDocument,
    RECORDINGS_FILE: RecordingsDocument,
    GNSS_FILE: GnssDocument,
    VALIDITY_FILE: ValidityDocument,
    VALIDATION_FILE: ValidationDocument,
    TAGS_FILE: TagsDocument,
    ANNOTATIONS_FILE: AnnotationsDocument,
    SPLIT_FILE: SplitDocument,
    CONFIG_FILE: ConfigDocument,
    PIPELINE_AUDIT_FILE: PipelineAuditDocument,
}
