"""The resolved pipeline configuration: selection rules, scenario, splits, images, ingest.

Evidence and export follow these records and record them (``config.json``); the build
service's ``build.toml`` (:mod:`.config`) resolves to them. Changes are additive only.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from dataset_devkit.nuscenes.constants import (
    JPEG_QUALITY,
    Record,
)

__all__ = [
    "CameraTopicConfig",
    "ExportConfig",
    "ImageConfig",
    "IngestConfig",
    "PipelineConfig",
    "PoseSourceConfig",
    "PoseSourceKind",
    "RosDistro",
    "ScenarioConfig",
    "SelectionRule",
    "SelectionRuleKind",
    "SplitConfig",
]


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


class SelectionRule(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One ordered scenario-selection rule; ``value``'s type depends on ``kind``.

    ``require_valid`` takes no value; ``min_samples``/``max_scenes`` an int; the speed and
    distance rules a float; ``time_of_day`` a comma-separated set (``"day,dusk"``);
    ``require_cameras`` a comma-separated set of normalized channels.
    """

    kind: SelectionRuleKind
    value: float | int | str | None = None
    #: Added (additive): the rule applies only to the scenes of recordings whose id or file
    #: name matches one of these shell patterns (``"van-*"``); other recordings' scenes pass
    #: it untouched. Unset: every recording. Left out of the encoding when unset, so configs
    #: without it keep their fingerprint.
    recordings: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET


class ScenarioConfig(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
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


class SplitConfig(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    test_fraction: float = 0.2
    #: Selected scenes of one recording with consecutive scene indexes form one split group,
    #: assigned by ``sha256(namespace, group identity)`` so adjacent scenes never straddle.
    method: Literal["recording_groups_v1"] = "recording_groups_v1"


class ImageConfig(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    jpeg_quality: int = JPEG_QUALITY


class ExportConfig(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    #: Export the frames between key frames as non-key-frame sweeps (off by default).
    include_sweeps: bool = False


PoseSourceKind: TypeAlias = Literal["gnss", "tf", "odometry", "pose"]
RosDistro: TypeAlias = Literal["noetic", "foxy", "galactic", "humble", "iron", "jazzy", "kilted"]


class PoseSourceConfig(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[ingest.pose]``: where the ego pose of a message-log recording comes from.

    ``gnss`` (the default): positions from GNSS fixes (EPSG:3857 + altitude), orientation
    from the transform chain ``world_frame -> vehicle_frame``. ``tf``: position and
    orientation both from that chain. ``odometry``/``pose``: from the messages of ``topic``
    (``nav_msgs/msg/Odometry``; ``geometry_msgs/msg/PoseStamped``,
    ``PoseWithCovarianceStamped``, ``foxglove.PoseInFrame``), composed with the static chain
    from the message's child frame to the vehicle frame. Unset fields are left out of the
    recorded config.
    """

    source: PoseSourceKind = "gnss"
    #: The fixed frame the poses are expressed in (``map``, ``odom``, an earth-fixed frame).
    #: Unset: the root of the transform tree above the vehicle frame (``gnss``, ``tf``), or
    #: the messages' own ``frame_id`` (``odometry``, ``pose``).
    world_frame: str | msgspec.UnsetType = msgspec.UNSET
    #: The pose topic (``odometry`` and ``pose`` only).
    topic: str | msgspec.UnsetType = msgspec.UNSET


class CameraTopicConfig(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One ``[[ingest.cameras]]`` entry: a camera topic chosen for export, and its channel."""

    topic: str
    #: ``CAM_FRONT``, ``CAM_FRONT_LEFT``, ... or any ``CAM_*`` name. Unset: normalized from
    #: the frame id (``oakd_rgb_camera_optical_frame`` -> ``CAM_OAKD_RGB_CAMERA_OPTICAL_FRAME``).
    channel: str | msgspec.UnsetType = msgspec.UNSET
    #: The topic of its calibration (``CameraInfo``). Unset: the calibration whose frame id
    #: is the images' frame id.
    calibration_topic: str | msgspec.UnsetType = msgspec.UNSET
    #: The camera frame in the transform tree, when the images' ``frame_id`` is wrong or empty.
    frame_id: str | msgspec.UnsetType = msgspec.UNSET


class IngestConfig(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    #: Vehicle frame of the transform tree: camera extrinsics are taken relative to it and the
    #: ego pose is its pose.
    vehicle_frame: str = "base_link"
    #: Added (additive): the pose source. Unset: GNSS positions, orientation from the tree.
    pose: PoseSourceConfig | msgspec.UnsetType = msgspec.UNSET
    #: Added (additive): the camera topics to export. Unset: every camera topic, named by
    #: its frame id.
    cameras: tuple[CameraTopicConfig, ...] | msgspec.UnsetType = msgspec.UNSET
    #: Added (additive): topics left out entirely (shell patterns: ``"/debug/*"``).
    exclude_topics: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    #: Added (additive): the ROS distribution whose standard message definitions decode a
    #: bag without embedded definitions (sqlite3 bags before Iron, empty schema records).
    #: Unset: humble.
    ros_distro: RosDistro | msgspec.UnsetType = msgspec.UNSET


class PipelineConfig(Record, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The resolved global config; evidence records it and its fingerprint."""

    namespace: str
    scenario: ScenarioConfig = ScenarioConfig()
    split: SplitConfig = SplitConfig()
    image: ImageConfig = ImageConfig()
    export: ExportConfig = ExportConfig()
    #: Added after the first contract (additive): MCAP ingest options.
    ingest: IngestConfig = IngestConfig()
