"""What each known message schema *is*, and how a decoded message becomes normalized records.

One registry from schema name to ``(kind, normalizer)``, filled by the ``@_normalizer``
decorator below, replaces per-format branches: a schema says what a message is (a camera
frame, a calibration, transforms, a pose, a GNSS fix); the topic and ``build.toml`` say what
it is *for* (:mod:`.roles`). ROS 1 names (``sensor_msgs/Image``) are normalized to the ROS 2
spelling (``sensor_msgs/msg/Image``) first, as rosbags does, so one table serves both.

Fields are read by name from whatever the wire decoder returned (protobuf messages, JSON
dicts, ROS message objects from mcap-ros2 or rosbags), so Foxglove protobuf, JSON and ROS
recordings share every normalizer; the Foxglove schemas' ROS messages (``foxglove_msgs``)
are the same schemas under ROS names.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from dataset_devkit.nuscenes.common.geometry import Transform, xyzw_to_wxyz
from dataset_devkit.nuscenes.ingest.records import (
    Calibration,
    CompressedFrame,
    Fix,
    Normalized,
    PoseSample,
    RawFrame,
    TransformEdge,
    VideoPacket,
)
from dataset_devkit.nuscenes.spec import Matrix3, Quat

__all__ = [
    "CAMERA_KINDS",
    "KIND_CALIBRATION",
    "KIND_FIX",
    "KIND_IMAGE",
    "KIND_ODOMETRY",
    "KIND_POSE",
    "KIND_RAW_IMAGE",
    "KIND_TRANSFORMS",
    "KIND_VIDEO",
    "POSE_KINDS",
    "SchemaInfo",
    "canonical_schema_name",
    "known_schemas",
    "schema_info",
]

KIND_IMAGE: Final = "image"
KIND_RAW_IMAGE: Final = "raw_image"
KIND_VIDEO: Final = "video"
KIND_CALIBRATION: Final = "calibration"
KIND_TRANSFORMS: Final = "transforms"
KIND_POSE: Final = "pose"
KIND_ODOMETRY: Final = "odometry"
KIND_FIX: Final = "fix"
#: Kinds whose messages are camera frames.
CAMERA_KINDS: Final = frozenset({KIND_IMAGE, KIND_RAW_IMAGE, KIND_VIDEO})
#: Kinds that can be a pose source topic.
POSE_KINDS: Final = frozenset({KIND_POSE, KIND_ODOMETRY})

Normalizer = Callable[[Any], list[Normalized]]


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    """A known schema: its canonical name, what its messages are, how to normalize one."""

    name: str
    kind: str
    normalize: Normalizer


_REGISTRY: dict[str, SchemaInfo] = {}


def _normalizer(kind: str, *names: str) -> Callable[[Normalizer], Normalizer]:
    def register(fn: Normalizer) -> Normalizer:
        for name in names:
            if name in _REGISTRY:  # a programming error, caught by the first import
                raise RuntimeError(f"schema {name!r} registered twice")
            _REGISTRY[name] = SchemaInfo(name, kind, fn)
        return fn

    return register


def canonical_schema_name(name: str) -> str:
    """``pkg/Type`` (ROS 1) → ``pkg/msg/Type``; other names (``foxglove.X``) unchanged."""
    parts = name.split("/")
    if len(parts) == 2 and all(parts) and "." not in name:
        return f"{parts[0]}/msg/{parts[1]}"
    return name


def schema_info(name: str) -> SchemaInfo | None:
    """The registry entry of *name* (either ROS spelling), or None for an unknown schema."""
    return _REGISTRY.get(canonical_schema_name(name))


def known_schemas() -> dict[str, str]:
    """Every known schema name and its kind (for reports and messages)."""
    return {name: info.kind for name, info in sorted(_REGISTRY.items())}


# --- field access -------------------------------------------------------------------------


def _get(msg: Any, *names: str) -> Any:
    """First present field among *names* (protobuf/ROS attribute or JSON key)."""
    for name in names:
        if isinstance(msg, dict):
            if name in msg:
                return msg[name]
        elif hasattr(msg, name):
            return getattr(msg, name)
    raise KeyError(names[0])


def _time_ns(stamp: Any) -> int:
    sec = int(_get(stamp, "seconds", "sec"))
    nsec = int(_get(stamp, "nanos", "nsec", "nanosec"))
    if sec < 0 or not 0 <= nsec < 1_000_000_000:
        raise ValueError(f"invalid time sec={sec} nsec={nsec}")
    return sec * 1_000_000_000 + nsec


def _stamp(msg: Any) -> int:
    """Header time: Foxglove ``timestamp`` or ROS ``header.stamp``."""
    if (isinstance(msg, dict) and "timestamp" in msg) or hasattr(msg, "timestamp"):
        return _time_ns(_get(msg, "timestamp"))
    return _time_ns(_get(_get(msg, "header"), "stamp"))


def _frame_id(msg: Any) -> str:
    try:
        return str(_get(msg, "frame_id"))
    except KeyError:
        return str(_get(_get(msg, "header"), "frame_id"))


def _bytes(value: Any) -> bytes:
    if isinstance(value, str):  # JSON encoding carries bytes as base64
        return base64.b64decode(value, validate=True)
    if hasattr(value, "tobytes"):  # a numpy array (rosbags' uint8[] fields)
        return bytes(value.tobytes())
    return bytes(value)


def _buffer(value: Any) -> bytes | memoryview:
    """A raw frame's payload without a copy: rosbags' ``uint8[]`` arrays and mcap's message
    views are kept views (a 1280x720 rgb8 frame is 2.8 MB); anything else as :func:`_bytes`."""
    if isinstance(value, memoryview):
        return value
    numpy_bytes = hasattr(value, "tobytes") and getattr(value, "ndim", 0) == 1
    if numpy_bytes and value.flags.c_contiguous and value.dtype.itemsize == 1:
        return memoryview(value)
    return _bytes(value)


def _vec(v: Any) -> tuple[float, float, float]:
    return (float(_get(v, "x")), float(_get(v, "y")), float(_get(v, "z")))


def _quat(q: Any, what: str) -> Quat:
    return xyzw_to_wxyz(
        float(_get(q, "x")), float(_get(q, "y")), float(_get(q, "z")), float(_get(q, "w")), what
    )


def _matrix3(values: Any) -> Matrix3:
    k = [float(v) for v in values]
    if len(k) != 9:
        raise ValueError(f"K needs 9 values, found {len(k)}")
    return ((k[0], k[1], k[2]), (k[3], k[4], k[5]), (k[6], k[7], k[8]))


def _pose_transform(pose: Any, what: str) -> Transform:
    return (_vec(_get(pose, "position")), _quat(_get(pose, "orientation"), what))


# --- camera frames ------------------------------------------------------------------------


@_normalizer(
    KIND_IMAGE,
    "foxglove.CompressedImage",
    "foxglove_msgs/msg/CompressedImage",
    "sensor_msgs/msg/CompressedImage",
)
def _compressed(msg: Any) -> list[Normalized]:
    return [
        CompressedFrame(
            _stamp(msg), _frame_id(msg), str(_get(msg, "format")), _bytes(_get(msg, "data"))
        )
    ]


@_normalizer(
    KIND_RAW_IMAGE, "sensor_msgs/msg/Image", "foxglove.RawImage", "foxglove_msgs/msg/RawImage"
)
def _raw(msg: Any) -> list[Normalized]:
    try:
        bigendian = bool(int(_get(msg, "is_bigendian")))
    except KeyError:  # foxglove.RawImage has no such field: its 16-bit data is little-endian
        bigendian = False
    return [
        RawFrame(
            timestamp_ns=_stamp(msg),
            frame_id=_frame_id(msg),
            encoding=str(_get(msg, "encoding")),
            width=int(_get(msg, "width")),
            height=int(_get(msg, "height")),
            step=int(_get(msg, "step")),
            is_bigendian=bigendian,
            data=_buffer(_get(msg, "data")),
        )
    ]


@_normalizer(KIND_VIDEO, "foxglove.CompressedVideo", "foxglove_msgs/msg/CompressedVideo")
def _video(msg: Any) -> list[Normalized]:
    return [
        VideoPacket(
            _stamp(msg), _frame_id(msg), str(_get(msg, "format")), _bytes(_get(msg, "data"))
        )
    ]


@_normalizer(
    KIND_CALIBRATION,
    "foxglove.CameraCalibration",
    "foxglove_msgs/msg/CameraCalibration",
    "sensor_msgs/msg/CameraInfo",
)
def _calibration(msg: Any) -> list[Normalized]:
    return [
        Calibration(
            timestamp_ns=_stamp(msg),
            frame_id=_frame_id(msg),
            width=int(_get(msg, "width")),
            height=int(_get(msg, "height")),
            intrinsic=_matrix3(_get(msg, "K", "k")),
            distortion_model=str(_get(msg, "distortion_model")),
            distortion=tuple(float(v) for v in _get(msg, "D", "d")),
        )
    ]


# --- transforms ---------------------------------------------------------------------------


def _foxglove_edge(t: Any) -> TransformEdge:
    return TransformEdge(
        timestamp_ns=_stamp(t),
        parent=str(_get(t, "parent_frame_id")),
        child=str(_get(t, "child_frame_id")),
        transform=(_vec(_get(t, "translation")), _quat(_get(t, "rotation"), "rotation")),
    )


def _ros_edge(t: Any) -> TransformEdge:
    header = _get(t, "header")
    body = _get(t, "transform")
    return TransformEdge(
        timestamp_ns=_time_ns(_get(header, "stamp")),
        parent=str(_get(header, "frame_id")),
        child=str(_get(t, "child_frame_id")),
        transform=(_vec(_get(body, "translation")), _quat(_get(body, "rotation"), "rotation")),
    )


@_normalizer(KIND_TRANSFORMS, "foxglove.FrameTransform", "foxglove_msgs/msg/FrameTransform")
def _frame_transform(msg: Any) -> list[Normalized]:
    return [_foxglove_edge(msg)]


@_normalizer(KIND_TRANSFORMS, "foxglove.FrameTransforms", "foxglove_msgs/msg/FrameTransforms")
def _frame_transforms(msg: Any) -> list[Normalized]:
    return [_foxglove_edge(t) for t in _get(msg, "transforms")]


@_normalizer(KIND_TRANSFORMS, "tf2_msgs/msg/TFMessage", "tf/msg/tfMessage")
def _tf_message(msg: Any) -> list[Normalized]:
    return [_ros_edge(t) for t in _get(msg, "transforms")]


@_normalizer(KIND_TRANSFORMS, "geometry_msgs/msg/TransformStamped")
def _transform_stamped(msg: Any) -> list[Normalized]:
    return [_ros_edge(msg)]


# --- poses --------------------------------------------------------------------------------


@_normalizer(KIND_POSE, "foxglove.PoseInFrame", "foxglove_msgs/msg/PoseInFrame")
def _pose_in_frame(msg: Any) -> list[Normalized]:
    pose = _get(msg, "pose")
    return [PoseSample(_stamp(msg), _frame_id(msg), "", _pose_transform(pose, "pose"))]


@_normalizer(KIND_POSE, "geometry_msgs/msg/PoseStamped")
def _pose_stamped(msg: Any) -> list[Normalized]:
    return [PoseSample(_stamp(msg), _frame_id(msg), "", _pose_transform(_get(msg, "pose"), "pose"))]


@_normalizer(KIND_POSE, "geometry_msgs/msg/PoseWithCovarianceStamped")
def _pose_with_covariance(msg: Any) -> list[Normalized]:
    pose = _get(_get(msg, "pose"), "pose")
    return [PoseSample(_stamp(msg), _frame_id(msg), "", _pose_transform(pose, "pose"))]


@_normalizer(KIND_ODOMETRY, "nav_msgs/msg/Odometry")
def _odometry(msg: Any) -> list[Normalized]:
    pose = _get(_get(msg, "pose"), "pose")
    return [
        PoseSample(
            _stamp(msg),
            _frame_id(msg),
            str(_get(msg, "child_frame_id")),
            _pose_transform(pose, "odometry pose"),
        )
    ]


# --- GNSS ---------------------------------------------------------------------------------


def _fix(msg: Any, has_fix: bool) -> list[Normalized]:
    return [
        Fix(
            timestamp_ns=_stamp(msg),
            latitude=float(_get(msg, "latitude")),
            longitude=float(_get(msg, "longitude")),
            altitude=float(_get(msg, "altitude")),
            has_fix=has_fix,
        )
    ]


@_normalizer(KIND_FIX, "foxglove.LocationFix", "foxglove_msgs/msg/LocationFix")
def _location_fix(msg: Any) -> list[Normalized]:
    return _fix(msg, True)


@_normalizer(KIND_FIX, "sensor_msgs/msg/NavSatFix")
def _nav_sat_fix(msg: Any) -> list[Normalized]:
    return _fix(msg, int(_get(_get(msg, "status"), "status")) >= 0)  # STATUS_NO_FIX is -1
