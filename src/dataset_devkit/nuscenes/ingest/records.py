"""The normalized records one decoded message turns into, whatever wrote the recording.

A Foxglove protobuf ``CompressedImage``, a ROS 1 ``sensor_msgs/Image`` and a ROS 2 CDR
``nav_msgs/msg/Odometry`` all become one of these plain values (see :mod:`.schemas`), so
nothing after the normalizers knows which container, encoding or writer a message came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from dataset_devkit.nuscenes.common.geometry import Transform
from dataset_devkit.nuscenes.spec import Matrix3, Quat

__all__ = [
    "Calibration",
    "CompressedFrame",
    "Fix",
    "Normalized",
    "Orientation",
    "PoseSample",
    "RawFrame",
    "TransformEdge",
    "VideoPacket",
]


@dataclass(frozen=True, slots=True)
class CompressedFrame:
    """A still image in a compressed format (JPEG, PNG): ``CompressedImage`` messages."""

    timestamp_ns: int
    frame_id: str
    #: As the message says it (``"jpeg"``, ``"png"``, ``"rgb8; jpeg compressed bgr8"``).
    format: str
    data: bytes


@dataclass(frozen=True, slots=True)
class RawFrame:
    """Uncompressed pixels: ``sensor_msgs/Image`` and ``foxglove.RawImage``."""

    timestamp_ns: int
    frame_id: str
    encoding: str
    width: int
    height: int
    step: int
    is_bigendian: bool
    #: A view into the message bytes where the decoder allows it (never copied at ingest).
    data: bytes | memoryview


@dataclass(frozen=True, slots=True)
class VideoPacket:
    """One access unit of a compressed video stream: ``foxglove.CompressedVideo``."""

    timestamp_ns: int
    frame_id: str
    #: ``"h264"`` or ``"h265"`` (Annex B byte stream).
    format: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Calibration:
    timestamp_ns: int
    frame_id: str
    width: int
    height: int
    intrinsic: Matrix3
    distortion_model: str
    distortion: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class TransformEdge:
    """The pose of frame *child* in frame *parent* at a time (a tf edge)."""

    timestamp_ns: int
    parent: str
    child: str
    transform: Transform


@dataclass(frozen=True, slots=True)
class Orientation:
    """The orientation part of a ``foxglove.PoseInFrame`` (how MCAP sources gave a heading)."""

    timestamp_ns: int
    rotation: Quat


@dataclass(frozen=True, slots=True)
class PoseSample:
    """A full pose message: odometry, a stamped pose, a pose with covariance.

    ``transform`` is the pose of ``child_frame`` in ``frame_id`` (for odometry the child is
    the message's ``child_frame_id``; for a stamped pose it is ``""``: the pose is of the
    frame the robot is configured to report, usually the vehicle frame).
    """

    timestamp_ns: int
    frame_id: str
    child_frame: str
    transform: Transform


@dataclass(frozen=True, slots=True)
class Fix:
    timestamp_ns: int
    latitude: float
    longitude: float
    altitude: float
    #: False for a ROS ``NavSatFix`` whose status says "no fix".
    has_fix: bool = True


Normalized = (
    CompressedFrame
    | RawFrame
    | VideoPacket
    | Calibration
    | TransformEdge
    | Orientation
    | PoseSample
    | Fix
)
