"""A message log's first pass and its ego poses, assembled into one RecordingSource.

Shared by every container: cameras get their calibration (by topic when mapped, by frame
id otherwise) and their extrinsics from the transform tree, frames whose size disagrees
with the calibration are dropped with a reason, and the refusals name what the recording
does have, so the user can fix the config in one step.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import msgspec

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import did_you_mean
from dataset_devkit.nuscenes.common.geometry import Transform, compose, identity, invert
from dataset_devkit.nuscenes.common.tf_tree import TransformLookupError, TransformTree
from dataset_devkit.nuscenes.common.tokens import normalize_channel
from dataset_devkit.nuscenes.ingest.backend import ReadState
from dataset_devkit.nuscenes.ingest.cameras import ENCODING_JPEG
from dataset_devkit.nuscenes.ingest.decoded_schema import SAFE_RECORDING_ID
from dataset_devkit.nuscenes.ingest.frames import CameraSpec, Replay, extract_frames
from dataset_devkit.nuscenes.ingest.mcap import METADATA_NAME
from dataset_devkit.nuscenes.ingest.model import CameraStream, RecordingSource
from dataset_devkit.nuscenes.ingest.poses import ego_poses
from dataset_devkit.nuscenes.ingest.records import Calibration
from dataset_devkit.nuscenes.ingest.roles import ROLE_IGNORED
from dataset_devkit.nuscenes.ingest.scan import CameraTrack, Scan
from dataset_devkit.nuscenes.ingest.schemas import CAMERA_KINDS, known_schemas
from dataset_devkit.nuscenes.ingest.source import SourceIdentity
from dataset_devkit.nuscenes.options import CameraTopicConfig, IngestConfig
from dataset_devkit.nuscenes.spec import (
    POSE_FRAME_LOCAL_TF,
    SOURCE_MCAP,
    RecordingObservations,
)

__all__ = ["SIM_TIME_LIMIT_NS", "assemble_recording", "camera_extrinsic"]

#: Header stamps below 10^9 s after 1970 (2001-09-09) are a simulator's clock.
SIM_TIME_LIMIT_NS = 1_000_000_000 * 1_000_000_000


def _topics_seen(scan: Scan) -> str:
    seen = [
        f"{topic} ({schema or 'no schema'}, {s.messages})"
        for (topic, schema), s in sorted(scan.stats.items())
    ]
    return ", ".join(seen[:20]) + (f", ... ({len(seen) - 20} more)" if len(seen) > 20 else "")


def _no_camera(scan: Scan, state: ReadState, path: Path) -> FormatError:
    camera_schemas = sorted(n for n, k in known_schemas().items() if k in CAMERA_KINDS)
    ignored = [
        f"{topic}: {role.reason}"
        for (topic, schema), role in scan.roles.roles().items()
        if role.kind in CAMERA_KINDS and role.role == ROLE_IGNORED
    ]
    return FormatError(
        f"no camera image ({', '.join(camera_schemas)}) in {scan.messages} messages read"
        + (f"; camera topics left out: {'; '.join(ignored)}" if ignored else "")
        + (f"; topics seen: {_topics_seen(scan)}" if scan.stats else "")
        + (f"; truncated: {state.detail}" if state.truncated else ""),
        path=path,
    )


def camera_extrinsic(tree: TransformTree, vehicle: str, camera: str) -> Transform:
    """The camera's pose in the vehicle frame: a static chain (or edges that never change).

    Composed from the identity along the path, each edge inverted where it is walked from
    child to parent; a nuScenes ``calibrated_sensor`` is fixed per log, so a chain with an
    edge that moves is refused.
    """
    pose = identity()
    # path() lists the edges from the camera up to the meeting frame, then down to the
    # vehicle (those inverted); the vehicle's pose of the camera composes them from the
    # vehicle's end: T_vehicle_camera = inv(d_m) ... inv(d_1) e_k ... e_1.
    for edge in reversed(tree.path(vehicle, camera)):
        if not edge.static and not tree.is_constant(edge.parent, edge.child):
            raise FormatError(
                f"the transform {edge.parent!r} -> {edge.child!r} between the vehicle frame "
                f"{vehicle!r} and camera frame {camera!r} changes over the recording; a camera "
                "mount must be fixed (calibrated_sensor is one pose per log)"
            )
        when = 0 if edge.static else tree.sample_times(edge.parent, edge.child)[0]
        value = tree.lookup(edge.parent, edge.child, when)
        pose = compose(pose, invert(value) if edge.inverted else value)
    return pose


def _calibration_for(scan: Scan, track: CameraTrack, path: Path) -> Calibration:
    camera = track.role.camera if track.role is not None else None
    topic = camera.calibration_topic if camera is not None else msgspec.UNSET
    if isinstance(topic, str):
        calib = scan.calibrations_by_topic.get(topic)
        if calib is None:
            raise FormatError(
                f"camera topic {track.topic!r}: its calibration_topic {topic!r} carries no "
                "calibration message"
                + did_you_mean(topic, scan.calibrations_by_topic, known="calibration topics"),
                path=path,
            )
        return calib
    calib = scan.calibrations.get(track.frame_id)
    if calib is None:
        raise FormatError(
            f"camera {track.name!r} (topic {track.topic!r}) has no calibration message"
            + (
                f"; calibrations seen for frames {sorted(scan.calibrations)} on topics "
                f"{sorted(scan.calibrations_by_topic)}: name the camera's in its "
                "[[ingest.cameras]] entry (calibration_topic)"
                if scan.calibrations
                else ""
            ),
            path=path,
        )
    return calib


def assemble_recording(
    *,
    path: Path,
    backend: str,
    scan: Scan,
    state: ReadState,
    digest: str,
    content_members: tuple[tuple[Path, SourceIdentity], ...],
    size: int,
    options: IngestConfig,
    tolerance_ns: int,
    replay: Replay,
) -> RecordingSource:
    """The RecordingSource of a scanned message log."""
    if not scan.cameras:
        raise _no_camera(scan, state, path)
    vehicle = options.vehicle_frame
    cameras: list[CameraStream] = []
    for name in sorted(scan.cameras):
        track = scan.cameras[name]
        calib = _calibration_for(scan, track, path)
        frame = track.frame_id.lstrip("/")
        try:
            known = frame in scan.tree.frames() and vehicle.lstrip("/") in scan.tree.frames()
            pose = camera_extrinsic(scan.tree, vehicle.lstrip("/"), frame) if known else None
        except TransformLookupError:
            pose = None
        if pose is None:
            raise FormatError(
                f"camera {track.frame_id!r} (topic {track.topic!r}) is not reachable from "
                f"{vehicle!r} in the transform tree"
                + did_you_mean(frame, scan.tree.frames(), known="frames"),
                path=path,
            )
        kept = []
        for ts, dims in track.frames.by_time():
            if dims != (calib.width, calib.height):
                scan.reject(
                    f"camera {name}",
                    f"frame {ts} ns is {dims[0]}x{dims[1]}, calibration says "
                    f"{calib.width}x{calib.height}: dropped",
                )
                continue
            kept.append(ts)
        mapped = track.role.camera if track.role is not None else None
        cameras.append(
            CameraStream(
                source_name=name,
                topic=track.topic,
                frame_id=track.frame_id,
                width=calib.width,
                height=calib.height,
                intrinsic=calib.intrinsic,
                distortion_model=calib.distortion_model,
                distortion=calib.distortion,
                translation=pose[0],
                rotation=pose[1],
                timestamps_ns=tuple(kept),
                invalid_frames=tuple(sorted(track.invalid.items())),
                channel=_mapped_channel(mapped, track.frame_id, path),
                source_encoding="" if track.encoding == ENCODING_JPEG else track.encoding,
            )
        )
    camera_times = sorted({t for c in cameras for t in c.timestamps_ns})
    poses = ego_poses(scan, options, camera_times, tolerance_ns, path)
    filtering = [*scan.filtering, *poses.filtering]
    invalid = {c.source_name: len(c.invalid_frames) for c in cameras if c.invalid_frames}
    observations = RecordingObservations(
        messages_read=scan.messages,
        image_frames={name: len(t.frames) for name, t in sorted(scan.cameras.items())},
        calibrations=dict(sorted(scan.calibration_counts.items())),
        poses=poses.observed,
        gnss_fixes=scan.gnss_seen,
        truncated=state.truncated,
        truncation_detail=state.detail,
        rejected_messages=scan.rejected,
        invalid_frames=invalid,
        invalid_frame_detail=_invalid_detail(cameras),
    )
    folder = path.is_dir()
    recording_id = state.metadata.get("recording_id", path.name if folder else path.stem)
    if "recording_id" in state.metadata and not SAFE_RECORDING_ID.fullmatch(recording_id):
        raise FormatError(
            f"metadata {METADATA_NAME!r}: recording_id {recording_id!r} must match "
            f"{SAFE_RECORDING_ID.pattern} (as in a decoded recording.json)",
            path=path,
        )
    simulated = bool(camera_times) and camera_times[-1] < SIM_TIME_LIMIT_NS
    specs = tuple(
        CameraSpec(c.source_name, c.topic, scan.cameras[c.source_name].encoding) for c in cameras
    )
    return RecordingSource(
        source_type=SOURCE_MCAP,
        backend=backend,
        recording_id=recording_id,
        source_name=path.name,
        source_size=size,
        source_digest=digest,
        content_members=content_members,
        vehicle=state.metadata.get("vehicle", "unknown"),
        location=state.metadata.get("location", "unknown"),
        truncated=state.truncated,
        cameras=tuple(cameras),
        translations=poses.translations,
        rotations=poses.rotations,
        gnss=poses.gnss,
        track=poses.track,
        observations=observations,
        filtering=tuple(filtering),
        extract_frames=functools.partial(extract_frames, replay, specs, path),
        longitude_deg=poses.longitude_deg if poses.longitude_deg is not None else 0.0,
        recording_id_from_name="recording_id" not in state.metadata,
        pose_frame=POSE_FRAME_LOCAL_TF if poses.pose_frame == POSE_FRAME_LOCAL_TF else "",
        world_frame=poses.world_frame,
        pose_source=poses.description,
        clock="simulation" if simulated else "",
    )


def _mapped_channel(mapped: CameraTopicConfig | None, frame_id: str, path: Path) -> str | None:
    """A mapped camera's channel: as configured, or its frame id normalized."""
    if mapped is None:
        return None
    if isinstance(mapped.channel, str):
        return mapped.channel
    try:
        return normalize_channel(frame_id)
    except FormatError as exc:
        raise FormatError(
            f"camera topic {mapped.topic!r}: {exc.detail}; give it a channel in its "
            "[[ingest.cameras]] entry",
            path=path,
        ) from None


def _invalid_detail(cameras: Sequence[CameraStream]) -> tuple[str, ...]:
    out = []
    for c in cameras:
        if c.invalid_frames:
            first_t, reason = c.invalid_frames[0]
            out.append(
                f"{c.source_name}: {len(c.invalid_frames)} frames not exported, first at "
                f"{first_t} ns: {reason}"
            )
    return tuple(out)
