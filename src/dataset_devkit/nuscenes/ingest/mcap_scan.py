"""The first pass over an MCAP recording: records in file order, truncation, roles.

Split from :mod:`dataset_devkit.nuscenes.ingest.mcap`. Records are read up to a crash (the
incomplete final chunk salvaged) and each decoded message is sorted into a :class:`Scan`;
every malformed message is a :class:`FormatError` naming the file, topic, schema and
``log_time``.
"""

from __future__ import annotations

import math
import os
import struct
from array import array
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from dataset_devkit.errors import FormatError, MissingDependencyError
from dataset_devkit.nuscenes.common.jpeg import jpeg_dimensions
from dataset_devkit.nuscenes.ingest.messages import (
    ROLE_BY_SCHEMA,
    Calibration,
    Fix,
    Image,
    Orientation,
    TransformEdge,
    decoder_for,
    normalize,
)
from dataset_devkit.nuscenes.ingest.model import check_intrinsic
from dataset_devkit.nuscenes.ingest.salvage import salvage_chunk
from dataset_devkit.nuscenes.spec import Rejection

__all__ = [
    "IMAGE_SCHEMAS",
    "METADATA_NAME",
    "CameraFrames",
    "Scan",
    "iter_records",
    "scan_records",
    "source_size",
]

#: Metadata record whose keys may name the recording (``recording_id``, ``vehicle``,
#: ``location``).
METADATA_NAME = "recording"
#: The schemas of camera images (for messages naming what a recording lacks).
IMAGE_SCHEMAS = sorted(name for name, role in ROLE_BY_SCHEMA.items() if role == "image")


def _stream_reader(f: BinaryIO) -> Any:
    try:
        from mcap.stream_reader import StreamReader
    except ImportError as exc:  # pragma: no cover - the mcap extra is a dependency of ingest
        raise MissingDependencyError("mcap", extra="mcap", purpose="reading MCAP") from exc
    return StreamReader(f, record_size_limit=1 << 31)


def _truncation_errors() -> tuple[type[BaseException], ...]:
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


def _decode_errors() -> tuple[type[BaseException], ...]:
    """What the protobuf, JSON and CDR decoders raise on a message's malformed bytes."""
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
    except ImportError:  # pragma: no cover - protobuf comes with the mcap extra
        return errors
    return (*errors, DecodeError)


class CameraFrames:
    """Capture times and image sizes of one camera's frames, in arrival order, compactly.

    An hour-long drive has hundreds of thousands of frames: a dict of Python ints and tuples
    costs about 250 bytes each, these arrays 12 (8 for the time, 4 for an index into the few
    distinct sizes). A duplicate capture time is found by comparing with the last time while
    frames arrive in order; a set is built only once a frame arrives out of order.
    """

    def __init__(self) -> None:
        self.times = array("q")
        self.size_ids = array("i")
        self.sizes: list[tuple[int, int]] = []
        self._seen: set[int] | None = None

    def __len__(self) -> int:
        return len(self.times)

    def add(self, timestamp_ns: int, dims: tuple[int, int]) -> bool:
        """Record one frame; False (nothing recorded) when its capture time is a duplicate."""
        if self._seen is None and self.times and timestamp_ns <= self.times[-1]:
            self._seen = set(self.times)
        if self._seen is not None:
            if timestamp_ns in self._seen:
                return False
            self._seen.add(timestamp_ns)
        try:
            size_id = self.sizes.index(dims)
        except ValueError:
            size_id = len(self.sizes)
            self.sizes.append(dims)
        self.times.append(timestamp_ns)
        self.size_ids.append(size_id)
        return True

    def by_time(self) -> Iterator[tuple[int, tuple[int, int]]]:
        """``(capture time, (width, height))`` in time order."""
        # Without a set, every frame arrived later than the one before: already in order.
        in_order = self._seen is None
        order = (
            range(len(self.times))
            if in_order
            else sorted(range(len(self.times)), key=self.times.__getitem__)
        )
        for i in order:
            yield self.times[i], self.sizes[self.size_ids[i]]


@dataclass
class Scan:
    """What the first pass over a recording found."""

    images: dict[str, CameraFrames] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)
    calibrations: dict[str, Calibration] = field(default_factory=dict)
    calibration_counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    edges: dict[tuple[str, str], TransformEdge] = field(default_factory=dict)
    ego_edges: list[Orientation] = field(default_factory=list)
    poses: list[Orientation] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    filtering: list[Rejection] = field(default_factory=list)
    messages: int = 0
    gnss_seen: int = 0
    rejected: int = 0
    truncated: bool = False
    detail: str = ""


def _image_format_ok(fmt: str) -> bool:
    return fmt.lower() in ("jpeg", "jpg") or "jpeg" in fmt.lower().split(";")[-1]


def iter_records(f: BinaryIO, path: Path, scan: Scan | None) -> Iterator[tuple[Any, Any, Any]]:
    """Yield ``(schema, channel, message)`` in file order, stopping cleanly at truncation.

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
            yield schemas.get(channel.schema_id), channel, record
        elif kind == "Metadata" and scan is not None and record.name == METADATA_NAME:
            scan.metadata = dict(record.metadata)

    try:
        for record in _stream_reader(f).records:
            yield from take(record)
            if type(record).__name__ == "Footer":
                complete = True
            last_good = f.tell()
    except _truncation_errors() as exc:
        _raise_if_codec_missing(exc, path)
        f.seek(last_good)
        salvaged = salvage_chunk(f.read())
        before = scan.messages if scan is not None else 0
        for record in salvaged:
            yield from take(record)
        if scan is not None:
            total = source_size(f)
            scan.truncated = True
            scan.detail = (
                f"file ends inside a record at byte {last_good} of {total} "
                f"({type(exc).__name__}); {scan.messages - before} messages salvaged from the "
                f"incomplete final record; {scan.messages} messages read in all; the rest of "
                f"the {total - last_good} trailing bytes is unreadable"
            )
        return
    if not complete and scan is not None:
        scan.truncated = True
        scan.detail = "no footer"


def source_size(f: BinaryIO) -> int:
    """Size of an open file, from its descriptor."""
    return os.fstat(f.fileno()).st_size


def scan_records(f: BinaryIO, path: Path, vehicle_frame: str, scan: Scan | None = None) -> Scan:
    """First pass: every message decoded by role, images located, rejections recorded.

    A *scan* given is continued: the splits of a ROS 2 bag are scanned into one.
    """
    scan = Scan() if scan is None else scan
    decoders: dict[int, Any] = {}
    ignored: dict[tuple[str, str], int] = defaultdict(int)
    for schema, channel, message in iter_records(f, path, scan):
        scan.messages += 1
        name = getattr(schema, "name", "")
        if name not in ROLE_BY_SCHEMA:
            ignored[(channel.topic, name)] += 1
            continue
        decoder = decoders.get(channel.id)
        if decoder is None:
            decoder = decoders[channel.id] = decoder_for(
                channel.message_encoding, schema, channel.topic
            )
        try:
            records = normalize(name, decoder(message.data))
        except _decode_errors() as exc:
            raise FormatError(
                f"topic {channel.topic!r} (schema {name!r}): malformed message at log_time "
                f"{message.log_time}: {type(exc).__name__}: {exc}",
                path=path,
            ) from exc
        for rec in records:
            try:
                _take(scan, rec, channel.topic, name, path, vehicle_frame)
            except FormatError as exc:
                if exc.path is not None:
                    raise
                # Name the recording and the message, not only the topic.
                raise FormatError(
                    f"{exc.detail} (message at log_time {message.log_time})", path=path
                ) from None
    for (topic, name), count in sorted(ignored.items()):
        scan.filtering.append(
            Rejection(
                subject=f"topic {topic}",
                reason=f"schema {name!r} not used: {count} messages ignored",
            )
        )
    return scan


def _take(scan: Scan, rec: Any, topic: str, schema: str, path: Path, vehicle_frame: str) -> None:
    if isinstance(rec, Image):
        if not _image_format_ok(rec.format):
            raise FormatError(
                f"topic {topic!r} (schema {schema!r}): image format {rec.format!r} is not JPEG",
                path=path,
            )
        dims = jpeg_dimensions(rec.data, f"topic {topic!r} (schema {schema!r}) image")
        known = scan.topics.setdefault(rec.frame_id, topic)
        if known != topic:
            raise FormatError(
                f"camera frame_id {rec.frame_id!r} is published on two topics: "
                f"{known!r}, {topic!r}",
                path=path,
            )
        frames = scan.images.get(rec.frame_id)
        if frames is None:
            frames = scan.images[rec.frame_id] = CameraFrames()
        if not frames.add(rec.timestamp_ns, dims):
            scan.rejected += 1
            scan.filtering.append(
                Rejection(
                    subject=f"camera {rec.frame_id}",
                    reason=f"duplicate capture time {rec.timestamp_ns} ns dropped",
                )
            )
            return
    elif isinstance(rec, Calibration):
        if not all(math.isfinite(v) for v in rec.distortion):
            raise FormatError(
                f"topic {topic!r}: camera {rec.frame_id!r}: distortion D must be finite, "
                f"found {list(rec.distortion)}"
            )
        check_intrinsic(
            rec.intrinsic, rec.width, rec.height, f"topic {topic!r}: camera {rec.frame_id!r}"
        )
        scan.calibration_counts[rec.frame_id] += 1
        first = scan.calibrations.setdefault(rec.frame_id, rec)
        if (first.width, first.height, first.intrinsic) != (rec.width, rec.height, rec.intrinsic):
            raise FormatError(
                f"topic {topic!r}: calibration of camera {rec.frame_id!r} changes mid-recording",
                path=path,
            )
    elif isinstance(rec, TransformEdge):
        if not all(math.isfinite(v) for v in rec.transform[0]):
            raise FormatError(
                f"topic {topic!r}: transform {rec.parent!r} -> {rec.child!r}: translation must "
                f"be finite, found {list(rec.transform[0])}"
            )
        if rec.child == vehicle_frame:
            scan.ego_edges.append(Orientation(rec.timestamp_ns, rec.transform[1]))
        else:
            scan.edges.setdefault((rec.parent, rec.child), rec)
    elif isinstance(rec, Orientation):
        scan.poses.append(rec)
    elif isinstance(rec, Fix):
        scan.gnss_seen += 1
        usable = rec.has_fix and all(
            math.isfinite(v) for v in (rec.latitude, rec.longitude, rec.altitude)
        )
        if usable and -90.0 <= rec.latitude <= 90.0 and -180.0 <= rec.longitude <= 180.0:
            scan.fixes.append(rec)
        else:
            scan.rejected += 1
            scan.filtering.append(
                Rejection(
                    subject=f"topic {topic}",
                    reason=f"GNSS message at {rec.timestamp_ns} ns has no usable fix: dropped",
                )
            )
