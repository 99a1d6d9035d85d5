"""The on-disk contract of an exported nuScenes dataroot: names, versions and records.

Everything another module (the exporter, the validator, the SDK) needs to agree on lives here:
the official ``v1.0-trainval`` table records exactly as nuscenes-devkit 1.2.0 reads them, every
``mz_extensions/`` document we add next to them, the fixed source/privacy/pose combinations and
the resolved pipeline configuration. Changes to this module are additive only.
"""

from __future__ import annotations

import re
from typing import Final, Literal, TypeAlias

import msgspec

# --------------------------------------------------------------------------- versions, names

#: The only dataroot version the v1 contract writes and reads.
VERSION: Final = "v1.0-trainval"
#: Schema version of every ``mz_extensions`` document except ``validity.json``.
EXTENSION_SCHEMA_VERSION: Final = 1
#: ``validity.json`` schema version (the seed fixes it at 2).
VALIDITY_SCHEMA_VERSION: Final = 2
#: Schema version of the immutable evidence directory (``evidence.json``).
EVIDENCE_SCHEMA_VERSION: Final = 1

#: The 13 official tables, in the order nuscenes-devkit 1.2.0 loads them; each is
#: ``<VERSION>/<name>.json`` holding a JSON array (possibly empty).
TABLE_NAMES: Final = (
    "category",
    "attribute",
    "visibility",
    "instance",
    "sensor",
    "calibrated_sensor",
    "ego_pose",
    "log",
    "scene",
    "sample",
    "sample_data",
    "sample_annotation",
    "map",
)
#: Tables that are always empty arrays: we have no objects, lidar or radar.
EMPTY_TABLES: Final = (
    "category",
    "attribute",
    "visibility",
    "instance",
    "sample_annotation",
)
#: Tables the exporter must never write (the loader would switch to lidarseg/panoptic mode).
FORBIDDEN_TABLES: Final = ("lidarseg", "panoptic")

EXTENSIONS_DIR: Final = "mz_extensions"
SOURCE_FILE: Final = "source.json"
RECORDINGS_FILE: Final = "recordings.json"
GNSS_FILE: Final = "gnss.json"
VALIDITY_FILE: Final = "validity.json"
VALIDATION_FILE: Final = "validation.json"
TAGS_FILE: Final = "tags.json"
ANNOTATIONS_FILE: Final = "annotations.json"
SPLIT_FILE: Final = "split.json"
CONFIG_FILE: Final = "config.json"
PIPELINE_AUDIT_FILE: Final = "pipeline_audit.json"
#: Written last by the build service (Task 9), never by the exporter.
CONTENT_MANIFEST_FILE: Final = "content_manifest.json"
#: Where a published dataroot's content manifest lives (the seed puts it in mz_extensions/,
#: so the dataroot's top level stays exactly the official layout plus mz_extensions/).
CONTENT_MANIFEST_PATH: Final = f"{EXTENSIONS_DIR}/{CONTENT_MANIFEST_FILE}"
#: Every extension document the exporter writes, in write order.
EXTENSION_FILES: Final = (
    SOURCE_FILE,
    RECORDINGS_FILE,
    GNSS_FILE,
    VALIDITY_FILE,
    VALIDATION_FILE,
    TAGS_FILE,
    ANNOTATIONS_FILE,
    SPLIT_FILE,
    CONFIG_FILE,
    PIPELINE_AUDIT_FILE,
)

SAMPLES_DIR: Final = "samples"
SWEEPS_DIR: Final = "sweeps"
MAPS_DIR: Final = "maps"

# --------------------------------------------------------------------------- fixed values

#: Token shape: 32 lowercase hex characters, derived from namespace + stable identity.
TOKEN_RE: Final = re.compile(r"^[0-9a-f]{32}$")
#: Normalized camera channel names.
CHANNEL_RE: Final = re.compile(r"^CAM_[A-Z0-9]+(?:_[A-Z0-9]+)*$")
#: Scene names: ``<namespace-safe prefix>-<recording short id>-<index>``, never ``scene-NNNN``
#: so they cannot collide with nuscenes-devkit's official split lists.
SCENE_NAME_RE: Final = re.compile(r"^mz-[0-9a-f]{12}-[0-9]{4}$")
CAMERA_MODALITY: Final = "camera"
JPEG_FILEFORMAT: Final = "jpg"

#: Key frames are taken on a 2 Hz grid.
SAMPLE_INTERVAL_NS: Final = 500_000_000
#: ``image.jpeg_quality`` of the v1 contract (decoded sources are re-encoded at this quality).
JPEG_QUALITY: Final = 95

MAP_CATEGORY: Final = "compatibility_scaffold"
#: The scaffold map image: a deterministic 1x1 black 8-bit grayscale PNG.
MAP_FILENAME: Final = "maps/compatibility_scaffold.png"
MAP_DESCRIPTION: Final = (
    "compatibility scaffold for nuscenes-devkit 1.2.0, which dereferences map[0]; "
    "contains and claims no semantic map, object, lidar or radar data"
)

SourceType: TypeAlias = Literal["mcap_hf", "decoded_hf"]
Privacy: TypeAlias = Literal["restricted_raw", "privacy_transformed"]
PoseFrame: TypeAlias = Literal["legacy_web_mercator", "recording_local_enu_v1"]
SplitName: TypeAlias = Literal["train", "test"]
ValidationState: TypeAlias = Literal["not_run", "passed"]

SOURCE_MCAP: Final = "mcap_hf"
SOURCE_DECODED: Final = "decoded_hf"
PRIVACY_RESTRICTED_RAW: Final = "restricted_raw"
PRIVACY_TRANSFORMED: Final = "privacy_transformed"
POSE_FRAME_WEB_MERCATOR: Final = "legacy_web_mercator"
POSE_FRAME_LOCAL_ENU: Final = "recording_local_enu_v1"
#: Global horizontal resolution (metres) of decoded, privacy-transformed output.
DECODED_GLOBAL_RESOLUTION_M: Final = 1.0
#: CRS of ``published_east_m``/``published_north_m`` in gnss.json and of the MCAP pose frame.
GLOBAL_CRS: Final = "EPSG:3857"

#: The only allowed (privacy, pose frame, global horizontal resolution) per source type.
SOURCE_CONTRACTS: Final[dict[str, tuple[str, str, float | None]]] = {
    SOURCE_MCAP: (PRIVACY_RESTRICTED_RAW, POSE_FRAME_WEB_MERCATOR, None),
    SOURCE_DECODED: (PRIVACY_TRANSFORMED, POSE_FRAME_LOCAL_ENU, DECODED_GLOBAL_RESOLUTION_M),
}
SPLIT_NAMES: Final = ("train", "test")
VALIDATION_NOT_RUN: Final = "not_run"
VALIDATION_PASSED: Final = "passed"

Vec3: TypeAlias = tuple[float, float, float]
Quat: TypeAlias = tuple[float, float, float, float]
Matrix3: TypeAlias = tuple[Vec3, Vec3, Vec3]


class _Record(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every record we write: frozen, keyword-only, strict on read."""


# --------------------------------------------------------------------------- official tables


class Category(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    name: str
    description: str


class Attribute(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    name: str
    description: str


class Visibility(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    level: str
    description: str


class Instance(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    category_token: str
    nbr_annotations: int
    first_annotation_token: str
    last_annotation_token: str


class SampleAnnotation(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    sample_token: str
    instance_token: str
    visibility_token: str
    attribute_tokens: tuple[str, ...]
    translation: Vec3
    size: Vec3
    rotation: Quat
    prev: str
    next: str
    num_lidar_pts: int
    num_radar_pts: int


class Sensor(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One normalized camera channel per recording-independent channel name."""

    token: str
    channel: str
    modality: Literal["camera"]


class CalibratedSensor(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Camera extrinsics in the vehicle frame (wxyz quaternion) and the 3x3 K matrix."""

    token: str
    sensor_token: str
    translation: Vec3
    rotation: Quat
    camera_intrinsic: Matrix3


class EgoPose(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Vehicle pose at the camera capture time, in the source's pose frame."""

    token: str
    timestamp: int
    rotation: Quat
    translation: Vec3


class Log(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    logfile: str
    vehicle: str
    date_captured: str
    location: str


class Scene(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    log_token: str
    nbr_samples: int
    first_sample_token: str
    last_sample_token: str
    name: str
    description: str


class Sample(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    timestamp: int
    prev: str
    next: str
    scene_token: str


class SampleData(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One camera image; ``prev``/``next`` chain per scene and per channel, ``""`` at ends."""

    token: str
    sample_token: str
    ego_pose_token: str
    calibrated_sensor_token: str
    timestamp: int
    fileformat: str
    is_key_frame: bool
    height: int
    width: int
    filename: str
    prev: str
    next: str


class Map(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    log_tokens: tuple[str, ...]
    category: str
    filename: str


#: Official table name -> record type.
TABLE_RECORDS: Final[dict[str, type[_Record]]] = {
    "category": Category,
    "attribute": Attribute,
    "visibility": Visibility,
    "instance": Instance,
    "sensor": Sensor,
    "calibrated_sensor": CalibratedSensor,
    "ego_pose": EgoPose,
    "log": Log,
    "scene": Scene,
    "sample": Sample,
    "sample_data": SampleData,
    "sample_annotation": SampleAnnotation,
    "map": Map,
}

# --------------------------------------------------------------------------- configuration

SelectionRuleKind: TypeAlias = Literal[
    "require_valid",
    "min_samples",
    "min_distance_m",
    "min_mean_speed_mps",
    "max_mean_speed_mps",
    "time_of_day",
    "require_cameras",
    "max_scenes",
]


class SelectionRule(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One ordered scenario-selection rule; ``value``'s type depends on ``kind``.

    ``require_valid`` takes no value; ``min_samples``/``max_scenes`` an int; the speed and
    distance rules a float; ``time_of_day`` a comma-separated set (``"day,dusk"``);
    ``require_cameras`` a comma-separated set of normalized channels.
    """

    kind: SelectionRuleKind
    value: float | int | str | None = None


class ScenarioConfig(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_duration_s: float = 20.0
    #: A camera frame matches a 2 Hz grid point when it is at most this far from it.
    frame_tolerance_ms: float = 50.0
    #: A frame matches an ego pose/GNSS sample when interpolation spans at most this gap.
    pose_tolerance_ms: float = 200.0
    #: Scenes shorter than this (the recording tail) are kept in the chronology but invalid.
    min_scene_duration_s: float = 5.0
    rules: tuple[SelectionRule, ...] = (SelectionRule(kind="require_valid"),)
    #: Added (additive): a window is invalid when a GNSS fix in it lies farther than this
    #: (horizontal metres) from the ego pose at the fix time (decoded recordings, whose poses
    #: and fixes are separate streams).
    gnss_pose_tolerance_m: float = 10.0


class SplitConfig(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    test_fraction: float = 0.2
    #: Selected scenes of one recording with consecutive scene indexes form one split group,
    #: assigned by ``sha256(namespace, group identity)`` so adjacent scenes never straddle.
    method: Literal["recording_groups_v1"] = "recording_groups_v1"


class ImageConfig(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    jpeg_quality: int = JPEG_QUALITY


class ExportConfig(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    #: Export the frames between key frames as non-key-frame sweeps (off by default).
    include_sweeps: bool = False


class IngestConfig(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    #: Vehicle frame of MCAP transform trees: camera extrinsics are taken from it and the
    #: transforms whose child it is give the ego orientation.
    vehicle_frame: str = "base_link"


class PipelineConfig(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The resolved global config; evidence records it and its fingerprint."""

    namespace: str
    scenario: ScenarioConfig = ScenarioConfig()
    split: SplitConfig = SplitConfig()
    image: ImageConfig = ImageConfig()
    export: ExportConfig = ExportConfig()
    #: Added after the first contract (additive): MCAP ingest options.
    ingest: IngestConfig = IngestConfig()


# --------------------------------------------------------------------------- mz_extensions


class SourceDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``source.json``: the backend boundary, machine-readable."""

    schema_version: int
    source_type: SourceType
    privacy: Privacy
    pose_frame: PoseFrame
    #: 1.0 for decoded output; ``None`` (no privacy resolution claim) for restricted raw.
    global_horizontal_resolution_m: float | None
    global_crs: str
    #: ``"verbatim"`` (MCAP JPEG bytes copied) or ``"reencoded"`` (decoded video, quality 95).
    jpeg_policy: Literal["verbatim", "reencoded"]
    jpeg_quality: int | None
    scaffold_map_token: str


class CameraRecord(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class RecordingRecord(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class RecordingsDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    #: Original source camera name -> normalized ``CAM_*`` channel, over all recordings.
    channel_mapping: dict[str, str]
    recordings: tuple[RecordingRecord, ...]


class GnssRow(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class GnssDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    global_crs: str
    global_horizontal_resolution_m: float | None
    rows: tuple[GnssRow, ...]


class CameraGridAudit(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class SceneWindowAudit(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_index: int
    start_timestamp_ns: int
    end_timestamp_ns: int
    valid: bool
    reasons: tuple[str, ...]
    cameras: tuple[CameraGridAudit, ...]


class RecordingObservations(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class RecordingValidity(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    source_digest: str
    recording_id: str
    valid: bool
    reasons: tuple[str, ...]
    observations: RecordingObservations
    scene_windows: tuple[SceneWindowAudit, ...]


class SceneValidity(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class ValidityDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    recordings: tuple[RecordingValidity, ...]
    scenes: tuple[SceneValidity, ...]


class ValidationCheck(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    passed: bool
    detail: str


class ValidationDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``validation.json``: ``not_run`` from the exporter; Task 9 writes ``passed``."""

    schema_version: int
    state: ValidationState
    checks: tuple[ValidationCheck, ...] = ()
    #: The scene/sample/channel the official loader resolved, once validation ran.
    loader_scene_token: str = ""
    loader_sample_token: str = ""
    loader_channel: str = ""


class SceneTags(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Tags computed from the data (never from human labels)."""

    scene_token: str
    scene_name: str
    source_digest: str
    duration_s: float
    distance_m: float
    mean_speed_mps: float
    max_speed_mps: float
    time_of_day: Literal["night", "dawn", "day", "dusk"]
    local_solar_hour: float
    channels: tuple[str, ...]
    nbr_samples: int


class TagsDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    tags: tuple[SceneTags, ...]


class AnnotationRecord(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One human label, as imported from the label file."""

    annotation_id: str
    recording_id: str
    label: str
    start_ns: int
    end_ns: int
    attributes: dict[str, str]


class AnnotationWindow(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The label's interval clipped to its recording."""

    window_token: str
    annotation_id: str
    source_digest: str
    start_timestamp_ns: int
    end_timestamp_ns: int


class AnnotationMatch(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A label window overlapping an exported scene."""

    match_token: str
    annotation_id: str
    window_token: str
    scene_token: str
    overlap_start_ns: int
    overlap_end_ns: int


class AnnotationSceneReference(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_token: str
    annotation_ids: tuple[str, ...]
    match_tokens: tuple[str, ...]


class AnnotationsDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    #: Name and SHA-256 of the imported label file, empty when none was given.
    label_file_name: str
    label_file_sha256: str
    records: tuple[AnnotationRecord, ...]
    windows: tuple[AnnotationWindow, ...]
    matches: tuple[AnnotationMatch, ...]
    scene_references: tuple[AnnotationSceneReference, ...]


class SplitAssignment(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_token: str
    scene_name: str
    split: SplitName
    #: Adjacent scenes of a recording share a group; a group never straddles splits.
    group_id: str


class SplitDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``split.json``: our own full, disjoint train/test assignment."""

    schema_version: int
    namespace: str
    method: str
    test_fraction: float
    assignments: tuple[SplitAssignment, ...]


class ConfigDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    config: PipelineConfig
    #: ``sha256`` hex of the canonical JSON of ``config``.
    config_fingerprint: str
    evidence_fingerprint: str


class ChronologyEntry(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One scene window of a recording, selected or not (compact, complete)."""

    scene_index: int
    start_timestamp_ns: int
    end_timestamp_ns: int
    selected: bool
    #: Empty when not selected.
    scene_token: str
    #: Why it was not selected (the first rule that rejected it), or ``""``.
    reason: str


class RecordingChronology(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    source_digest: str
    entries: tuple[ChronologyEntry, ...]


class SelectionStep(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One rule of the ordered selection and the scenes it rejected."""

    rule: SelectionRule
    candidates_before: int
    candidates_after: int
    rejected_scene_ids: tuple[str, ...]


class Rejection(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Something the pipeline refused or dropped, and why."""

    subject: str
    reason: str


class PipelineAuditDocument(_Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: int
    filtering: tuple[Rejection, ...]
    rejections: tuple[Rejection, ...]
    selection: tuple[SelectionStep, ...]
    #: Selected scene ids (``<source_digest>#<scene_index>``) in final order.
    selected_scene_ids: tuple[str, ...]
    chronology: tuple[RecordingChronology, ...]


#: Extension file name -> document type.
EXTENSION_RECORDS: Final[dict[str, type[_Record]]] = {
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
