"""Ingest backend for MCAP recordings (``mcap_hf``, restricted raw, legacy Web Mercator poses).

The file is read record by record with ``mcap``'s stream reader, so a recording whose writer
crashed is read up to its last complete record and the loss is reported, never hidden. Frames
are located in a first pass (header capture times, JPEG dimensions) and their bytes extracted
verbatim in a second pass, only for the frames the scene grid needs.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from dataset_devkit.errors import FormatError, UnsafePathError
from dataset_devkit.nuscenes.common.geodesy import LocalEnu, to_web_mercator
from dataset_devkit.nuscenes.common.geometry import Transform, compose, identity
from dataset_devkit.nuscenes.ingest.decoded_schema import SAFE_RECORDING_ID
from dataset_devkit.nuscenes.ingest.mcap_scan import (
    IMAGE_SCHEMAS,
    METADATA_NAME,
    Scan,
    iter_records,
    scan_records,
)
from dataset_devkit.nuscenes.ingest.messages import (
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
)
from dataset_devkit.nuscenes.ingest.rosbag import BAG_METADATA_FILE, bag_files
from dataset_devkit.nuscenes.ingest.source import (
    SourceDigest,
    SourceIdentity,
    open_regular,
    source_identity,
)
from dataset_devkit.nuscenes.spec import SOURCE_MCAP, RecordingObservations, Rejection

__all__ = ["BACKEND_MCAP", "read_mcap", "read_rosbag"]

BACKEND_MCAP = "mcap"
#: The 8 bytes every MCAP file starts with.
MCAP_MAGIC = b"\x89MCAP0\r\n"


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
    return _read_parts(path, (path,), None, vehicle_frame)


def read_rosbag(folder: Path | str, *, vehicle_frame: str = "base_link") -> RecordingSource:
    """Read a ROS 2 bag folder (``metadata.yaml`` + split ``.mcap`` files) as one recording.

    The splits are read in the order ``metadata.yaml`` lists them, as one stream of records;
    the recording id defaults to the folder name.
    """
    folder = Path(folder)
    meta, raw, parts = bag_files(folder)
    return _read_parts(folder, parts, (meta, raw), vehicle_frame)


def _check_magic(f: BinaryIO, part: Path) -> None:
    magic = f.read(len(MCAP_MAGIC))
    if magic != MCAP_MAGIC:
        # An empty file, a PNG or a text file would otherwise read as a "truncated"
        # recording with no message, silently contributing nothing.
        raise FormatError(
            f"not an MCAP file: expected the magic {MCAP_MAGIC!r}, found {magic!r}",
            path=part,
        )


def _read_parts(
    path: Path,
    parts: tuple[Path, ...],
    bag_metadata: tuple[Path, bytes] | None,
    vehicle_frame: str,
) -> RecordingSource:
    """Scan *parts* in order as one recording named by *path* (a file or a bag folder)."""
    digest = SourceDigest(BACKEND_MCAP)
    size = 0
    if bag_metadata is not None:
        with open_regular(bag_metadata[0], BAG_METADATA_FILE) as f:
            size += digest.add_file(BAG_METADATA_FILE, f)
            if f.read() != bag_metadata[1]:
                raise UnsafePathError("changed while it was read", path=bag_metadata[0])
    scan = Scan()
    identities: list[tuple[Path, SourceIdentity]] = []
    details: list[str] = []
    for part in parts:
        with open_regular(part) as f:
            _check_magic(f, part)
            identity_before = source_identity(f)
            size += digest.add_file(part.name, f)
            scan.detail = ""
            scan_records(f, part, vehicle_frame, scan)
            if source_identity(f) != identity_before:
                raise UnsafePathError("recording changed while it was read", path=part)
        identities.append((part, identity_before))
        if scan.detail:
            details.append(f"{part.name}: {scan.detail}" if bag_metadata else scan.detail)
    scan.detail = "; ".join(details)
    if not scan.images:
        raise FormatError(
            f"no JPEG camera image ({', '.join(IMAGE_SCHEMAS)}) in "
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
    recording_id = scan.metadata.get("recording_id", path.name if bag_metadata else path.stem)
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
        extract_frames=functools.partial(_extract, tuple(identities), wanted_topics),
        longitude_deg=fixes[0].longitude if fixes else 0.0,
        recording_id_from_name="recording_id" not in scan.metadata,
    )


def _dedup_q(items: list[Orientation]) -> tuple[TimedQuat, ...]:
    by_time: dict[int, Orientation] = {}
    for item in items:
        by_time.setdefault(item.timestamp_ns, item)
    return tuple(TimedQuat(t, by_time[t].rotation) for t in sorted(by_time))


def _extract(
    parts: tuple[tuple[Path, SourceIdentity], ...],
    topics: set[str],
    wanted: Mapping[str, frozenset[int]],
) -> Iterator[tuple[str, int, bytes]]:
    """Second pass: the verbatim JPEG bytes of the wanted frames, in file order."""
    remaining = {name: set(times) for name, times in wanted.items() if times}
    for path, expected in parts:
        decoders: dict[int, Any] = {}  # channel ids are per split file
        with open_regular(path) as f:
            if source_identity(f) != expected:
                raise UnsafePathError("recording changed since it was ingested", path=path)
            for schema, channel, message in iter_records(f, path, None):
                if channel.topic not in topics:
                    continue
                decoder = decoders.get(channel.id)
                if decoder is None:
                    decoder = decoders[channel.id] = decoder_for(
                        channel.message_encoding, schema, channel.topic
                    )
                for rec in normalize(schema.name, decoder(message.data)):
                    if isinstance(rec, Image) and rec.timestamp_ns in remaining.get(
                        rec.frame_id, ()
                    ):
                        remaining[rec.frame_id].discard(rec.timestamp_ns)
                        yield rec.frame_id, rec.timestamp_ns, rec.data
    path = parts[-1][0].parent if len(parts) > 1 else parts[0][0]
    missing = sorted((n, t) for n, ts in remaining.items() for t in ts)
    if missing:
        raise FormatError(
            f"{len(missing)} frames seen at ingest are gone, first {missing[0]}", path=path
        )
