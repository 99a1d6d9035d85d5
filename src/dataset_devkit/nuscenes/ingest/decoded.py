"""Ingest backend for decoded recording folders (``decoded_hf``, privacy transformed, local ENU).

The folder is ``recording.json`` (schema in docs/nuscenes.md) plus one video per camera.
Metadata is read at ingest; frames are decoded with PyAV only when the scene grid asks for
them, and written as JPEG at quality 95.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError, UnsafePathError
from dataset_devkit.nuscenes.common.geodesy import LocalEnu, to_web_mercator
from dataset_devkit.nuscenes.common.geometry import rvec_to_quat
from dataset_devkit.nuscenes.common.jpeg import encode_jpeg
from dataset_devkit.nuscenes.ingest.decoded_schema import RECORDING_FILE, load_recording
from dataset_devkit.nuscenes.ingest.model import (
    CameraStream,
    GnssContext,
    RecordingSource,
    TimedQuat,
    TimedVec3,
    interpolate_translation,
)
from dataset_devkit.nuscenes.ingest.source import (
    SourceDigest,
    SourceIdentity,
    open_regular,
    source_identity,
)
from dataset_devkit.nuscenes.ingest.video_scan import (
    VideoScan,
    decode_with_errors,
    error_logging,
    scan_video,
)
from dataset_devkit.nuscenes.spec import (
    JPEG_QUALITY,
    SOURCE_DECODED,
    RecordingObservations,
    Rejection,
)

__all__ = ["BACKEND_DECODED", "RECORDING_FILE", "read_decoded"]

BACKEND_DECODED = "pyav"
#: A GNSS fix is compared with the ego pose interpolated between poses at most this far apart.
_POSE_GAP_NS = 1_000_000_000


def _open_video(path: Path) -> Any:
    try:
        import av
    except ImportError as exc:
        raise MissingDependencyError("av", extra="video", purpose="decoding recordings") from exc
    with open_regular(
        path, "video"
    ):  # refuses symlinks and special files before PyAV opens the name
        pass
    try:
        return av.open(str(path))
    except av.FFmpegError as exc:
        raise FormatError(f"cannot open video: {exc}", path=path) from exc


def _video_scaler() -> Any:
    import av.video.reformatter

    return av.video.reformatter.VideoReformatter()


def read_decoded(folder: Path | str) -> RecordingSource:
    """Read a decoded recording folder into a :class:`RecordingSource`."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        raise UnsafePathError("a decoded recording must be a real directory", path=folder)
    doc, _ = load_recording(folder)
    digest = SourceDigest(BACKEND_DECODED)
    identities: dict[str, SourceIdentity] = {}
    size = 0
    for name in sorted({RECORDING_FILE, *(c.video for c in doc.cameras)}):
        with open_regular(folder / name, name if name == RECORDING_FILE else "video") as f:
            identities[name] = source_identity(f)
            size += digest.add_file(name, f, folder / name)
    cameras = []
    scans: dict[str, VideoScan] = {}
    for cam in doc.cameras:
        with _open_video(folder / cam.video) as container:
            ctx = container.streams.video[0].codec_context if container.streams.video else None
            if ctx is None or not (ctx.width and ctx.height):
                raise FormatError(
                    f"no decodable video stream (container format {container.format.name!r})",
                    path=folder / cam.video,
                )
            if (ctx.width, ctx.height) != (cam.width, cam.height):
                raise FormatError(
                    f"video is {ctx.width}x{ctx.height}, calibration says {cam.width}x{cam.height}",
                    path=folder / cam.video,
                )
            # The container's frame count, when it declares one, is checked now; decoding
            # checks it again for the cameras whose frames are extracted.
            declared = container.streams.video[0].frames
            if declared and declared != len(cam.timestamps_ns):
                raise FormatError(
                    f"video declares {declared} frames but recording.json lists "
                    f"{len(cam.timestamps_ns)} timestamps for camera {cam.name!r}",
                    path=folder / cam.video,
                )
            # Every packet is decoded once here, so a frame FFmpeg only concealed is known
            # before scenes are cut: it is left out, never exported as good.
            scan = scan_video(container, len(cam.timestamps_ns), folder / cam.video)
        scans[cam.name] = scan
        invalid = tuple((cam.timestamps_ns[i], why) for i, why in sorted(scan.invalid.items()))
        cameras.append(
            CameraStream(
                source_name=cam.name,
                topic=cam.video,
                frame_id=cam.name,
                width=cam.width,
                height=cam.height,
                intrinsic=cam.K,
                distortion_model=cam.distortion_model,
                distortion=tuple(cam.distortion),
                translation=cam.translation,
                rotation=rvec_to_quat(cam.rotation_vector, f"camera {cam.name} rotation_vector"),
                timestamps_ns=tuple(
                    t for i, t in enumerate(cam.timestamps_ns) if i not in scan.invalid
                ),
                invalid_frames=invalid,
            )
        )
    rotations = tuple(
        TimedQuat(p.timestamp_ns, rvec_to_quat(p.rotation_vector)) for p in doc.ego_poses
    )
    translations = tuple(TimedVec3(p.timestamp_ns, p.translation) for p in doc.ego_poses)
    gnss = []
    for fx in doc.gnss:
        east, north = to_web_mercator(fx.latitude_deg, fx.longitude_deg)
        gnss.append(GnssContext(fx.timestamp_ns, east, north))
    origin = doc.enu_origin
    local = LocalEnu(origin.latitude_deg, origin.longitude_deg, origin.altitude_m)
    pose_times = [p.timestamp_ns for p in translations]
    offsets = []
    for fx in doc.gnss:
        pose = interpolate_translation(translations, pose_times, fx.timestamp_ns, _POSE_GAP_NS)
        if pose is not None:
            e, n, _ = local.from_wgs84(fx.latitude_deg, fx.longitude_deg, fx.altitude_m)
            offsets.append((fx.timestamp_ns, round(math.hypot(e - pose[0], n - pose[1]), 3)))
    cams_sorted = sorted(cameras, key=lambda c: c.source_name)
    stamps = {c.name: list(c.timestamps_ns) for c in doc.cameras}
    observations = RecordingObservations(
        messages_read=0,
        image_frames={
            c.name: len(c.timestamps_ns) for c in sorted(doc.cameras, key=lambda c: c.name)
        },
        calibrations={c.name: 1 for c in sorted(doc.cameras, key=lambda c: c.name)},
        poses=len(doc.ego_poses),
        gnss_fixes=len(doc.gnss),
        truncated=False,
        truncation_detail="",
        rejected_messages=0,
        invalid_frames={
            c.source_name: len(c.invalid_frames) for c in cams_sorted if c.invalid_frames
        },
        invalid_frame_detail=tuple(
            f"camera {c.source_name!r} ({c.topic}): {run}"
            for c in cams_sorted
            for run in _runs(scans[c.source_name], stamps[c.source_name])
        ),
    )
    filtering = tuple(
        Rejection(subject=f"camera {c.source_name}", reason=f"{run}: dropped")
        for c in cams_sorted
        for run in _runs(scans[c.source_name], stamps[c.source_name])
    )
    videos = {
        c.name: (c.video, list(c.timestamps_ns), scans[c.name].pts_order) for c in doc.cameras
    }
    return RecordingSource(
        source_type=SOURCE_DECODED,
        backend=BACKEND_DECODED,
        recording_id=doc.recording_id,
        source_name=folder.name,
        source_size=size,
        source_digest=digest.hexdigest(),
        content_members=tuple(digest.members),
        vehicle=doc.vehicle,
        location=doc.location,
        truncated=False,
        cameras=tuple(cameras),
        translations=translations,
        rotations=rotations,
        gnss=tuple(gnss),
        track=translations,
        observations=observations,
        filtering=filtering,
        extract_frames=functools.partial(_extract, folder, identities, videos),
        longitude_deg=doc.enu_origin.longitude_deg,
        gnss_pose_offsets_m=tuple(offsets),
    )


def _runs(scan: VideoScan, stamps: list[int]) -> list[str]:
    """Invalid frames as runs of consecutive indexes with one cause (one line per run)."""
    lines: list[str] = []
    run: list[int] = []
    for index, why in sorted(scan.invalid.items()):
        # A damaged frame starts a run; the frames predicted from it continue it.
        if run and index == run[-1] + 1 and why.startswith("predicted"):
            run.append(index)
            continue
        if run:
            lines.append(_run_line(run, scan, stamps))
        run = [index]
    if run:
        lines.append(_run_line(run, scan, stamps))
    return lines


def _run_line(run: list[int], scan: VideoScan, stamps: list[int]) -> str:
    first, last = run[0], run[-1]
    head = f"frame {first} ({stamps[first]} ns) invalid: {scan.invalid[first]}"
    if first == last:
        return head
    return f"{head}; frames {first + 1}-{last} (to {stamps[last]} ns) predicted from it"


def _extract(
    folder: Path,
    identities: Mapping[str, SourceIdentity],
    videos: Mapping[str, tuple[str, list[int], list[int]]],
    wanted: Mapping[str, frozenset[int]],
) -> Iterator[tuple[str, int, bytes]]:
    """Decode each camera's video in order and encode the wanted frames as JPEG (quality 95).

    Frames are matched to timestamps by presentation order, as at ingest; the wanted ones
    decoded cleanly at ingest from the same, unchanged bytes.
    """
    from PIL import Image

    for name in sorted(wanted):
        times = wanted[name]
        if not times:
            continue
        video, stamps, pts_order = videos[name]
        index_of = {pts: i for i, pts in enumerate(pts_order)}
        path = folder / video
        with open_regular(path, "video") as f:
            if source_identity(f) != identities[video]:
                raise UnsafePathError("video changed since it was ingested", path=path)
        remaining = set(times)
        # A scaler of this call, not the one PyAV 19 keeps per thread (``frame.to_image()``
        # uses it): a later fork from another thread drops this thread's state in the child,
        # and freeing that scaler there waits forever on threads the child does not have.
        scaler = _video_scaler()
        with _open_video(path) as container, error_logging():
            for packet, frames, error in decode_with_errors(container, path):
                damaged = index_of.get(packet.pts) if error else None
                if damaged is not None and stamps[damaged] in remaining:
                    raise FormatError(
                        f"frame {damaged} no longer decodes cleanly: {error}", path=path
                    )
                for frame in frames:
                    index = index_of.get(frame.pts)
                    if index is None or stamps[index] not in remaining:
                        continue
                    remaining.discard(stamps[index])
                    rgb = scaler.reformat(frame, format="rgb24").to_ndarray()
                    yield name, stamps[index], encode_jpeg(Image.fromarray(rgb), JPEG_QUALITY)
        if remaining:
            raise FormatError(
                f"{len(remaining)} frames seen at ingest did not decode, first at "
                f"{min(remaining)} ns",
                path=path,
            )
