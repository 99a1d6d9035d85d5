"""Wire decoders of MCAP channels: protobuf, JSON and ROS 2 CDR, one per channel.

mcap's own decoder factories do the work ("None means not mine", asked in turn). A schema
record whose definition is empty (some JavaScript and embedded writers leave it out) cannot
drive them: then the standard definition of that type is used instead — ROS 2 types from the
rosbags typestore of ``ingest.ros_distro``, Foxglove types from the published Foxglove
schemas — and a type that has no standard definition is a one-line error naming topic and
type, never a decoder's internal ``KeyError`` later.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError

__all__ = ["ROS_DISTROS", "decoder_for", "ros_typestore"]

#: ``ingest.ros_distro`` values and the rosbags typestore each selects.
ROS_DISTROS: dict[str, str] = {
    "noetic": "ros1_noetic",
    "foxy": "ros2_foxy",
    "galactic": "ros2_galactic",
    "humble": "ros2_humble",
    "iron": "ros2_iron",
    "jazzy": "ros2_jazzy",
    "kilted": "ros2_kilted",
}
DEFAULT_ROS_DISTRO = "humble"


@cache
def ros_typestore(distro: str = DEFAULT_ROS_DISTRO) -> Any:
    """The rosbags typestore of *distro* (standard message definitions, ROS 1 or ROS 2)."""
    try:
        from rosbags.typesys import Stores, get_typestore
    except ImportError as exc:
        raise MissingDependencyError(
            "rosbags", extra="mcap", purpose="standard ROS message definitions"
        ) from exc
    return get_typestore(Stores(ROS_DISTROS[distro]))


def _json_decoder(data: bytes | memoryview) -> Any:
    return json.loads(bytes(data))


def _from_bytes(decode: Callable[[bytes], Any]) -> Callable[[bytes | memoryview], Any]:
    def from_view(data: bytes | memoryview) -> Any:
        return decode(bytes(data))

    return from_view


def _schema_cdr_decoder(schema: Any) -> Callable[[bytes | memoryview], Any] | None:
    """rosbags' CDR deserializer for the definition the schema record carries, or None for
    a definition it does not parse (mcap-ros2 then tries).

    rosbags generates a deserializer per type and reads ``uint8[]`` fields (image payloads)
    as numpy views of the message bytes instead of copies: a raw camera frame is not copied
    at all. Each schema gets a typestore of its own, holding exactly the definitions it
    carries (its type and the ones it depends on), as rosbags' ``AnyReader`` registers a
    bag's: two recordings may define a dependency differently.
    """
    if getattr(schema, "encoding", "") != "ros2msg":
        return None
    return _rosbags_decoder(schema.name, bytes(schema.data))


@lru_cache(maxsize=256)
def _rosbags_decoder(name: str, definition: bytes) -> Callable[[bytes | memoryview], Any] | None:
    """One deserializer per distinct definition, shared by every pass and channel (rosbags
    generates its code per typestore: a new store per channel and pass cost 3% of a build)."""
    from rosbags.typesys import Stores, TypesysError, get_types_from_msg, get_typestore

    try:
        types = get_types_from_msg(definition.decode(), name)
        store = get_typestore(Stores.EMPTY)
        store.register(types)
        store.get_msgdef(name)  # a definition missing a dependency fails here, not later
    except (TypesysError, UnicodeDecodeError, KeyError, ValueError):
        return None

    def decode(data: bytes | memoryview) -> Any:
        return store.deserialize_cdr(data, name)

    return decode


def _standard_cdr_decoder(
    schema_name: str, topic: str, distro: str
) -> Callable[[bytes | memoryview], Any]:
    store = ros_typestore(distro)
    if schema_name not in store.types:
        raise FormatError(
            f"topic {topic!r}: schema {schema_name!r} has an empty definition and is not a "
            f"standard ROS 2 type of ros_distro {distro!r}, so its messages cannot be decoded "
            "(record with a writer that stores message definitions, or exclude the topic "
            "with ingest.exclude_topics)"
        )

    def decode(data: bytes | memoryview) -> Any:
        return store.deserialize_cdr(data, schema_name)

    return decode


def _standard_protobuf_schema(schema: Any, topic: str) -> Any:
    from dataset_devkit.nuscenes.common.foxglove_schemas import SCHEMA_NAMES, schema_data

    if schema.name not in SCHEMA_NAMES:
        raise FormatError(
            f"topic {topic!r}: schema {schema.name!r} has an empty definition and is not a "
            f"Foxglove schema with a published definition ({', '.join(sorted(SCHEMA_NAMES))}), "
            "so its messages cannot be decoded"
        )
    return type(schema)(
        id=schema.id, name=schema.name, encoding=schema.encoding, data=schema_data(schema.name)
    )


def decoder_for(
    message_encoding: str, schema: Any, topic: str, *, ros_distro: str = DEFAULT_ROS_DISTRO
) -> Callable[[bytes | memoryview], Any]:
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
    empty = schema is not None and not bytes(getattr(schema, "data", b"") or b"").strip()
    if empty and message_encoding == "cdr":
        return _standard_cdr_decoder(name, topic, ros_distro)
    if message_encoding == "cdr":
        own = _schema_cdr_decoder(schema)
        if own is not None:
            return own
    if empty and message_encoding == "protobuf":
        schema = _standard_protobuf_schema(schema, topic)
    try:
        module = importlib.import_module(modules[message_encoding])
    except ImportError as exc:
        raise MissingDependencyError(
            exc.name or "mcap decoder", extra="mcap", purpose="reading MCAP recordings"
        ) from exc
    wire: Callable[[bytes], Any] | None = module.DecoderFactory().decoder_for(
        message_encoding, schema
    )
    # Message data may be a view into its chunk (see .mcap_chunks): these decoders want bytes.
    decoder = None if wire is None else _from_bytes(wire)
    if decoder is None and message_encoding == "cdr" and name in ros_typestore(ros_distro).types:
        # mcap-ros2 reads ``ros2msg`` definitions only; a standard type defined in another
        # form (``ros2idl``) is read with its standard definition.
        return _standard_cdr_decoder(name, topic, ros_distro)
    if decoder is None:
        raise FormatError(
            f"topic {topic!r} (schema {name!r}, encoding "
            f"{getattr(schema, 'encoding', '')!r}) cannot be decoded as {message_encoding}"
        )
    return decoder
