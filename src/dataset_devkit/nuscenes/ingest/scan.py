"""The first pass over a recording: every message sorted by its topic's role into a Scan.

Cameras are located (capture times, sizes, damaged video frames) without keeping pixels;
calibrations, the transform tree, pose-topic samples and GNSS fixes are collected; every
topic left out is counted with its reason. Nothing here knows the container: the messages
come from any backend (:mod:`.backend`), the roles from :mod:`.roles`.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.tf_tree import TransformTree
from dataset_devkit.nuscenes.ingest.backend import Message
from dataset_devkit.nuscenes.ingest.cameras import (
    CameraFrame,
    frame_encoding,
    probe_still,
)
from dataset_devkit.nuscenes.ingest.model import check_intrinsic
from dataset_devkit.nuscenes.ingest.records import (
    Calibration,
    CompressedFrame,
    Fix,
    Orientation,
    PoseSample,
    RawFrame,
    TransformEdge,
    VideoPacket,
)
from dataset_devkit.nuscenes.ingest.roles import (
    ROLE_CALIBRATION,
    ROLE_CAMERA,
    ROLE_GNSS,
    ROLE_IGNORED,
    ROLE_ORIENTATION,
    ROLE_POSE,
    ROLE_STATIC_TF,
    ROLE_TF,
    RoleTable,
    TopicRole,
)
from dataset_devkit.nuscenes.ingest.video_packets import VideoPacketDecoder
from dataset_devkit.nuscenes.spec import Rejection

__all__ = ["CameraFrames", "CameraTrack", "PoseTrack", "Scan", "TopicStats", "scan_messages"]


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
class CameraTrack:
    """One camera topic of the first pass."""

    name: str
    topic: str
    kind: str
    frame_id: str
    encoding: str
    frames: CameraFrames = field(default_factory=CameraFrames)
    #: Frames that will not be exported: capture time -> why (damaged video, ...).
    invalid: dict[int, str] = field(default_factory=dict)
    #: The ``[[ingest.cameras]]`` entry, for a mapped camera.
    role: TopicRole | None = None
    video: VideoPacketDecoder | None = None


@dataclass
class PoseTrack:
    """The messages of the pose-source topic: times and poses, compactly."""

    topic: str
    frame_id: str
    child_frame: str
    times: array[int] = field(default_factory=lambda: array("q"))
    #: 7 doubles per sample: x, y, z, qw, qx, qy, qz.
    values: array[float] = field(default_factory=lambda: array("d"))


@dataclass
class TopicStats:
    """Counts per ``(topic, schema)``, for reports and rates."""

    messages: int = 0
    first_log_ns: int = 0
    last_log_ns: int = 0


@dataclass
class Scan:
    """What the first pass over a recording found."""

    roles: RoleTable
    tree: TransformTree
    cameras: dict[str, CameraTrack] = field(default_factory=dict)
    calibrations: dict[str, Calibration] = field(default_factory=dict)
    calibrations_by_topic: dict[str, Calibration] = field(default_factory=dict)
    calibration_counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    poses: PoseTrack | None = None
    #: ``foxglove.PoseInFrame`` orientations (the heading of MCAP recordings without a tree).
    orientations: list[Orientation] = field(default_factory=list)
    #: Transform messages into the vehicle frame (what "poses" counted for GNSS sources).
    vehicle_edges: int = 0
    fixes: list[Fix] = field(default_factory=list)
    stats: dict[tuple[str, str], TopicStats] = field(default_factory=dict)
    filtering: list[Rejection] = field(default_factory=list)
    messages: int = 0
    gnss_seen: int = 0
    rejected: int = 0

    def reject(self, subject: str, reason: str) -> None:
        self.rejected += 1
        self.filtering.append(Rejection(subject=subject, reason=reason))


def scan_messages(messages: Iterable[Message], scan: Scan, path: Path, vehicle_frame: str) -> Scan:
    """Sort every message into *scan*; a malformed one is a FormatError naming the message."""
    for message in messages:
        scan.messages += 1
        channel = message.channel
        stats = scan.stats.get((channel.topic, channel.schema))
        if stats is None:
            stats = scan.stats[(channel.topic, channel.schema)] = TopicStats(
                first_log_ns=message.log_time_ns
            )
        stats.messages += 1
        stats.last_log_ns = message.log_time_ns
        if message.records is None:
            continue
        role = scan.roles.role(channel)
        for rec in message.records:
            try:
                _take(scan, rec, role, channel.topic, channel.schema, vehicle_frame)
            except FormatError as exc:
                if exc.path is not None:
                    raise
                # Name the recording and the message, not only the topic.
                raise FormatError(
                    f"{exc.detail} (message at log_time {message.log_time_ns})", path=path
                ) from None
    for track in scan.cameras.values():
        if track.video is not None:
            _video_frames(scan, track, track.video.flush())
    for (topic, schema), stats in sorted(scan.stats.items()):
        role = scan.roles.role_of(topic, schema)
        if role.role == ROLE_IGNORED:
            scan.filtering.append(
                Rejection(
                    subject=f"topic {topic}",
                    reason=f"schema {schema!r} not used: {stats.messages} messages ignored"
                    if role.reason.startswith(("schema ", "not the pose source"))
                    else f"{role.reason}: {stats.messages} messages ignored",
                )
            )
    return scan


def _take(
    scan: Scan, rec: Any, role: TopicRole, topic: str, schema: str, vehicle_frame: str
) -> None:
    if role.role == ROLE_CAMERA and isinstance(rec, CompressedFrame | RawFrame | VideoPacket):
        _camera_frame(scan, rec, role, topic, schema)
    elif role.role == ROLE_CALIBRATION and isinstance(rec, Calibration):
        _calibration(scan, rec, role, topic)
    elif role.role in (ROLE_TF, ROLE_STATIC_TF) and isinstance(rec, TransformEdge):
        if not all(math.isfinite(v) for v in rec.transform[0]):
            raise FormatError(
                f"topic {topic!r}: transform {rec.parent!r} -> {rec.child!r}: translation must "
                f"be finite, found {list(rec.transform[0])}"
            )
        if rec.child.lstrip("/") == vehicle_frame:
            scan.vehicle_edges += 1
        refused = scan.tree.add(
            rec.parent,
            rec.child,
            rec.timestamp_ns,
            rec.transform,
            static=role.role == ROLE_STATIC_TF,
        )
        if refused is not None:
            scan.reject(f"topic {topic}", f"transform at {rec.timestamp_ns} ns refused: {refused}")
    elif role.role == ROLE_ORIENTATION and isinstance(rec, PoseSample):
        scan.orientations.append(Orientation(rec.timestamp_ns, rec.transform[1]))
    elif role.role == ROLE_POSE and isinstance(rec, PoseSample):
        _pose_sample(scan, rec, topic)
    elif role.role == ROLE_GNSS and isinstance(rec, Fix):
        scan.gnss_seen += 1
        usable = rec.has_fix and all(
            math.isfinite(v) for v in (rec.latitude, rec.longitude, rec.altitude)
        )
        if usable and -90.0 <= rec.latitude <= 90.0 and -180.0 <= rec.longitude <= 180.0:
            scan.fixes.append(rec)
        else:
            scan.reject(
                f"topic {topic}",
                f"GNSS message at {rec.timestamp_ns} ns has no usable fix: dropped",
            )


def _camera_key(role: TopicRole, topic: str, frame_id: str) -> tuple[str, str]:
    """``(camera name, tree frame)``: by frame id by default, by topic when mapped."""
    camera = role.camera
    if camera is None:
        return frame_id, frame_id
    override = camera.frame_id if isinstance(camera.frame_id, str) else ""
    return topic, override or frame_id


def _camera_frame(scan: Scan, rec: CameraFrame, role: TopicRole, topic: str, schema: str) -> None:
    what = f"topic {topic!r} (schema {schema!r})"
    name, frame_id = _camera_key(role, topic, rec.frame_id)
    track = scan.cameras.get(name)
    if track is None:
        track = scan.cameras[name] = CameraTrack(
            name=name,
            topic=topic,
            kind=role.kind,
            frame_id=frame_id,
            encoding=frame_encoding(rec, what),
            role=role,
        )
        if isinstance(rec, VideoPacket):
            track.video = VideoPacketDecoder(track.encoding, what)
    elif track.topic != topic:
        raise FormatError(
            f"camera frame_id {name!r} is published on two topics: {track.topic!r}, {topic!r}; "
            "choose the camera topics to export in [[ingest.cameras]] (each with its channel)"
        )
    if track.frame_id != frame_id:
        raise FormatError(
            f"{what}: frame_id changes from {track.frame_id!r} to {frame_id!r} mid-recording; "
            "set frame_id in its [[ingest.cameras]] entry"
        )
    if isinstance(rec, VideoPacket):
        if track.video is None:  # pragma: no cover - a topic has one schema
            raise FormatError(f"{what}: video packets on a still-image camera topic")
        _video_frames(scan, track, track.video.feed(rec.timestamp_ns, rec.data, keep=False))
        return
    encoding = frame_encoding(rec, what)
    if encoding != track.encoding:
        raise FormatError(
            f"{what}: frame at {rec.timestamp_ns} ns is {encoding}, earlier frames are "
            f"{track.encoding}; a camera keeps one encoding"
        )
    dims = probe_still(rec, encoding, what)
    if not track.frames.add(rec.timestamp_ns, dims):
        scan.reject(f"camera {name}", f"duplicate capture time {rec.timestamp_ns} ns dropped")


def _video_frames(scan: Scan, track: CameraTrack, decoded: Iterable[Any]) -> None:
    for frame in decoded:
        if frame.error:
            track.invalid[frame.timestamp_ns] = frame.error
            continue
        if not track.frames.add(frame.timestamp_ns, (frame.width, frame.height)):
            scan.reject(
                f"camera {track.name}", f"duplicate capture time {frame.timestamp_ns} ns dropped"
            )


def _calibration(scan: Scan, rec: Calibration, role: TopicRole, topic: str) -> None:
    if not all(math.isfinite(v) for v in rec.distortion):
        raise FormatError(
            f"topic {topic!r}: camera {rec.frame_id!r}: distortion D must be finite, "
            f"found {list(rec.distortion)}"
        )
    check_intrinsic(
        rec.intrinsic, rec.width, rec.height, f"topic {topic!r}: camera {rec.frame_id!r}"
    )
    key = rec.frame_id
    scan.calibration_counts[key] += 1
    for store, k in ((scan.calibrations, key), (scan.calibrations_by_topic, topic)):
        first = store.setdefault(k, rec)
        if (first.width, first.height, first.intrinsic) != (rec.width, rec.height, rec.intrinsic):
            raise FormatError(
                f"topic {topic!r}: calibration of camera {rec.frame_id!r} changes mid-recording"
            )


def _pose_sample(scan: Scan, rec: PoseSample, topic: str) -> None:
    track = scan.poses
    if track is None:
        track = scan.poses = PoseTrack(topic, rec.frame_id.lstrip("/"), rec.child_frame.lstrip("/"))
    if (rec.frame_id.lstrip("/"), rec.child_frame.lstrip("/")) != (
        track.frame_id,
        track.child_frame,
    ):
        raise FormatError(
            f"topic {topic!r}: pose frames change from {track.frame_id!r}->"
            f"{track.child_frame!r} to {rec.frame_id!r}->{rec.child_frame!r} at "
            f"{rec.timestamp_ns} ns; a pose topic keeps its frames"
        )
    (x, y, z), (qw, qx, qy, qz) = rec.transform
    if not all(math.isfinite(v) for v in (x, y, z)):
        raise FormatError(f"topic {topic!r}: pose position must be finite, found {[x, y, z]}")
    track.times.append(rec.timestamp_ns)
    track.values.extend((x, y, z, qw, qx, qy, qz))
