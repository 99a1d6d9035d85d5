"""The normalized in-memory view of one recording, whatever its source format."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.geometry import lerp, slerp
from dataset_devkit.nuscenes.ingest.source import SourceIdentity
from dataset_devkit.nuscenes.spec import Matrix3, Quat, RecordingObservations, Rejection, Vec3

__all__ = [
    "CameraStream",
    "FrameExtractor",
    "GnssContext",
    "RecordingSource",
    "TimedQuat",
    "TimedVec3",
    "check_intrinsic",
    "interpolate_rotation",
    "interpolate_translation",
]


@dataclass(frozen=True, slots=True)
class CameraStream:
    """One source camera: calibration, extrinsics in the vehicle frame and capture times.

    ``timestamps_ns`` is sorted and unique and lists only frames whose image size agrees with
    the calibration (the others are dropped and recorded in the recording's filtering).
    """

    source_name: str
    topic: str
    frame_id: str
    width: int
    height: int
    intrinsic: Matrix3
    distortion_model: str
    distortion: tuple[float, ...]
    translation: Vec3
    rotation: Quat
    timestamps_ns: tuple[int, ...]
    #: Frames left out of ``timestamps_ns`` because they did not decode cleanly:
    #: ``(timestamp_ns, reason)``.
    invalid_frames: tuple[tuple[int, str], ...] = ()
    #: The channel chosen in ``[[ingest.cameras]]``; None: normalized from the source name.
    channel: str | None = None
    #: How the source stores the frames (``png``, ``rgb8``, ``h264``); ``""`` for JPEG
    #: frames copied verbatim.
    source_encoding: str = ""


@dataclass(frozen=True, slots=True)
class TimedVec3:
    timestamp_ns: int
    value: Vec3


@dataclass(frozen=True, slots=True)
class TimedQuat:
    timestamp_ns: int
    value: Quat


@dataclass(frozen=True, slots=True)
class GnssContext:
    """A GNSS fix projected to the global CRS (EPSG:3857 metres)."""

    timestamp_ns: int
    east_m: float
    north_m: float


FrameExtractor = Callable[[Mapping[str, frozenset[int]]], Iterator[tuple[str, int, bytes]]]
"""Yields ``(camera source name, timestamp_ns, jpeg bytes)`` for the wanted capture times."""


@dataclass(frozen=True, slots=True)
class RecordingSource:
    """A recording read by an ingest backend: everything the evidence stages need.

    ``translations``/``rotations`` are the ego pose streams in the source's pose frame
    (EPSG:3857 + altitude for MCAP, recording-local ENU for decoded recordings).
    """

    source_type: str
    backend: str
    recording_id: str
    source_name: str
    source_size: int
    source_digest: str
    vehicle: str
    location: str
    truncated: bool
    cameras: tuple[CameraStream, ...]
    translations: tuple[TimedVec3, ...]
    rotations: tuple[TimedQuat, ...]
    gnss: tuple[GnssContext, ...]
    #: Vehicle positions in a local metric frame (ENU), for distance and speed tags.
    track: tuple[TimedVec3, ...]
    observations: RecordingObservations
    filtering: tuple[Rejection, ...]
    extract_frames: FrameExtractor = field(compare=False, repr=False)
    #: Longitude of the recording (degrees) for local solar time tags.
    longitude_deg: float = 0.0
    #: The files the ``source_digest`` covers, in order, with their identities: the SHA-256
    #: of their bytes alone (no names, :func:`.source.content_sha256`) is the same for a
    #: recording copied under another name, so it is not ingested twice. Taken only when
    #: another recording has the same sizes.
    content_members: tuple[tuple[Path, SourceIdentity], ...] = ()
    #: Horizontal distance (m) of each GNSS fix from the interpolated ego pose at its time,
    #: when poses and fixes are separate streams: ``(fix time, metres)``.
    gnss_pose_offsets_m: tuple[tuple[int, float], ...] = ()
    #: The id is the file or folder name (no recorded id): it may be made unique.
    recording_id_from_name: bool = False
    #: The frame of ``translations``/``rotations`` when it is the recording's own transform
    #: tree or pose topic (``recording_local_tf_v1``); ``""``: the source type's default.
    pose_frame: str = ""
    #: That frame's name in the recording (``map``, ``odom``).
    world_frame: str = ""
    #: How the ego poses were made (``tf map -> base_link``), for reports.
    pose_source: str = ""
    #: ``"simulation"`` when the header stamps are a simulator's clock (seconds since its
    #: start, not since 1970); ``""`` for wall-clock stamps.
    clock: str = ""


def check_intrinsic(k: Matrix3, width: int, height: int, what: str) -> None:
    """Refuse a calibration that is not a real pinhole K (uncalibrated cameras publish zeros)."""
    values = [v for row in k for v in row]
    if not all(math.isfinite(v) for v in values):
        raise FormatError(f"{what}: intrinsic matrix must be finite, found {values}")
    if width < 1 or height < 1:
        raise FormatError(f"{what}: image size must be positive, found {width}x{height}")
    if not (k[0][0] > 0 and k[1][1] > 0 and k[2] == (0.0, 0.0, 1.0) and k[1][0] == 0.0):
        raise FormatError(
            f"{what}: K is not a calibrated pinhole matrix (fx, fy > 0, last row 0 0 1), "
            f"found {values}"
        )


def _bracket(times: list[int], t: int, tolerance_ns: int) -> tuple[int, int, float] | None:
    """Indexes ``(i, j)`` around *t* and the fraction, or None when the gap is too wide."""
    j = bisect.bisect_left(times, t)
    if j < len(times) and times[j] == t:
        return (j, j, 0.0)
    if j == 0 or j == len(times):
        return None
    i = j - 1
    if times[j] - times[i] > tolerance_ns:
        return None
    return (i, j, (t - times[i]) / (times[j] - times[i]))


def interpolate_translation(
    samples: tuple[TimedVec3, ...], times: list[int], t: int, tolerance_ns: int
) -> Vec3 | None:
    """Linear interpolation of a position stream at *t*; None outside or across a gap."""
    found = _bracket(times, t, tolerance_ns)
    if found is None:
        return None
    i, j, frac = found
    return lerp(samples[i].value, samples[j].value, frac)


def interpolate_rotation(
    samples: tuple[TimedQuat, ...], times: list[int], t: int, tolerance_ns: int
) -> Quat | None:
    """Slerp of an orientation stream at *t*; None outside or across a gap."""
    found = _bracket(times, t, tolerance_ns)
    if found is None:
        return None
    i, j, frac = found
    return slerp(samples[i].value, samples[j].value, frac)
