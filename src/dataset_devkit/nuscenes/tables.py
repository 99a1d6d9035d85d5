"""The official ``v1.0-trainval`` table records, exactly as nuscenes-devkit 1.2.0 reads them.

This is the nuScenes contract: field names, types and order are theirs, not ours. The
exporter writes these records, the validator and the SDK read them back strictly.
Changes are additive only.
"""

from __future__ import annotations

from typing import Final, Literal

from dataset_devkit.nuscenes.constants import (
    Matrix3,
    Quat,
    Record,
    Vec3,
)

__all__ = [
    "TABLE_RECORDS",
    "Attribute",
    "CalibratedSensor",
    "Category",
    "EgoPose",
    "Instance",
    "Log",
    "Map",
    "Sample",
    "SampleAnnotation",
    "SampleData",
    "Scene",
    "Sensor",
    "Visibility",
]


class Category(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    name: str
    description: str


class Attribute(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    name: str
    description: str


class Visibility(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    level: str
    description: str


class Instance(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    category_token: str
    nbr_annotations: int
    first_annotation_token: str
    last_annotation_token: str


class SampleAnnotation(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class Sensor(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One normalized camera channel per recording-independent channel name."""

    token: str
    channel: str
    modality: Literal["camera"]


class CalibratedSensor(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Camera extrinsics in the vehicle frame (wxyz quaternion) and the 3x3 K matrix."""

    token: str
    sensor_token: str
    translation: Vec3
    rotation: Quat
    camera_intrinsic: Matrix3


class EgoPose(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Vehicle pose at the camera capture time, in the source's pose frame."""

    token: str
    timestamp: int
    rotation: Quat
    translation: Vec3


class Log(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    logfile: str
    vehicle: str
    date_captured: str
    location: str


class Scene(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    log_token: str
    nbr_samples: int
    first_sample_token: str
    last_sample_token: str
    name: str
    description: str


class Sample(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    timestamp: int
    prev: str
    next: str
    scene_token: str


class SampleData(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class Map(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    log_tokens: tuple[str, ...]
    category: str
    filename: str


#: Official table name -> record type.
TABLE_RECORDS: Final[dict[str, type[Record]]] = {
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
