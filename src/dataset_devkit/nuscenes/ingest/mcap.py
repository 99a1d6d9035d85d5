"""Ingest backend for MCAP recordings (``mcap_hf``, restricted raw, legacy Web Mercator poses).

The file is read record by record with ``mcap``'s stream reader, so a recording whose writer
crashed is read up to its last complete record and the loss is reported, never hidden. Frames
are located in a first pass (header capture times, JPEG dimensions) and their bytes extracted
verbatim in a second pass, only for the frames the scene grid needs.
"""

from __future__ import annotations

import math
import os
import struct
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from dataset_devkit.errors import FormatError, MissingDependencyError, UnsafePathError
from dataset_devkit.nuscenes.geodesy import LocalEnu, to_web_mercator
from dataset_devkit.nuscenes.geometry import Transform, compose, identity
from dataset_devkit.nuscenes.ingest.decoded_schema import SAFE_RECORDING_ID
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
from dataset_devkit.nuscenes.ingest.model import (
    CameraStream,
    GnssContext,
    RecordingSource,
    TimedQuat,
    TimedVec3,
    check_intrinsic,
)
from dataset_devkit.nuscenes.ingest.salvage import salvage_chunk
from dataset_devkit.nuscenes.ingest.source import SourceDigest, open_regular, source_identity
from dataset_devkit.nuscenes.jpeg import jpeg_dimensions
from dataset_devkit.nuscenes.spec import SOURCE_MCAP, RecordingObservations, Rejection

__all__ = ["BACKEND_MCAP", "read_mcap"]

BACKEND_MCAP = "mcap"
#: Metadata record whose keys may name the recording (``recording_id``, ``vehicle``,
#: ``location``).
METADATA_NAME = "recording"
_IMAGE_SCHEMAS = sorted(name for name, role in ROLE_BY_SCHEMA.items() if role == "image")
#: The 8 bytes every MCAP file starts with.
MCAP_MAGIC = b"\x89MCAP0\r\n"


def _stream_reader(f: BinaryIO) -> Any:
    try:
        from mcap.stream_reader import StreamReader
    except ImportError as exc:  # pragma: no cover - the mcap extra is a dependency of ingest
        raise MissingDependencyError("mcap", extra="mcap", purpose="reading MCAP") from exc
    return StreamReader(f, record_size_limit=1 << 31)


def _truncation_errors() -> tuple[type[BaseException], ...]:
    from mcap.exceptions import McapError

    return (McapError, EOFError, struct.error)


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


@dataclass
class _Scan:
    images: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
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


def _iter_records(f: BinaryIO, path: Path, scan: _Scan | None) -> Iterator[tuple[Any, Any, Any]]:
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


def _scan(f: BinaryIO, path: Path, vehicle_frame: str) -> _Scan:
    scan = _Scan()
    decoders: dict[int, Any] = {}
    ignored: dict[tuple[str, str], int] = defaultdict(int)
    for schema, channel, message in _iter_records(f, path, scan):
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


def _take(scan: _Scan, rec: Any, topic: str, schema: str, path: Path, vehicle_frame: str) -> None:
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
        frames = scan.images.setdefault(rec.frame_id, {})
        if rec.timestamp_ns in frames:
            scan.rejected += 1
            scan.filtering.append(
                Rejection(
                    subject=f"camera {rec.frame_id}",
                    reason=f"duplicate capture time {rec.timestamp_ns} ns dropped",
                )
            )
            return
        frames[rec.timestamp_ns] = dims
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


def _extrinsics(
    edges: Mapping[tuple[str, str], TransformEdge], root: str, target: str
) -> Transform | None:
    """Pose of *target* in *root* by walking the transform tree from the vehicle frame."""
    children: dict[str, list[TransformEdge]] = defaultdict(list)
    for (parent, _child), edge in sorted(edges.items()):
        children[parent].append(edge)
    stack: list[tuple[str, Transform]] = [(root, identity())]
    seen = {root}
    while stack:
        frame, pose = stack.pop()
        if frame == target:
            return pose
        for edge in children.get(frame, []):
            if edge.child not in seen:
                seen.add(edge.child)
                stack.append((edge.child, compose(pose, edge.transform)))
    return None


def read_mcap(path: Path | str, *, vehicle_frame: str = "base_link") -> RecordingSource:
    """Read an MCAP recording into a :class:`RecordingSource`.

    Parameters
    ----------
    path
        The ``.mcap`` file (a regular file, not a symlink).
    vehicle_frame
        The vehicle frame of the transform tree: camera extrinsics are taken from it, and the
        transforms whose child it is give the ego orientation.
    """
    path = Path(path)
    with open_regular(path) as f:
        magic = f.read(len(MCAP_MAGIC))
        if magic != MCAP_MAGIC:
            # An empty file, a PNG or a text file would otherwise read as a "truncated"
            # recording with no message, silently contributing nothing.
            raise FormatError(
                f"not an MCAP file: expected the magic {MCAP_MAGIC!r}, found {magic!r}",
                path=path,
            )
        identity_before = source_identity(f)
        digest = SourceDigest(BACKEND_MCAP)
        size = digest.add_file(path.name, f)
        scan = _scan(f, path, vehicle_frame)
        if source_identity(f) != identity_before:
            raise UnsafePathError("recording changed while it was read", path=path)
    if not scan.images:
        raise FormatError(
            f"no JPEG camera image ({', '.join(_IMAGE_SCHEMAS)}) in "
            f"{scan.messages} messages read"
            + (f"; truncated: {scan.detail}" if scan.truncated else ""),
            path=path,
        )
    cameras = []
    for frame_id in sorted(scan.images):
        topic = scan.topics[frame_id]
        calib = scan.calibrations.get(frame_id)
        if calib is None:
            raise FormatError(
                f"camera {frame_id!r} (topic {topic!r}) has no calibration message", path=path
            )
        pose = _extrinsics(scan.edges, vehicle_frame, frame_id)
        if pose is None:
            raise FormatError(
                f"camera {frame_id!r} (topic {topic!r}) is not reachable from {vehicle_frame!r} "
                "in the transform tree",
                path=path,
            )
        kept = []
        for ts, dims in sorted(scan.images[frame_id].items()):
            if dims != (calib.width, calib.height):
                scan.rejected += 1
                scan.filtering.append(
                    Rejection(
                        subject=f"camera {frame_id}",
                        reason=f"frame {ts} ns is {dims[0]}x{dims[1]}, calibration says "
                        f"{calib.width}x{calib.height}: dropped",
                    )
                )
                continue
            kept.append(ts)
        cameras.append(
            CameraStream(
                source_name=frame_id,
                topic=topic,
                frame_id=frame_id,
                width=calib.width,
                height=calib.height,
                intrinsic=calib.intrinsic,
                distortion_model=calib.distortion_model,
                distortion=calib.distortion,
                translation=pose[0],
                rotation=pose[1],
                timestamps_ns=tuple(kept),
            )
        )
    orientations = scan.ego_edges or scan.poses
    if scan.ego_edges and scan.poses:
        scan.filtering.append(
            Rejection(
                subject="PoseInFrame",
                reason=f"{len(scan.poses)} poses ignored: transforms to {vehicle_frame!r} "
                "take precedence",
            )
        )
    rotations = _dedup_q(orientations)
    fixes = sorted(
        {fx.timestamp_ns: fx for fx in reversed(scan.fixes)}.values(),
        key=lambda fx: fx.timestamp_ns,
    )
    translations: list[TimedVec3] = []
    gnss: list[GnssContext] = []
    track: list[TimedVec3] = []
    local = LocalEnu(fixes[0].latitude, fixes[0].longitude, fixes[0].altitude) if fixes else None
    for fx in fixes:
        east, north = to_web_mercator(fx.latitude, fx.longitude)
        translations.append(TimedVec3(fx.timestamp_ns, (east, north, fx.altitude)))
        gnss.append(GnssContext(fx.timestamp_ns, east, north))
        if local is not None:
            track.append(
                TimedVec3(fx.timestamp_ns, local.from_wgs84(fx.latitude, fx.longitude, fx.altitude))
            )
    observations = RecordingObservations(
        messages_read=scan.messages,
        image_frames={fid: len(frames) for fid, frames in sorted(scan.images.items())},
        calibrations=dict(sorted(scan.calibration_counts.items())),
        poses=len(orientations),
        gnss_fixes=scan.gnss_seen,
        truncated=scan.truncated,
        truncation_detail=scan.detail,
        rejected_messages=scan.rejected,
    )
    wanted_topics = {scan.topics[c.frame_id] for c in cameras}
    recording_id = scan.metadata.get("recording_id", path.stem)
    if "recording_id" in scan.metadata and not SAFE_RECORDING_ID.fullmatch(recording_id):
        raise FormatError(
            f"metadata {METADATA_NAME!r}: recording_id {recording_id!r} must match "
            f"{SAFE_RECORDING_ID.pattern} (as in a decoded recording.json)",
            path=path,
        )
    return RecordingSource(
        source_type=SOURCE_MCAP,
        backend=BACKEND_MCAP,
        recording_id=recording_id,
        source_name=path.name,
        source_size=size,
        source_digest=digest.hexdigest(),
        content_sha256=digest.content_hexdigest(),
        vehicle=scan.metadata.get("vehicle", "unknown"),
        location=scan.metadata.get("location", "unknown"),
        truncated=scan.truncated,
        cameras=tuple(cameras),
        translations=tuple(translations),
        rotations=rotations,
        gnss=tuple(gnss),
        track=tuple(track),
        observations=observations,
        filtering=tuple(scan.filtering),
        extract_frames=lambda wanted: _extract(path, identity_before, wanted_topics, wanted),
        longitude_deg=fixes[0].longitude if fixes else 0.0,
    )


def _dedup_q(items: list[Orientation]) -> tuple[TimedQuat, ...]:
    by_time: dict[int, Orientation] = {}
    for item in items:
        by_time.setdefault(item.timestamp_ns, item)
    return tuple(TimedQuat(t, by_time[t].rotation) for t in sorted(by_time))


def _extract(
    path: Path,
    expected: tuple[int, int, int, int],
    topics: set[str],
    wanted: Mapping[str, frozenset[int]],
) -> Iterator[tuple[str, int, bytes]]:
    """Second pass: the verbatim JPEG bytes of the wanted frames, in file order."""
    remaining = {name: set(times) for name, times in wanted.items() if times}
    decoders: dict[int, Any] = {}
    with open_regular(path) as f:
        if source_identity(f) != expected:
            raise UnsafePathError("recording changed since it was ingested", path=path)
        for schema, channel, message in _iter_records(f, path, None):
            if channel.topic not in topics:
                continue
            decoder = decoders.get(channel.id)
            if decoder is None:
                decoder = decoders[channel.id] = decoder_for(
                    channel.message_encoding, schema, channel.topic
                )
            for rec in normalize(schema.name, decoder(message.data)):
                if isinstance(rec, Image) and rec.timestamp_ns in remaining.get(rec.frame_id, ()):
                    remaining[rec.frame_id].discard(rec.timestamp_ns)
                    yield rec.frame_id, rec.timestamp_ns, rec.data
    missing = sorted((n, t) for n, ts in remaining.items() for t in ts)
    if missing:
        raise FormatError(
            f"{len(missing)} frames seen at ingest are gone, first {missing[0]}", path=path
        )
