"""``recording inspect``: what a recording holds and what a build would make of it.

Like ``mcap info``, plus the build's view: per topic the schema, count, rate and the role the
build gives it (with the reason for topics left out); the cameras with their encoding, size,
calibration and mount; the transform tree; where the ego pose comes from; and, when the
build would refuse the recording, what is missing and the ``build.toml`` lines that would
fix it. It reads through the same backends, roles and first pass as the build (no parser of
its own), and stops before any frame is extracted.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from dataset_devkit.errors import DevkitError
from dataset_devkit.nuscenes.common.tokens import normalize_channel
from dataset_devkit.nuscenes.ingest.assemble import SIM_TIME_LIMIT_NS, assemble_recording
from dataset_devkit.nuscenes.ingest.decoded_schema import load_recording
from dataset_devkit.nuscenes.ingest.open import (
    DEFAULT_POSE_TOLERANCE_NS,
    message_log,
    scan_recording,
)
from dataset_devkit.nuscenes.ingest.roles import ROLE_CAMERA, pose_config
from dataset_devkit.nuscenes.ingest.scan import Scan
from dataset_devkit.nuscenes.ingest.schemas import (
    CAMERA_KINDS,
    KIND_CALIBRATION,
    KIND_FIX,
    KIND_ODOMETRY,
)
from dataset_devkit.nuscenes.options import IngestConfig

__all__ = [
    "CameraReport",
    "EdgeReport",
    "RecordingReport",
    "TopicReport",
    "inspect_recording",
]

#: The official nuScenes camera channels, in the order a mapping suggests them.
OFFICIAL_CHANNELS = (
    "CAM_FRONT",
    "CAM_FRONT_LEFT",
    "CAM_FRONT_RIGHT",
    "CAM_BACK",
    "CAM_BACK_LEFT",
    "CAM_BACK_RIGHT",
)


class TopicReport(msgspec.Struct, frozen=True, kw_only=True):
    topic: str
    schema: str
    kind: str
    messages: int
    rate_hz: float | None
    role: str
    reason: str


class CameraReport(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    topic: str
    encoding: str
    frames: int
    invalid_frames: int
    sizes: list[str]
    frame_id: str
    channel: str


class EdgeReport(msgspec.Struct, frozen=True, kw_only=True):
    parent: str
    child: str
    static: bool
    samples: int
    first_s: float | None
    last_s: float | None


class RecordingReport(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    container: str
    backend: str
    messages: int
    start_ns: int | None
    end_ns: int | None
    duration_s: float | None
    #: ``simulation`` for a simulator's clock, ``wall`` otherwise.
    clock: str
    truncated: bool
    truncation_detail: str
    topics: list[TopicReport]
    cameras: list[CameraReport]
    transforms: list[EdgeReport]
    pose: str
    #: ``ready``: a build would ingest it; ``refused``: see ``problems``.
    build: str
    problems: list[str]
    #: ``build.toml`` lines that would make the build read it (or read it better).
    suggestions: list[str]


def _container(path: Path, backend: str) -> str:
    if backend == "mcap":
        return "ROS 2 bag (MCAP storage)" if path.is_dir() else "MCAP file"
    if backend == "rosbag1":
        return "ROS 1 bag"
    return "ROS 2 bag (sqlite3 storage)"


def _topics(scan: Scan) -> list[TopicReport]:
    rows = []
    for (topic, schema), stats in sorted(scan.stats.items()):
        role = scan.roles.role_of(topic, schema)
        span = (stats.last_log_ns - stats.first_log_ns) / 1e9
        rate = round((stats.messages - 1) / span, 3) if stats.messages > 1 and span > 0 else None
        rows.append(
            TopicReport(
                topic=topic,
                schema=schema,
                kind=role.kind,
                messages=stats.messages,
                rate_hz=rate,
                role=role.role,
                reason=role.reason,
            )
        )
    return rows


def _cameras(scan: Scan) -> list[CameraReport]:
    rows = []
    for name, track in sorted(scan.cameras.items()):
        camera = track.role.camera if track.role is not None else None
        if camera is not None and isinstance(camera.channel, str):
            channel = camera.channel
        else:
            try:
                channel = normalize_channel(track.frame_id if camera is not None else name)
            except DevkitError:
                channel = "(no valid channel: map it in [[ingest.cameras]])"
        rows.append(
            CameraReport(
                name=name,
                topic=track.topic,
                encoding=track.encoding,
                frames=len(track.frames),
                invalid_frames=len(track.invalid),
                sizes=sorted(f"{w}x{h}" for w, h in track.frames.sizes),
                frame_id=track.frame_id,
                channel=channel,
            )
        )
    return rows


def _edges(scan: Scan) -> list[EdgeReport]:
    return [
        EdgeReport(
            parent=e.parent,
            child=e.child,
            static=e.static,
            samples=e.samples,
            first_s=None if e.first_ns is None else round(e.first_ns / 1e9, 6),
            last_s=None if e.last_ns is None else round(e.last_ns / 1e9, 6),
        )
        for e in scan.tree.edge_summary()
    ]


def _calibration_topic(scan: Scan, camera_topic: str) -> str | None:
    """The calibration topic nearest a camera topic: in its namespace, or the closest parent
    namespace (``/camera/left/image_raw/compressed`` -> ``/camera/left/camera_info``)."""
    calibrations = sorted(
        topic
        for (topic, schema) in scan.stats
        if scan.roles.role_of(topic, schema).kind == KIND_CALIBRATION
    )
    base = camera_topic
    while "/" in base.strip("/"):
        base = base.rsplit("/", 1)[0]
        found = [t for t in calibrations if t.rsplit("/", 1)[0] == base]
        if found:
            return found[0]
    return None


def _suggestions(scan: Scan, options: IngestConfig) -> list[str]:
    lines: list[str] = []
    pose = pose_config(options)
    has_fix = any(scan.roles.role_of(t, s).kind == KIND_FIX for (t, s) in scan.stats)
    if pose.source == "gnss" and not has_fix:
        vehicle = options.vehicle_frame.lstrip("/")
        frames = scan.tree.frames()
        if vehicle in frames:
            root = vehicle
            while (parent := scan.tree.parent_of(root)) is not None:
                root = parent
            if root != vehicle:
                lines += ["[ingest.pose]", 'source = "tf"', f'world_frame = "{root}"']
        if not lines:
            odometry = sorted(
                t for (t, s) in scan.stats if scan.roles.role_of(t, s).kind == KIND_ODOMETRY
            )
            if odometry:
                lines += ["[ingest.pose]", 'source = "odometry"', f'topic = "{odometry[0]}"']
    if isinstance(options.cameras, msgspec.UnsetType):
        cameras = sorted(
            {
                t
                for (t, s) in scan.stats
                if scan.roles.role_of(t, s).kind in CAMERA_KINDS
                and scan.roles.role_of(t, s).role == ROLE_CAMERA
            }
        )
        for topic, channel in zip(cameras, OFFICIAL_CHANNELS, strict=False):
            lines += ["[[ingest.cameras]]", f'topic = "{topic}"', f'channel = "{channel}"']
            calibration = _calibration_topic(scan, topic)
            if calibration is not None:
                lines.append(f'calibration_topic = "{calibration}"')
    return lines


def _decoded_report(path: Path) -> RecordingReport:
    doc, _ = load_recording(path)
    cameras = [
        CameraReport(
            name=c.name,
            topic="",
            encoding=f"video ({c.video})",
            frames=len(c.timestamps_ns),
            invalid_frames=0,
            sizes=[f"{c.width}x{c.height}"],
            frame_id=c.name,
            channel=normalize_channel(c.name),
        )
        for c in doc.cameras
    ]
    times = [t for c in doc.cameras for t in c.timestamps_ns]
    start, end = (min(times), max(times)) if times else (None, None)
    return RecordingReport(
        path=str(path),
        container="decoded recording folder (recording.json + videos)",
        backend="pyav",
        messages=0,
        start_ns=start,
        end_ns=end,
        duration_s=None if start is None or end is None else round((end - start) / 1e9, 3),
        clock="wall",
        truncated=False,
        truncation_detail="",
        topics=[],
        cameras=cameras,
        transforms=[],
        pose="recording-local ENU poses from recording.json",
        build="ready",
        problems=[],
        suggestions=[],
    )


def inspect_recording(
    path: Path | str,
    options: IngestConfig | None = None,
    *,
    pose_tolerance_ns: int = DEFAULT_POSE_TOLERANCE_NS,
) -> RecordingReport:
    """The report of one recording under *options* (the ``[ingest]`` of a build.toml)."""
    path = Path(path)
    options = options or IngestConfig()
    log = message_log(path, options)
    if log is None:
        return _decoded_report(path)
    scan, state = scan_recording(log, options, pose_tolerance_ns)
    problems: list[str] = []
    pose = ""
    try:
        source = assemble_recording(
            path=path,
            backend=log.backend,
            scan=scan,
            state=state,
            digest="",
            content_members=(),
            size=0,
            options=options,
            tolerance_ns=pose_tolerance_ns,
            replay=lambda topics: iter(()),
        )
        pose = source.pose_source
        if not source.rotations or not source.translations:
            problems.append(
                "no ego pose: "
                + (
                    "the pose source is GNSS and the recording has no GNSS fix"
                    if not source.translations
                    else "nothing gives the vehicle's orientation"
                )
            )
    except DevkitError as exc:
        problems.append(str(exc))
    times = [
        t
        for track in scan.cameras.values()
        for t in (track.frames.times[:1] + track.frames.times[-1:])
    ]
    start, end = (min(times), max(times)) if times else (None, None)
    return RecordingReport(
        path=str(path),
        container=_container(path, log.backend),
        backend=log.backend,
        messages=scan.messages,
        start_ns=start,
        end_ns=end,
        duration_s=None if start is None or end is None else round((end - start) / 1e9, 3),
        clock="simulation" if end is not None and end < SIM_TIME_LIMIT_NS else "wall",
        truncated=state.truncated,
        truncation_detail=state.detail,
        topics=_topics(scan),
        cameras=_cameras(scan),
        transforms=_edges(scan),
        pose=pose,
        build="refused" if problems else "ready",
        problems=problems,
        suggestions=_suggestions(scan, options),
    )
