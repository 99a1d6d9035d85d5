"""ROS writers: rosbag2 folders (MCAP, sqlite3) and ROS 1 bags through rosbags, plain ROS 2
MCAP files through mcap + mcap-ros2-support, and an MCAP with an empty schema definition.

Messages are built as ROS 2-named dicts (:func:`ros_dict`) and turned into the writer's own
objects from the typestore's field definitions (:func:`build`), so ROS 1 and ROS 2 share one
description: ROS 1's ``CameraInfo.D`` matches ``d``, a field missing from the dict (ROS 1's
``header.seq``) gets its default. ``foxglove_msgs/msg/CompressedVideo`` is not in the
typestores and is registered from its message definition, as a bag of a ROS system with
foxglove_msgs installed carries it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Final

import numpy as np

from tests.nuscenes.robots.messages import (
    CameraInfoMessage,
    CompressedImageMessage,
    Message,
    OdometryMessage,
    PoseMessage,
    RawImageMessage,
    Role,
    TfMessage,
    TopicPlan,
    VideoMessage,
)
from tests.nuscenes.robots.plan import Plan
from tests.nuscenes.robots.truth import TfSample

__all__ = [
    "ROS_TYPES",
    "build",
    "ros_dict",
    "typestore",
    "write_cdr_mcap",
    "write_rosbag1",
    "write_rosbag2",
]

#: The ROS 2 message type of each role (ROS 1 bags carry the same types, ``pkg/Type``).
ROS_TYPES: Final[dict[Role, str]] = {
    "tf": "tf2_msgs/msg/TFMessage",
    "tf_static": "tf2_msgs/msg/TFMessage",
    "odometry": "nav_msgs/msg/Odometry",
    "pose_with_covariance": "geometry_msgs/msg/PoseWithCovarianceStamped",
    "pose": "geometry_msgs/msg/PoseStamped",
    "camera_info": "sensor_msgs/msg/CameraInfo",
    "raw_image": "sensor_msgs/msg/Image",
    "compressed_image": "sensor_msgs/msg/CompressedImage",
    "video": "foxglove_msgs/msg/CompressedVideo",
    "fix": "sensor_msgs/msg/NavSatFix",
}
_VIDEO_MSG = {
    1: "time timestamp\nstring frame_id\nuint8[] data\nstring format\n",
    2: "builtin_interfaces/Time timestamp\nstring frame_id\nuint8[] data\nstring format\n",
}


@functools.cache
def typestore(ros_version: int) -> Any:
    """ROS 1 Noetic or ROS 2 Humble types, plus ``foxglove_msgs/msg/CompressedVideo``.

    (and, for ROS 1, ``tf2_msgs/msg/TFMessage``)."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC if ros_version == 1 else Stores.ROS2_HUMBLE)
    store.register(get_types_from_msg(_VIDEO_MSG[ros_version], ROS_TYPES["video"]))
    if ros_version == 1:
        # Noetic's store lacks tf2_msgs; ROS 1's /tf carries tf2_msgs/TFMessage since Hydro.
        text = "geometry_msgs/TransformStamped[] transforms\n"
        store.register(get_types_from_msg(text, ROS_TYPES["tf"]))
    return store


def _time(t_ns: int) -> dict[str, int]:
    return {"sec": t_ns // 1_000_000_000, "nanosec": t_ns % 1_000_000_000}


def _header(t_ns: int, frame: str) -> dict[str, Any]:
    return {"stamp": _time(t_ns), "frame_id": frame}


def _xyz(v: tuple[float, ...]) -> dict[str, float]:
    return {"x": v[0], "y": v[1], "z": v[2]}


def _pose(s: TfSample) -> dict[str, Any]:
    x, y, z, w = s.rotation
    return {"position": _xyz(s.translation), "orientation": {"x": x, "y": y, "z": z, "w": w}}


def _covariance(*diagonal: float) -> list[float]:
    out = [0.0] * 36
    for i, v in enumerate(diagonal):
        out[i * 7] = v
    return out


def ros_dict(message: Message) -> dict[str, Any]:
    """The message as a dict of ROS 2 field names (bytes for ``uint8[]``, lists for arrays)."""
    if isinstance(message, TfMessage):
        return {
            "transforms": [
                {
                    "header": _header(s.stamp_ns, s.parent),
                    "child_frame_id": s.child,
                    "transform": {
                        "translation": _xyz(s.translation),
                        "rotation": dict(zip("xyzw", s.rotation, strict=True)),
                    },
                }
                for s in message.transforms
            ]
        }
    if isinstance(message, OdometryMessage):
        s = message.pose
        return {
            "header": _header(s.stamp_ns, s.parent),
            "child_frame_id": s.child,
            "pose": {"pose": _pose(s), "covariance": _covariance(1e-3, 1e-3, 1e6, 1e6, 1e6, 3e-3)},
            "twist": {
                "twist": {"linear": _xyz(message.linear), "angular": _xyz(message.angular)},
                "covariance": _covariance(1e-4, 1e-4, 1e6, 1e6, 1e6, 1e-3),
            },
        }
    if isinstance(message, PoseMessage):
        s = message.pose
        if not message.with_covariance:
            return {"header": _header(s.stamp_ns, s.parent), "pose": _pose(s)}
        covariance = _covariance(0.02, 0.02, 0.0, 0.0, 0.0, 0.007)
        return {
            "header": _header(s.stamp_ns, s.parent),
            "pose": {"pose": _pose(s), "covariance": covariance},
        }
    if isinstance(message, CameraInfoMessage):
        return {
            "header": _header(message.stamp_ns, message.frame),
            "height": message.height,
            "width": message.width,
            "distortion_model": "plumb_bob",
            "d": list(message.d),
            "k": list(message.k),
            "r": list(message.r),
            "p": list(message.p),
            "binning_x": 0,
            "binning_y": 0,
            "roi": {"x_offset": 0, "y_offset": 0, "height": 0, "width": 0, "do_rectify": False},
        }
    if isinstance(message, RawImageMessage):
        img = message.image
        return {
            "header": _header(message.stamp_ns, message.frame),
            "height": img.height,
            "width": img.width,
            "encoding": img.encoding,
            "is_bigendian": int(img.is_bigendian),
            "step": img.step,
            "data": img.data,
        }
    if isinstance(message, CompressedImageMessage):
        return {
            "header": _header(message.stamp_ns, message.frame),
            "format": message.ros_format,
            "data": message.data,
        }
    if isinstance(message, VideoMessage):
        return {
            "timestamp": _time(message.stamp_ns),
            "frame_id": message.frame,
            "data": message.data,
            "format": message.format,
        }
    return {
        "header": _header(message.stamp_ns, message.frame),
        "status": {"status": 0, "service": 1},
        "latitude": message.latitude,
        "longitude": message.longitude,
        "altitude": message.altitude,
        "position_covariance": [0.04, 0.0, 0.0, 0.0, 0.04, 0.0, 0.0, 0.0, 0.09],
        "position_covariance_type": 2,
    }


_DTYPES: Final = {
    "bool": np.bool_,
    "byte": np.uint8,
    "char": np.uint8,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
}
_MISSING: Final = object()


def build(store: Any, typename: str, value: dict[str, Any]) -> Any:
    """The typestore's message object of *typename* holding *value* (a ROS 2-named dict)."""
    kwargs: dict[str, Any] = {}
    for name, lowered, kind, detail, default in _fields(store, typename):
        given = value.get(name, _MISSING)
        if given is _MISSING and lowered != name:
            given = value.get(lowered, _MISSING)
        if given is _MISSING:
            kwargs[name] = default() if callable(default) else default
        elif kind == "message":
            kwargs[name] = build(store, detail, given)
        elif kind == "messages":
            kwargs[name] = [build(store, detail, item) for item in given]
        elif kind == "array":
            if isinstance(given, bytes):
                kwargs[name] = np.frombuffer(given, detail)
            else:
                kwargs[name] = np.array(given, detail)
        else:
            kwargs[name] = given
    return store.types[typename](**kwargs)


_FieldPlan = tuple[str, str, str, Any, Any]
_PLANS: dict[tuple[int, str], list[_FieldPlan]] = {}


def _fields(store: Any, typename: str) -> list[_FieldPlan]:
    """Per field: name, its lower-case spelling, how to convert it, and its default."""
    key = (id(store), typename)
    if key in _PLANS:
        return _PLANS[key]
    from rosbags.interfaces import Nodetype

    out: list[_FieldPlan] = []
    for name, (node, detail) in store.fielddefs[typename][1]:
        if node == Nodetype.NAME:
            out.append(
                (name, name.lower(), "message", detail, functools.partial(build, store, detail, {}))
            )
        elif node == Nodetype.BASE:
            kind = detail[0]
            default = "" if kind == "string" else False if kind == "bool" else 0
            out.append((name, name.lower(), "scalar", None, default))
        else:
            (inner, inner_detail), size = detail
            if inner == Nodetype.BASE:
                dtype = _DTYPES[inner_detail[0]]
                length = size if node == Nodetype.ARRAY else 0
                out.append(
                    (name, name.lower(), "array", dtype, functools.partial(np.zeros, length, dtype))
                )
            else:
                out.append((name, name.lower(), "messages", inner_detail, list))
    _PLANS[key] = out
    return out


def _qos(topic: TopicPlan) -> list[Any]:
    """The offered QoS of each publisher, as ``ros2 bag record`` stores it (history unknown)."""
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )

    infinite = QosTime(9223372036, 854775807)
    reliability = QosReliability.BEST_EFFORT if topic.qos == "sensor" else QosReliability.RELIABLE
    durability = QosDurability.TRANSIENT_LOCAL if topic.qos == "latched" else QosDurability.VOLATILE
    profile = Qos(
        QosHistory.UNKNOWN,
        0,
        reliability,
        durability,
        infinite,
        infinite,
        QosLiveliness.AUTOMATIC,
        infinite,
        False,
    )
    return [profile] * len(topic.publishers)


def write_rosbag2(folder: Path, plan: Plan, storage: str) -> Path:
    """A rosbag2 folder (``metadata.yaml`` plus one ``.mcap`` or ``.db3``) written by rosbags.

    MCAP storage is written as metadata version 9 (Jazzy's), sqlite3 as version 8 (Iron's).
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = typestore(2)
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(folder, version=9 if storage == "mcap" else 8, storage_plugin=plugin) as writer:
        connections = {
            t.topic: (
                writer.add_connection(
                    t.topic, ROS_TYPES[t.role], typestore=store, offered_qos_profiles=_qos(t)
                ),
                ROS_TYPES[t.role],
            )
            for t in plan.topics
        }
        for event in plan.events():
            connection, msgtype = connections[event.topic]
            message = build(store, msgtype, ros_dict(event.message))
            writer.write(connection, event.log_time_ns, store.serialize_cdr(message, msgtype))
    return folder


def write_rosbag1(path: Path, plan: Plan) -> tuple[Path, dict[str, int]]:
    """A ROS 1 bag (rosbags, Noetic types), one connection per (topic, publisher) as rosbag does.

    Returns the path and, per topic, the messages a reader can still reach: all of them for
    an intact bag; those of the chunks written before the damage otherwise. ``unindexed``
    stops the writer without its index (a killed ``rosbag record``: the header's index
    position stays 0); ``truncated`` cuts a finished bag in the middle of a chunk.
    """
    from rosbags.rosbag1 import Writer

    store = typestore(1)
    damage = plan.scenario.ros1_damage
    writer = Writer(path)
    # Small chunks (rosbag's default is 768 KiB) so a damaged bag still holds many whole ones.
    writer.chunk_threshold = 128 * 1024
    writer.open()
    connections: dict[tuple[str, str], tuple[Any, str]] = {}
    for t in plan.topics:
        for publisher in t.publishers:
            connections[(t.topic, publisher)] = (
                writer.add_connection(
                    t.topic,
                    ROS_TYPES[t.role],
                    typestore=store,
                    callerid=f"/{publisher}",
                    latching=1 if t.qos == "latched" else None,
                ),
                ROS_TYPES[t.role],
            )
    pending: dict[str, int] = {t.topic: 0 for t in plan.topics}
    flushed: list[tuple[int, dict[str, int]]] = []  # (file offset after the chunk, counts)
    chunks = len(writer.chunks)
    total = dict.fromkeys(pending, 0)
    for event in plan.events():
        connection, msgtype = connections[(event.topic, event.publisher)]
        message = build(store, msgtype, ros_dict(event.message))
        writer.write(connection, event.log_time_ns, store.serialize_ros1(message, msgtype))
        pending[event.topic] += 1
        total[event.topic] += 1
        if len(writer.chunks) != chunks:
            chunks = len(writer.chunks)
            assert writer.bio is not None
            flushed.append((writer.bio.tell(), dict(pending)))
            pending = dict.fromkeys(pending, 0)
    if damage == "unindexed":
        writer.abort()
        return path, _sum_counts(c for _, c in flushed)
    writer.close()
    if damage == "truncated":
        cut = (flushed[len(flushed) // 2 - 1][0] + flushed[len(flushed) // 2][0]) // 2
        with path.open("r+b") as f:
            f.truncate(cut)
        return path, _sum_counts(c for end, c in flushed if end <= cut)
    return path, total


def _sum_counts(counts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for topic, n in c.items():
            out[topic] = out.get(topic, 0) + n
    return out


def write_cdr_mcap(path: Path, plan: Plan) -> Path:
    """A plain MCAP file of ROS 2 CDR messages (profile ``ros2``), not a rosbag2 folder.

    Written by mcap-ros2-support's writer, whose own CDR encoder serializes the dicts. With
    ``empty_schema_topics`` those topics' Schema records have an empty definition (as some
    JavaScript writers emit): mcap-ros2-support cannot encode without one, so such a file is
    written with ``mcap.writer.Writer`` and rosbags' CDR serializer instead.
    """
    store = typestore(2)
    definitions = {
        t.topic: (ROS_TYPES[t.role], store.generate_msgdef(ROS_TYPES[t.role], ros_version=2)[0])
        for t in plan.topics
    }
    if plan.scenario.empty_schema_topics:
        return _write_mcap_empty_schema(path, plan, store, definitions)
    from mcap_ros2.writer import Writer

    with path.open("xb") as f:
        writer = Writer(f)
        schemas = {}
        for msgtype, text in definitions.values():
            if msgtype not in schemas:
                schemas[msgtype] = writer.register_msgdef(msgtype, text)
        for event in plan.events():
            msgtype = definitions[event.topic][0]
            writer.write_message(
                event.topic,
                schemas[msgtype],
                ros_dict(event.message),
                log_time=event.log_time_ns,
                publish_time=event.log_time_ns,
            )
        writer.finish()
    return path


def _write_mcap_empty_schema(
    path: Path, plan: Plan, store: Any, definitions: dict[str, tuple[str, str]]
) -> Path:
    from mcap.writer import Writer

    empty = set(plan.scenario.empty_schema_topics)
    unknown = empty - set(definitions)
    if unknown:
        raise ValueError(f"empty_schema_topics not in the recording: {sorted(unknown)}")
    with path.open("xb") as f:
        writer = Writer(f)
        writer.start(profile="ros2", library="")
        channels: dict[str, int] = {}
        for topic, (msgtype, text) in definitions.items():
            data = b"" if topic in empty else text.encode()
            schema = writer.register_schema(name=msgtype, encoding="ros2msg", data=data)
            channels[topic] = writer.register_channel(
                topic=topic, message_encoding="cdr", schema_id=schema
            )
        for event in plan.events():
            msgtype = definitions[event.topic][0]
            message = build(store, msgtype, ros_dict(event.message))
            writer.add_message(
                channels[event.topic],
                log_time=event.log_time_ns,
                publish_time=event.log_time_ns,
                data=bytes(store.serialize_cdr(message, msgtype)),
            )
        writer.finish()
    return path
