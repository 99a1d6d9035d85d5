"""Names, versions and fixed values of an exported nuScenes dataroot, and the record base.

The leaf of the contract: :mod:`.tables` (the official nuScenes records), :mod:`.extensions`
(our ``mz_extensions`` records) and :mod:`.options` (the pipeline configuration) build on it,
and :mod:`.spec` re-exports all four. Changes are additive only.
"""

from __future__ import annotations

import re
from typing import Final, Literal, TypeAlias

import msgspec

__all__ = [
    "ANNOTATIONS_FILE",
    "CAMERA_MODALITY",
    "CHANNEL_RE",
    "CONFIG_FILE",
    "CONTENT_MANIFEST_FILE",
    "CONTENT_MANIFEST_PATH",
    "DECODED_GLOBAL_RESOLUTION_M",
    "EMPTY_TABLES",
    "EVIDENCE_SCHEMA_VERSION",
    "EXTENSIONS_DIR",
    "EXTENSION_FILES",
    "EXTENSION_SCHEMA_VERSION",
    "FORBIDDEN_TABLES",
    "GLOBAL_CRS",
    "GNSS_FILE",
    "JPEG_FILEFORMAT",
    "JPEG_QUALITY",
    "MAPS_DIR",
    "MAP_CATEGORY",
    "MAP_DESCRIPTION",
    "MAP_FILENAME",
    "PIPELINE_AUDIT_FILE",
    "POSE_FRAME_LOCAL_ENU",
    "POSE_FRAME_LOCAL_TF",
    "POSE_FRAME_WEB_MERCATOR",
    "PRIVACY_RESTRICTED_RAW",
    "PRIVACY_TRANSFORMED",
    "RECORDINGS_FILE",
    "SAMPLES_DIR",
    "SAMPLE_INTERVAL_NS",
    "SCENE_NAME_RE",
    "SOURCE_COMBINATIONS",
    "SOURCE_CONTRACTS",
    "SOURCE_DECODED",
    "SOURCE_FILE",
    "SOURCE_MCAP",
    "SPLIT_FILE",
    "SPLIT_NAMES",
    "SWEEPS_DIR",
    "TABLE_NAMES",
    "TAGS_FILE",
    "TOKEN_RE",
    "VALIDATION_FILE",
    "VALIDATION_NOT_RUN",
    "VALIDATION_PASSED",
    "VALIDITY_FILE",
    "VALIDITY_SCHEMA_VERSION",
    "VERSION",
    "Matrix3",
    "PoseFrame",
    "Privacy",
    "Quat",
    "Record",
    "SourceType",
    "SplitName",
    "ValidationState",
    "Vec3",
]

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
PoseFrame: TypeAlias = Literal[
    "legacy_web_mercator", "recording_local_enu_v1", "recording_local_tf_v1"
]
SplitName: TypeAlias = Literal["train", "test"]
ValidationState: TypeAlias = Literal["not_run", "passed"]

SOURCE_MCAP: Final = "mcap_hf"
SOURCE_DECODED: Final = "decoded_hf"
PRIVACY_RESTRICTED_RAW: Final = "restricted_raw"
PRIVACY_TRANSFORMED: Final = "privacy_transformed"
POSE_FRAME_WEB_MERCATOR: Final = "legacy_web_mercator"
POSE_FRAME_LOCAL_ENU: Final = "recording_local_enu_v1"
#: A recording's own fixed frame of its transform tree or pose topic (``map``, ``odom``),
#: named in ``source.json``: metric, local, with no geographic claim.
POSE_FRAME_LOCAL_TF: Final = "recording_local_tf_v1"
#: Global horizontal resolution (metres) of decoded, privacy-transformed output.
DECODED_GLOBAL_RESOLUTION_M: Final = 1.0
#: CRS of ``published_east_m``/``published_north_m`` in gnss.json and of the MCAP pose frame.
GLOBAL_CRS: Final = "EPSG:3857"

#: The default (privacy, pose frame, global horizontal resolution) of each source type.
SOURCE_CONTRACTS: Final[dict[str, tuple[str, str, float | None]]] = {
    SOURCE_MCAP: (PRIVACY_RESTRICTED_RAW, POSE_FRAME_WEB_MERCATOR, None),
    SOURCE_DECODED: (PRIVACY_TRANSFORMED, POSE_FRAME_LOCAL_ENU, DECODED_GLOBAL_RESOLUTION_M),
}
#: Every allowed (source type, privacy, pose frame, global horizontal resolution): the
#: defaults above, and message logs whose poses come from their own transform tree or pose
#: topic (a local frame, no geographic claim). Validation refuses any other combination.
SOURCE_COMBINATIONS: Final[frozenset[tuple[str, str, str, float | None]]] = frozenset(
    {
        (SOURCE_MCAP, PRIVACY_RESTRICTED_RAW, POSE_FRAME_WEB_MERCATOR, None),
        (SOURCE_MCAP, PRIVACY_RESTRICTED_RAW, POSE_FRAME_LOCAL_TF, None),
        (SOURCE_DECODED, PRIVACY_TRANSFORMED, POSE_FRAME_LOCAL_ENU, DECODED_GLOBAL_RESOLUTION_M),
    }
)
SPLIT_NAMES: Final = ("train", "test")
VALIDATION_NOT_RUN: Final = "not_run"
VALIDATION_PASSED: Final = "passed"

Vec3: TypeAlias = tuple[float, float, float]
Quat: TypeAlias = tuple[float, float, float, float]
Matrix3: TypeAlias = tuple[Vec3, Vec3, Vec3]


class Record(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every record we write: frozen, keyword-only, strict on read."""
