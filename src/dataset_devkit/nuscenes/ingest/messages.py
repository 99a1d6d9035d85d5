"""Message decoding for MCAP channels: protobuf, JSON and ROS 2 CDR, matched by schema name.

Each decoder turns a message into one plain normalized record, so the reader never cares
whether a camera was logged by foxglove-sdk (protobuf), as JSON or by a ROS 2 recorder.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError
from dataset_devkit.nuscenes.common.geometry import Transform, xyzw_to_wxyz
from dataset_devkit.nuscenes.spec import Matrix3, Quat

__all__ = [
    "ROLE_BY_SCHEMA",
    "Calibration",
    "Fix",
    "Image",
    "Orientation",
    "TransformEdge",
    "decoder_for",
    "normalize",
]

#: Schema name -> role; everything else on the file is ignored (and counted).
ROLE_BY_SCHEMA: dict[str, str] = {
    "foxglove.CompressedImage": "image",
    "sensor_msgs/msg/CompressedImage": "image",
    "foxglove.CameraCalibration": "calibration",
    "sensor_msgs/msg/CameraInfo": "calibration",
    "foxglove.FrameTransform": "transform",
    "foxglove.FrameTransforms": "transforms",
    "tf2_msgs/msg/TFMessage": "transforms",
    "foxglove.PoseInFrame": "pose",
    "foxglove.LocationFix": "fix",
    "sensor_msgs/msg/NavSatFix": "fix",
}


@dataclass(frozen=True, slots=True)
class Image:
    timestamp_ns: int
    frame_id: str
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
    timestamp_ns: int
    parent: str
    child: str
    transform: Transform


@dataclass(frozen=True, slots=True)
class Orientation:
    timestamp_ns: int
    rotation: Quat


@dataclass(frozen=True, slots=True)
class Fix:
    timestamp_ns: int
    latitude: float
    longitude: float
    altitude: float
    #: False for a ROS ``NavSatFix`` whose status says "no fix".
    has_fix: bool = True


Normalized = Image | Calibration | TransformEdge | Orientation | Fix


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
    return bytes(value)


def _vec(v: Any) -> tuple[float, float, float]:
    return (float(_get(v, "x")), float(_get(v, "y")), float(_get(v, "z")))


def _quat(q: Any, what: str) -> Quat:
    return xyzw_to_wxyz(
        float(_get(q, "x")), float(_get(q, "y")), float(_get(q, "z")), float(_get(q, "w")), what
    )


def _edge(t: Any, role: str) -> TransformEdge:
    if role == "ros":
        header = _get(t, "header")
        body = _get(t, "transform")
        return TransformEdge(
            timestamp_ns=_time_ns(_get(header, "stamp")),
            parent=str(_get(header, "frame_id")),
            child=str(_get(t, "child_frame_id")),
            transform=(_vec(_get(body, "translation")), _quat(_get(body, "rotation"), "rotation")),
        )
    return TransformEdge(
        timestamp_ns=_stamp(t),
        parent=str(_get(t, "parent_frame_id")),
        child=str(_get(t, "child_frame_id")),
        transform=(_vec(_get(t, "translation")), _quat(_get(t, "rotation"), "rotation")),
    )


def _matrix3(values: Any) -> Matrix3:
    k = [float(v) for v in values]
    if len(k) != 9:
        raise ValueError(f"K needs 9 values, found {len(k)}")
    return ((k[0], k[1], k[2]), (k[3], k[4], k[5]), (k[6], k[7], k[8]))


def normalize(schema_name: str, msg: Any) -> list[Normalized]:
    """Turn one decoded message of a known schema into normalized records."""
    role = ROLE_BY_SCHEMA[schema_name]
    ros = "/msg/" in schema_name
    if role == "image":
        return [
            Image(_stamp(msg), _frame_id(msg), str(_get(msg, "format")), _bytes(_get(msg, "data")))
        ]
    if role == "calibration":
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
    if role == "transform":
        return [_edge(msg, "foxglove")]
    if role == "transforms":
        return [_edge(t, "ros" if ros else "foxglove") for t in _get(msg, "transforms")]
    if role == "pose":
        return [Orientation(_stamp(msg), _quat(_get(_get(msg, "pose"), "orientation"), "pose"))]
    has_fix = True
    if ros:
        has_fix = int(_get(_get(msg, "status"), "status")) >= 0  # STATUS_NO_FIX is -1
    return [
        Fix(
            timestamp_ns=_stamp(msg),
            latitude=float(_get(msg, "latitude")),
            longitude=float(_get(msg, "longitude")),
            altitude=float(_get(msg, "altitude")),
            has_fix=has_fix,
        )
    ]


def _json_decoder(data: bytes) -> Any:
    return json.loads(data)


def decoder_for(message_encoding: str, schema: Any, topic: str) -> Callable[[bytes], Any]:
    """The decoder for one channel; FormatError naming topic and schema when unsupported."""
    name = getattr(schema, "name", "")
    if message_encoding == "json":
        return _json_decoder
    modules = {"protobuf": "mcap_protobuf.decoder", "cdr": "mcap_ros2.decoder"}
    if message_encoding not in modules:
        raise FormatError(
            f"topic {topic!r} (schema {name!r}) uses message encoding "
            f"{message_encoding!r}; supported: protobuf, json, cdr"
        )
    try:
        module = importlib.import_module(modules[message_encoding])
    except ImportError as exc:
        raise MissingDependencyError(
            exc.name or "mcap decoder", extra="mcap", purpose="reading MCAP recordings"
        ) from exc
    decoder: Callable[[bytes], Any] | None = module.DecoderFactory().decoder_for(
        message_encoding, schema
    )
    if decoder is None:
        raise FormatError(
            f"topic {topic!r} (schema {name!r}, encoding "
            f"{getattr(schema, 'encoding', '')!r}) cannot be decoded as {message_encoding}"
        )
    return decoder
