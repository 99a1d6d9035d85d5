"""Container-neutral messages of a robot recording; each writer maps them onto its own types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from tests.nuscenes.robots.images import RawFrame
from tests.nuscenes.robots.truth import TfSample

__all__ = [
    "CameraInfoMessage",
    "CompressedImageMessage",
    "Event",
    "FixMessage",
    "Message",
    "OdometryMessage",
    "PoseMessage",
    "RawImageMessage",
    "Role",
    "TfMessage",
    "TopicPlan",
    "VideoMessage",
]

#: What a topic carries; writers pick the message type for their container from it.
Role: TypeAlias = Literal[
    "tf",
    "tf_static",
    "odometry",
    "pose_with_covariance",
    "pose",
    "camera_info",
    "raw_image",
    "compressed_image",
    "video",
    "fix",
]


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """One topic: its role, the nodes that publish on it, and how they offer it."""

    topic: str
    role: Role
    publishers: tuple[str, ...]
    #: ``latched``: transient-local / latched (``/tf_static``); ``sensor``: best effort.
    qos: Literal["latched", "sensor", "reliable"]


@dataclass(frozen=True, slots=True)
class TfMessage:
    transforms: tuple[TfSample, ...]


@dataclass(frozen=True, slots=True)
class OdometryMessage:
    #: ``header.frame_id`` = parent, ``child_frame_id`` = child.
    pose: TfSample
    linear: tuple[float, float, float]
    angular: tuple[float, float, float]


@dataclass(frozen=True, slots=True)
class PoseMessage:
    """PoseWithCovarianceStamped or PoseStamped: ``pose.child``'s pose in ``pose.parent``."""

    pose: TfSample
    with_covariance: bool


@dataclass(frozen=True, slots=True)
class CameraInfoMessage:
    stamp_ns: int
    frame: str
    width: int
    height: int
    k: tuple[float, ...]
    d: tuple[float, ...]
    r: tuple[float, ...]
    p: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class RawImageMessage:
    stamp_ns: int
    frame: str
    image: RawFrame


@dataclass(frozen=True, slots=True)
class CompressedImageMessage:
    stamp_ns: int
    frame: str
    #: ``format`` as ROS 2's image_transport writes it, and as a Foxglove writer does.
    ros_format: str
    foxglove_format: str
    data: bytes


@dataclass(frozen=True, slots=True)
class VideoMessage:
    stamp_ns: int
    frame: str
    format: str
    data: bytes
    keyframe: bool


@dataclass(frozen=True, slots=True)
class FixMessage:
    stamp_ns: int
    frame: str
    latitude: float
    longitude: float
    altitude: float


Message: TypeAlias = (
    TfMessage
    | OdometryMessage
    | PoseMessage
    | CameraInfoMessage
    | RawImageMessage
    | CompressedImageMessage
    | VideoMessage
    | FixMessage
)


@dataclass(frozen=True, slots=True)
class Event:
    """One message as the recorder logged it."""

    log_time_ns: int
    topic: str
    publisher: str
    message: Message
