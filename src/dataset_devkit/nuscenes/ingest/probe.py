"""What a recording holds, cheaply: its topics, schemas, message counts, camera frame ids.

Run before the ingest so that every name ``build.toml`` uses (camera topics, calibration and
pose topics, channels) is checked against the recordings first, and a typo costs seconds,
not a pass over hours of data. An MCAP file with a summary section is answered from the
summary and the first message of each camera topic; a crashed one (no summary) and the
rosbags containers from their own indexes or one pass without decoding.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_devkit.nuscenes.ingest.anybag import AnyBagLog, message_errors, rosbags_reader
from dataset_devkit.nuscenes.ingest.backend import Channel, ReadState
from dataset_devkit.nuscenes.ingest.mcap import McapLog, decode_errors, truncation_errors
from dataset_devkit.nuscenes.ingest.messages import decoder_for
from dataset_devkit.nuscenes.ingest.open import MessageLogKind, message_log
from dataset_devkit.nuscenes.ingest.records import CompressedFrame, RawFrame, VideoPacket
from dataset_devkit.nuscenes.ingest.schemas import CAMERA_KINDS, canonical_schema_name, schema_info
from dataset_devkit.nuscenes.ingest.source import open_regular
from dataset_devkit.nuscenes.options import IngestConfig

__all__ = ["RecordingTopics", "TopicInfo", "probe_recording"]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """One topic of a recording."""

    topic: str
    #: Canonical schema name.
    schema: str
    #: The schema's kind (:mod:`.schemas`), ``""`` if unknown.
    kind: str
    messages: int
    #: Of a camera topic: the ``frame_id`` of its first message (``""`` otherwise).
    frame_id: str = ""


@dataclass(frozen=True, slots=True)
class RecordingTopics:
    """The topics of one recording, and its backend."""

    path: Path
    backend: str
    topics: tuple[TopicInfo, ...]


def _frame_id(records: list[Any] | None) -> str:
    for rec in records or ():
        if isinstance(rec, CompressedFrame | RawFrame | VideoPacket):
            return rec.frame_id
    return ""


def _from_summary(log: McapLog) -> list[TopicInfo] | None:
    """Topics of every split from their summaries; None when one has none (a crash)."""
    from mcap.reader import SeekingReader

    unreadable: tuple[type[BaseException], ...] = (*truncation_errors(), ValueError, OSError)
    undecodable: tuple[type[BaseException], ...] = (*truncation_errors(), *decode_errors())
    counts: dict[tuple[str, str], int] = {}
    frames: dict[str, str] = {}
    kinds: dict[tuple[str, str], str] = {}
    for part in log.parts:
        with open_regular(part) as f:
            try:
                reader = SeekingReader(f, record_size_limit=1 << 31)
                summary = reader.get_summary()
            except unreadable:
                return None
            if summary is None or summary.statistics is None:
                return None
            stats = summary.statistics.channel_message_counts
            for cid, channel in summary.channels.items():
                schema = summary.schemas.get(channel.schema_id)
                name = canonical_schema_name(getattr(schema, "name", "") or "")
                info = schema_info(name)
                key = (channel.topic, name)
                counts[key] = counts.get(key, 0) + stats.get(cid, 0)
                kinds[key] = info.kind if info is not None else ""
                if info is None or info.kind not in CAMERA_KINDS or channel.topic in frames:
                    continue
                try:
                    first = next(iter(reader.iter_messages(topics=[channel.topic])), None)
                    if first is not None:
                        decode = decoder_for(
                            channel.message_encoding,
                            first[0],
                            channel.topic,
                            ros_distro=log.ros_distro,
                        )
                        frames[channel.topic] = _frame_id(info.normalize(decode(first[2].data)))
                except undecodable:
                    return None
    return [
        TopicInfo(topic, schema, kinds[(topic, schema)], n, frames.get(topic, ""))
        for (topic, schema), n in sorted(counts.items())
    ]


def _from_rosbags(log: AnyBagLog) -> list[TopicInfo]:
    """Topics from the bag's connections, and the first message of each camera topic."""
    errors = message_errors()
    counts: dict[tuple[str, str], int] = {}
    frames: dict[str, str] = {}
    with rosbags_reader(log.path, log.ros_distro, log.path) as reader:
        for connection in reader.connections:
            name = canonical_schema_name(connection.msgtype)
            key = (connection.topic, name)
            counts[key] = counts.get(key, 0) + int(connection.msgcount)
            info = schema_info(name)
            if info is None or info.kind not in CAMERA_KINDS or connection.topic in frames:
                continue
            for _, _, raw in reader.messages(connections=[connection]):
                try:
                    decoded = reader.deserialize(raw, connection.msgtype)
                    frames[connection.topic] = _frame_id(info.normalize(decoded))
                except errors:
                    frames[connection.topic] = ""
                break
    out = []
    for (topic, schema), n in sorted(counts.items()):
        info = schema_info(schema)
        out.append(TopicInfo(topic, schema, info.kind if info else "", n, frames.get(topic, "")))
    return out


def _by_reading(log: MessageLogKind) -> list[TopicInfo]:
    """One pass that decodes only the first message of each camera topic."""
    counts: dict[tuple[str, str], int] = {}
    frames: dict[str, str] = {}

    def wanted(channel: Channel) -> bool:
        info = schema_info(channel.schema)
        return info is not None and info.kind in CAMERA_KINDS and channel.topic not in frames

    messages: Iterator[Any] = log.read(wanted, ReadState())
    for message in messages:
        key = (message.channel.topic, message.channel.schema)
        counts[key] = counts.get(key, 0) + 1
        if message.records is not None and message.channel.topic not in frames:
            frames[message.channel.topic] = _frame_id(message.records)
    out = []
    for (topic, schema), n in sorted(counts.items()):
        info = schema_info(schema)
        out.append(TopicInfo(topic, schema, info.kind if info else "", n, frames.get(topic, "")))
    return out


def probe_recording(path: Path, options: IngestConfig | None = None) -> RecordingTopics | None:
    """The topics of the message log at *path*; None for a decoded recording folder."""
    log = message_log(path, options)
    if log is None:
        return None
    if isinstance(log, AnyBagLog):
        for name, member in log.digest_members():  # links and special files refused first
            with open_regular(member, name):
                pass
        topics = _from_rosbags(log)
    else:
        topics = _from_summary(log) or _by_reading(log)
    return RecordingTopics(path, log.backend, tuple(topics))
