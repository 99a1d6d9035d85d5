"""Ingest backend for decoded recording folders (``decoded_hf``, privacy transformed, local ENU).

The folder is ``recording.json`` (schema in docs/nuscenes.md) plus one video per camera.
Metadata is read at ingest; frames are decoded with PyAV only when the scene grid asks for
them, and written as JPEG at quality 95.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError, UnsafePathError
from dataset_devkit.nuscenes.common.geodesy import to_web_mercator
from dataset_devkit.nuscenes.common.geometry import rvec_to_quat
from dataset_devkit.nuscenes.common.jpeg import encode_jpeg
from dataset_devkit.nuscenes.ingest.decoded_schema import RECORDING_FILE, load_recording
from dataset_devkit.nuscenes.ingest.model import (
    CameraStream,
    GnssContext,
    RecordingSource,
    TimedQuat,
    TimedVec3,
)
from dataset_devkit.nuscenes.ingest.source import SourceDigest, open_regular, source_identity
from dataset_devkit.nuscenes.spec import (
    JPEG_QUALITY,
    SOURCE_DECODED,
    RecordingObservations,
)

__all__ = ["BACKEND_DECODED", "RECORDING_FILE", "read_decoded"]

BACKEND_DECODED = "pyav"


def _av_error() -> type[Exception]:
    import av

    return av.FFmpegError


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


def read_decoded(folder: Path | str) -> RecordingSource:
    """Read a decoded recording folder into a :class:`RecordingSource`."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        raise UnsafePathError("a decoded recording must be a real directory", path=folder)
    doc, _ = load_recording(folder)
    digest = SourceDigest(BACKEND_DECODED)
    identities: dict[str, tuple[int, int, int, int]] = {}
    size = 0
    for name in sorted({RECORDING_FILE, *(c.video for c in doc.cameras)}):
        with open_regular(folder / name, name if name == RECORDING_FILE else "video") as f:
            identities[name] = source_identity(f)
            size += digest.add_file(name, f)
    cameras = []
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
                timestamps_ns=tuple(cam.timestamps_ns),
            )
        )
    translations = tuple(TimedVec3(p.timestamp_ns, p.translation) for p in doc.ego_poses)
    rotations = tuple(
        TimedQuat(p.timestamp_ns, rvec_to_quat(p.rotation_vector)) for p in doc.ego_poses
    )
    gnss = []
    for fx in doc.gnss:
        east, north = to_web_mercator(fx.latitude_deg, fx.longitude_deg)
        gnss.append(GnssContext(fx.timestamp_ns, east, north))
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
    )
    videos = {c.name: (c.video, list(c.timestamps_ns)) for c in doc.cameras}
    return RecordingSource(
        source_type=SOURCE_DECODED,
        backend=BACKEND_DECODED,
        recording_id=doc.recording_id,
        source_name=folder.name,
        source_size=size,
        source_digest=digest.hexdigest(),
        content_sha256=digest.content_hexdigest(),
        vehicle=doc.vehicle,
        location=doc.location,
        truncated=False,
        cameras=tuple(cameras),
        translations=translations,
        rotations=rotations,
        gnss=tuple(gnss),
        track=translations,
        observations=observations,
        filtering=(),
        extract_frames=lambda wanted: _extract(folder, identities, videos, wanted),
        longitude_deg=doc.enu_origin.longitude_deg,
    )


def _extract(
    folder: Path,
    identities: Mapping[str, tuple[int, int, int, int]],
    videos: Mapping[str, tuple[str, list[int]]],
    wanted: Mapping[str, frozenset[int]],
) -> Iterator[tuple[str, int, bytes]]:
    """Decode each camera's video in order and encode the wanted frames as JPEG (quality 95)."""
    for name in sorted(wanted):
        times = wanted[name]
        if not times:
            continue
        video, stamps = videos[name]
        path = folder / video
        with open_regular(path, "video") as f:
            if source_identity(f) != identities[video]:
                raise UnsafePathError("video changed since it was ingested", path=path)
        decoded = 0
        with _open_video(path) as container:
            frames = container.decode(video=0)
            while True:
                try:
                    frame = next(frames, None)
                except _av_error() as exc:  # a corrupt packet: name the file and the frame
                    raise FormatError(
                        f"video does not decode after frame {decoded} of {len(stamps)}: {exc}",
                        path=path,
                    ) from None
                if frame is None:
                    break
                index, decoded = decoded, decoded + 1
                if index >= len(stamps):
                    raise FormatError(
                        f"video has more frames than the {len(stamps)} timestamps", path=path
                    )
                if stamps[index] in times:
                    yield name, stamps[index], encode_jpeg(frame.to_image(), JPEG_QUALITY)
        if decoded != len(stamps):
            raise FormatError(f"video has {decoded} frames but {len(stamps)} timestamps", path=path)
