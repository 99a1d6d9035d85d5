"""The Foxglove protobuf schemas the sample recordings use, built from plain descriptors.

Why not foxglove-sdk: it is a large native package a user who only builds datasets does not
need, and its MCAP header names its own version, so the bytes of a sample recording (and
through its ``source_digest`` the demo's root hash) would follow whatever version is
installed. The field names and numbers below are Foxglove's published schemas
(``foxglove/*.proto``), so Foxglove Studio and our ingest read the files as they read
foxglove-sdk's; ``protobuf`` (through ``mcap-protobuf-support``) builds and encodes them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = ["SCHEMA_NAMES", "message_class", "schema_data"]

# FieldDescriptorProto types: double, fixed32, int32, int64, string, bytes, message.
_D, _FIXED32, _I32, _I64, _STR, _BYTES, _MSG = 1, 7, 5, 3, 9, 12, 11
_ONE, _MANY = 1, 3
_TIMESTAMP = ".google.protobuf.Timestamp"

# file name -> (package, dependencies, {message: [(field, number, type, label, type_name)]})
_FILES: dict[str, tuple[str, tuple[str, ...], dict[str, list[tuple[str, int, int, int, str]]]]]
_FILES = {
    "google/protobuf/timestamp.proto": (
        "google.protobuf",
        (),
        {"Timestamp": [("seconds", 1, _I64, _ONE, ""), ("nanos", 2, _I32, _ONE, "")]},
    ),
    "foxglove/Vector3.proto": (
        "foxglove",
        (),
        {"Vector3": [(a, i, _D, _ONE, "") for i, a in enumerate("xyz", 1)]},
    ),
    "foxglove/Quaternion.proto": (
        "foxglove",
        (),
        {"Quaternion": [(a, i, _D, _ONE, "") for i, a in enumerate("xyzw", 1)]},
    ),
    "foxglove/FrameTransform.proto": (
        "foxglove",
        ("foxglove/Quaternion.proto", "foxglove/Vector3.proto", "google/protobuf/timestamp.proto"),
        {
            "FrameTransform": [
                ("timestamp", 1, _MSG, _ONE, _TIMESTAMP),
                ("parent_frame_id", 2, _STR, _ONE, ""),
                ("child_frame_id", 3, _STR, _ONE, ""),
                ("translation", 4, _MSG, _ONE, ".foxglove.Vector3"),
                ("rotation", 5, _MSG, _ONE, ".foxglove.Quaternion"),
            ]
        },
    ),
    "foxglove/FrameTransforms.proto": (
        "foxglove",
        ("foxglove/FrameTransform.proto",),
        {"FrameTransforms": [("transforms", 1, _MSG, _MANY, ".foxglove.FrameTransform")]},
    ),
    "foxglove/CameraCalibration.proto": (
        "foxglove",
        ("google/protobuf/timestamp.proto",),
        {
            "CameraCalibration": [
                ("timestamp", 1, _MSG, _ONE, _TIMESTAMP),
                ("frame_id", 9, _STR, _ONE, ""),
                ("width", 2, _FIXED32, _ONE, ""),
                ("height", 3, _FIXED32, _ONE, ""),
                ("distortion_model", 4, _STR, _ONE, ""),
                ("D", 5, _D, _MANY, ""),
                ("K", 6, _D, _MANY, ""),
                ("R", 7, _D, _MANY, ""),
                ("P", 8, _D, _MANY, ""),
            ]
        },
    ),
    "foxglove/LocationFix.proto": (
        "foxglove",
        ("google/protobuf/timestamp.proto",),
        {
            "LocationFix": [
                ("timestamp", 6, _MSG, _ONE, _TIMESTAMP),
                ("frame_id", 7, _STR, _ONE, ""),
                ("latitude", 1, _D, _ONE, ""),
                ("longitude", 2, _D, _ONE, ""),
                ("altitude", 3, _D, _ONE, ""),
                ("position_covariance", 4, _D, _MANY, ""),
            ]
        },
    ),
    "foxglove/CompressedImage.proto": (
        "foxglove",
        ("google/protobuf/timestamp.proto",),
        {
            "CompressedImage": [
                ("timestamp", 1, _MSG, _ONE, _TIMESTAMP),
                ("frame_id", 4, _STR, _ONE, ""),
                ("data", 2, _BYTES, _ONE, ""),
                ("format", 3, _STR, _ONE, ""),
            ]
        },
    ),
}

#: The schema (= message) names a sample recording writes, by the file that defines them.
SCHEMA_NAMES: dict[str, str] = {
    "foxglove.FrameTransforms": "foxglove/FrameTransforms.proto",
    "foxglove.CameraCalibration": "foxglove/CameraCalibration.proto",
    "foxglove.LocationFix": "foxglove/LocationFix.proto",
    "foxglove.CompressedImage": "foxglove/CompressedImage.proto",
}


def _file_proto(name: str) -> Any:
    from google.protobuf import descriptor_pb2

    package, deps, messages = _FILES[name]
    proto = descriptor_pb2.FileDescriptorProto(
        name=name, package=package, dependency=list(deps), syntax="proto3"
    )
    for message, fields in messages.items():
        m = proto.message_type.add(name=message)
        for field, number, kind, label, type_name in fields:
            f = m.field.add(name=field, number=number, type=kind, label=label, json_name=field)
            if type_name:
                f.type_name = type_name
    return proto


def _closure(name: str) -> list[str]:
    """*name* and its dependencies, dependencies first (the order a FileDescriptorSet wants)."""
    order: list[str] = []

    def visit(n: str) -> None:
        for dep in _FILES[n][1]:
            visit(dep)
        if n not in order:
            order.append(n)

    visit(name)
    return order


@cache
def schema_data(schema: str) -> bytes:
    """The MCAP schema record data of *schema*: a serialized ``FileDescriptorSet``."""
    from google.protobuf import descriptor_pb2

    files = [_file_proto(n) for n in _closure(SCHEMA_NAMES[schema])]
    data: bytes = descriptor_pb2.FileDescriptorSet(file=files).SerializeToString(deterministic=True)
    return data


@cache
def _pool() -> Any:
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.DescriptorPool()  # private: never clashes with other packages
    for name in _closure_all():
        pool.Add(_file_proto(name))
    return pool


def _closure_all() -> list[str]:
    order: list[str] = []
    for name in _FILES:
        for n in _closure(name):
            if n not in order:
                order.append(n)
    return order


@cache
def message_class(full_name: str) -> Any:
    """The generated protobuf class of *full_name* (``foxglove.Vector3``, ...)."""
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(full_name))
