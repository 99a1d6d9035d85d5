"""The one place that decides what each topic of a recording is *for*.

A schema says what a message is (:mod:`.schemas`); the topic and ``[ingest]`` of
``build.toml`` say what it is used for: a camera to export, a calibration, transforms (static
or not), the pose source, GNSS, or nothing — and why. ``/tf`` against ``/tf_static`` is a
fact of the topic, not of the schema. An explicit mapping wins over defaults, and every
topic left out keeps its reason, so ``recording inspect`` and the build's own refusals can
say what a recording would need.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Final

import msgspec

from dataset_devkit.nuscenes.ingest.backend import Channel
from dataset_devkit.nuscenes.ingest.schemas import (
    CAMERA_KINDS,
    KIND_CALIBRATION,
    KIND_FIX,
    KIND_POSE,
    KIND_TRANSFORMS,
    POSE_KINDS,
    schema_info,
)
from dataset_devkit.nuscenes.options import CameraTopicConfig, IngestConfig, PoseSourceConfig

__all__ = [
    "ROLE_CALIBRATION",
    "ROLE_CAMERA",
    "ROLE_GNSS",
    "ROLE_IGNORED",
    "ROLE_ORIENTATION",
    "ROLE_POSE",
    "ROLE_STATIC_TF",
    "ROLE_TF",
    "RoleTable",
    "TopicRole",
    "pose_config",
]

ROLE_CAMERA: Final = "camera"
ROLE_CALIBRATION: Final = "calibration"
ROLE_TF: Final = "transforms"
ROLE_STATIC_TF: Final = "static transforms"
ROLE_POSE: Final = "pose"
#: ``foxglove.PoseInFrame`` with a GNSS pose source: the ego orientation when no transform
#: reaches the vehicle frame (how MCAP recordings without a tree gave a heading).
ROLE_ORIENTATION: Final = "orientation"
ROLE_GNSS: Final = "gnss"
ROLE_IGNORED: Final = "ignored"


def pose_config(options: IngestConfig) -> PoseSourceConfig:
    """``[ingest.pose]``, or the default (GNSS) when the table is absent."""
    return PoseSourceConfig() if isinstance(options.pose, msgspec.UnsetType) else options.pose


def _is_static_topic(topic: str) -> bool:
    """``/tf_static`` (and a namespaced ``/robot1/tf_static``): transforms valid at all times."""
    return topic.rstrip("/").rsplit("/", 1)[-1] == "tf_static"


@dataclass(frozen=True, slots=True)
class TopicRole:
    """What one topic is used for, and why (for topics left out: what would use them)."""

    role: str
    #: The schema's kind (:mod:`.schemas`), ``""`` for an unknown schema.
    kind: str
    reason: str
    #: The ``[[ingest.cameras]]`` entry of a mapped camera topic.
    camera: CameraTopicConfig | None = None


class RoleTable:
    """Roles of a recording's topics under one ``[ingest]`` configuration."""

    def __init__(self, options: IngestConfig) -> None:
        self.options = options
        self.pose = pose_config(options)
        cameras = () if isinstance(options.cameras, msgspec.UnsetType) else options.cameras
        self.camera_by_topic = {c.topic: c for c in cameras}
        self.mapped = not isinstance(options.cameras, msgspec.UnsetType)
        self.calibration_topics = {
            c.calibration_topic: c.topic
            for c in cameras
            if not isinstance(c.calibration_topic, msgspec.UnsetType)
        }
        self.exclude = (
            () if isinstance(options.exclude_topics, msgspec.UnsetType) else options.exclude_topics
        )
        self._roles: dict[tuple[str, str], TopicRole] = {}

    def role(self, channel: Channel) -> TopicRole:
        return self.role_of(channel.topic, channel.schema)

    def role_of(self, topic: str, schema: str) -> TopicRole:
        """The role of *topic* carrying *schema* (canonical name), decided once."""
        key = (topic, schema)
        found = self._roles.get(key)
        if found is None:
            found = self._roles[key] = self._decide(topic, schema)
        return found

    def wanted(self, channel: Channel) -> bool:
        """Whether a channel's messages are decoded in the first pass."""
        return self.role(channel).role != ROLE_IGNORED

    def roles(self) -> dict[tuple[str, str], TopicRole]:
        """Every ``(topic, schema)`` seen so far and its role."""
        return dict(sorted(self._roles.items()))

    def _decide(self, topic: str, schema: str) -> TopicRole:
        pattern = next((p for p in self.exclude if fnmatch.fnmatchcase(topic, p)), None)
        info = schema_info(schema) if schema else None
        kind = info.kind if info is not None else ""
        if pattern is not None:
            return TopicRole(ROLE_IGNORED, kind, f"excluded by ingest.exclude_topics {pattern!r}")
        if info is None:
            return TopicRole(ROLE_IGNORED, "", f"schema {schema!r} not used")
        if kind in CAMERA_KINDS:
            if not self.mapped:
                return TopicRole(ROLE_CAMERA, kind, "named by its frame id")
            camera = self.camera_by_topic.get(topic)
            if camera is None:
                return TopicRole(ROLE_IGNORED, kind, "camera topic not listed in ingest.cameras")
            return TopicRole(ROLE_CAMERA, kind, "listed in ingest.cameras", camera)
        if kind == KIND_CALIBRATION:
            if topic in self.calibration_topics:
                camera = self.camera_by_topic[self.calibration_topics[topic]]
                return TopicRole(ROLE_CALIBRATION, kind, f"of camera topic {camera.topic}", camera)
            return TopicRole(ROLE_CALIBRATION, kind, "matched to its camera by frame id")
        if kind == KIND_TRANSFORMS:
            if _is_static_topic(topic):
                return TopicRole(ROLE_STATIC_TF, kind, "valid at all times")
            return TopicRole(ROLE_TF, kind, "interpolated at each camera time")
        if kind == KIND_FIX:
            if self.pose.source == "gnss":
                return TopicRole(ROLE_GNSS, kind, "the ego position")
            return TopicRole(
                ROLE_GNSS, kind, "kept in gnss.json (the ego pose comes from ingest.pose)"
            )
        if kind in POSE_KINDS:
            return self._pose_role(topic, schema, kind)
        return TopicRole(ROLE_IGNORED, kind, f"schema {schema!r} not used")  # pragma: no cover

    def _pose_role(self, topic: str, schema: str, kind: str) -> TopicRole:
        source = self.pose.source
        if source in ("odometry", "pose"):
            if topic == self.pose.topic:
                return TopicRole(ROLE_POSE, kind, f"the ego pose (ingest.pose source = {source!r})")
            return TopicRole(
                ROLE_IGNORED, kind, f"pose topic not used: ingest.pose.topic is {self.pose.topic!r}"
            )
        if schema in ("foxglove.PoseInFrame", "foxglove_msgs/msg/PoseInFrame") and source == "gnss":
            return TopicRole(
                ROLE_ORIENTATION, kind, "the ego heading when no transform reaches the vehicle"
            )
        wanted = "odometry" if kind != KIND_POSE else "pose"
        return TopicRole(
            ROLE_IGNORED,
            kind,
            f"not the pose source ({source}); to use it: [ingest.pose] source = "
            f'"{wanted}", topic = "{topic}"',
        )
