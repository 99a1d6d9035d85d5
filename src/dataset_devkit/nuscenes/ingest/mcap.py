"""The MCAP container: ``.mcap`` files and ROS 2 bags stored as MCAP, read record by record.

The file is read with ``mcap``'s stream reader, not its index: a recording whose writer
crashed has no summary, and is read up to its last complete record (the incomplete final
chunk salvaged by :mod:`.salvage`); the loss is reported, never hidden. The splits of a ROS 2
bag are read in the order ``metadata.yaml`` lists them, as one stream of messages.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from dataset_devkit.errors import FormatError, MissingDependencyError, UnsafePathError
from dataset_devkit.nuscenes.ingest.backend import Channel, Message, ReadState, Wanted
from dataset_devkit.nuscenes.ingest.mcap_chunks import chunk_payload, chunk_records
from dataset_devkit.nuscenes.ingest.messages import DEFAULT_ROS_DISTRO, decoder_for
from dataset_devkit.nuscenes.ingest.rosbag import BAG_METADATA_FILE
from dataset_devkit.nuscenes.ingest.salvage import salvage_chunk
from dataset_devkit.nuscenes.ingest.schemas import canonical_schema_name, schema_info
from dataset_devkit.nuscenes.ingest.source import (
    SourceDigest,
    SourceIdentity,
    open_regular,
    source_identity,
)

__all__ = [
    "BACKEND_MCAP",
    "MCAP_MAGIC",
    "METADATA_NAME",
    "McapLog",
    "decode_errors",
    "replay",
    "truncation_errors",
]

BACKEND_MCAP = "mcap"
#: The 8 bytes every MCAP file starts with.
MCAP_MAGIC = b"\x89MCAP0\r\n"
#: Metadata record whose keys may name the recording (``recording_id``, ``vehicle``,
#: ``location``).
METADATA_NAME = "recording"


def _stream_reader(f: BinaryIO) -> Any:
    """mcap's stream reader, handing over whole chunks (:mod:`.mcap_chunks` breaks them up
    without copying the messages out)."""
    try:
        from mcap.stream_reader import StreamReader
    except ImportError as exc:
        raise MissingDependencyError("mcap", extra="mcap", purpose="reading MCAP") from exc
    return StreamReader(f, emit_chunks=True, record_size_limit=1 << 31)


def truncation_errors() -> tuple[type[BaseException], ...]:
    """What mcap's readers raise on a file that ends early or holds a broken record."""
    from mcap.exceptions import McapError

    return (McapError, EOFError, struct.error)


def _raise_if_codec_missing(exc: BaseException, path: Path) -> None:
    """A chunk compressed with a codec that is not installed is not a truncated file."""
    if type(exc).__name__ != "UnsupportedCompressionError":
        return
    codec = str(exc).rsplit(" ", 1)[-1]  # mcap names the module: zstandard or lz4
    raise MissingDependencyError(
        codec if codec in ("zstandard", "lz4") else "mcap",
        extra="mcap",
        purpose=f"{path}: reading its compressed chunks",
    ) from None


def decode_errors() -> tuple[type[BaseException], ...]:
    """What the protobuf, JSON and CDR (rosbags, mcap-ros2) decoders raise on a message's
    malformed bytes."""
    errors: tuple[type[BaseException], ...] = (
        KeyError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        EOFError,
        struct.error,
    )
    try:
        from google.protobuf.message import DecodeError
        from rosbags.serde import SerdeError
    except ImportError:  # pragma: no cover - protobuf and rosbags come with the mcap extra
        return errors
    return (*errors, DecodeError, SerdeError)


def _check_magic(f: BinaryIO, part: Path) -> None:
    magic = f.read(len(MCAP_MAGIC))
    if magic != MCAP_MAGIC:
        # An empty file, a PNG or a text file would otherwise read as a "truncated"
        # recording with no message, silently contributing nothing.
        raise FormatError(
            f"not an MCAP file: expected the magic {MCAP_MAGIC!r}, found {magic!r}",
            path=part,
        )


def _records(f: BinaryIO, path: Path, state: ReadState | None) -> Iterator[tuple[Any, Any, Any]]:
    """``(schema, channel, message)`` in file order, stopping cleanly at truncation.

    When the file ends inside a chunk, the complete records of that chunk are salvaged.
    """
    schemas: dict[int, Any] = {}
    channels: dict[int, Any] = {}
    last_good = 0
    complete = False

    def take(record: Any) -> Iterator[tuple[Any, Any, Any]]:
        kind = type(record).__name__
        if kind == "Schema":
            schemas[record.id] = record
        elif kind == "Channel":
            channels[record.id] = record
        elif kind == "Message":
            channel = channels.get(record.channel_id)
            if channel is None:
                raise FormatError(f"message on unknown channel id {record.channel_id}", path=path)
            if state is not None:
                state.messages += 1
            yield schemas.get(channel.schema_id), channel, record
        elif kind == "Metadata" and state is not None and record.name == METADATA_NAME:
            state.metadata = dict(record.metadata)

    try:
        for record in _stream_reader(f).records:
            if type(record).__name__ == "Chunk":
                # Whole before any is used: a chunk that breaks midway is salvaged from its
                # start, and its first records must not be taken twice.
                for inner in list(chunk_records(chunk_payload(record, path))):
                    yield from take(inner)
            else:
                yield from take(record)
            if type(record).__name__ == "Footer":
                complete = True
            last_good = f.tell()
    except truncation_errors() as exc:
        _raise_if_codec_missing(exc, path)
        f.seek(last_good)
        salvaged = salvage_chunk(f.read())
        before = state.messages if state is not None else 0
        for record in salvaged:
            yield from take(record)
        if state is not None:
            seen = state.messages
            total = os.fstat(f.fileno()).st_size
            state.truncated = True
            state.detail = (
                f"file ends inside a record at byte {last_good} of {total} "
                f"({type(exc).__name__}); {seen - before} messages salvaged from the "
                f"incomplete final record; {seen} messages read in all; the rest of "
                f"the {total - last_good} trailing bytes is unreadable"
            )
        return
    if not complete and state is not None:
        state.truncated = True
        state.detail = "no footer"


def _messages(
    f: BinaryIO, part: Path, wanted: Wanted, state: ReadState | None, ros_distro: str
) -> Iterator[Message]:
    decoders: dict[int, Any] = {}  # channel ids are per split file
    described: dict[int, Channel] = {}
    for schema, channel, message in _records(f, part, state):
        info = described.get(channel.id)
        if info is None:
            raw_name = getattr(schema, "name", "") or ""
            info = described[channel.id] = Channel(
                topic=channel.topic,
                schema=canonical_schema_name(raw_name),
                encoding=channel.message_encoding,
            )
        if not wanted(info):
            yield Message(info, message.log_time, None)
            continue
        known = schema_info(info.schema)
        if known is None:  # a caller wanting an unknown schema gets its messages counted
            yield Message(info, message.log_time, None)
            continue
        decoder = decoders.get(channel.id)
        if decoder is None:
            decoder = decoders[channel.id] = decoder_for(
                channel.message_encoding, schema, channel.topic, ros_distro=ros_distro
            )
        try:
            records = known.normalize(decoder(message.data))
        except decode_errors() as exc:
            raise FormatError(
                f"topic {channel.topic!r} (schema {getattr(schema, 'name', '')!r}): malformed "
                f"message at log_time {message.log_time}: {type(exc).__name__}: {exc}",
                path=part,
            ) from exc
        yield Message(info, message.log_time, records)


class McapLog:
    """An MCAP file, or the MCAP splits of a ROS 2 bag folder read as one recording."""

    backend = BACKEND_MCAP

    def __init__(
        self,
        path: Path,
        parts: tuple[Path, ...],
        bag_metadata: tuple[Path, bytes] | None = None,
        *,
        ros_distro: str = DEFAULT_ROS_DISTRO,
    ) -> None:
        self.path = path
        self.parts = parts
        self.bag_metadata = bag_metadata
        self.ros_distro = ros_distro

    def digest_members(self) -> list[tuple[str, Path]]:
        members = [] if self.bag_metadata is None else [(BAG_METADATA_FILE, self.bag_metadata[0])]
        return members + [(p.name, p) for p in self.parts]

    def read(
        self, wanted: Wanted, state: ReadState, digest: SourceDigest | None = None
    ) -> Iterator[Message]:
        """Every message of every split in order; each member is hashed into *digest* in
        the same open, and must not change while it is read."""
        if self.bag_metadata is not None and digest is not None:
            meta, raw = self.bag_metadata
            with open_regular(meta, BAG_METADATA_FILE) as f:
                digest.add_file(BAG_METADATA_FILE, f, meta)
                if f.read() != raw:
                    raise UnsafePathError("changed while it was read", path=meta)
        details: list[str] = []
        for part in self.parts:
            with open_regular(part) as f:
                _check_magic(f, part)
                f.seek(0)
                before = source_identity(f)
                hashed = None if digest is None else digest.add_file_beside(part.name, f, part)
                state.detail = ""
                try:
                    yield from _messages(f, part, wanted, state, self.ros_distro)
                except BaseException:
                    if hashed is not None:
                        hashed.cancel()  # the digest's reads end before the file closes
                    raise
                if hashed is not None:
                    hashed.wait()
                if source_identity(f) != before:
                    raise UnsafePathError("recording changed while it was read", path=part)
            state.identities.append((part, before))
            if state.detail:
                details.append(
                    f"{part.name}: {state.detail}" if self.bag_metadata else state.detail
                )
        state.detail = "; ".join(details)


def replay(
    parts: tuple[tuple[Path, SourceIdentity], ...], topics: frozenset[str], ros_distro: str
) -> Iterator[Message]:
    """The second pass: the messages of *topics*, decoded, from files that must not have
    changed since the first pass (their identities)."""
    for path, expected in parts:
        with open_regular(path) as f:
            if source_identity(f) != expected:
                raise UnsafePathError("recording changed since it was ingested", path=path)
            yield from _messages(f, path, lambda c: c.topic in topics, None, ros_distro)
