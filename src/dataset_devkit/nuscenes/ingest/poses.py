"""The ego pose of a message-log recording, from the one source ``[ingest.pose]`` declares.

Position and orientation always come from the same declared world frame:

- ``gnss``: positions from GNSS fixes (EPSG:3857 metres + altitude); the orientation from
  the transform chain ``world_frame -> vehicle_frame``. With no world frame declared, the
  chain starts at the root of the tree above the vehicle frame; when that chain is a single
  edge its own samples are the orientation stream (as MCAP recordings always gave it), and
  with no transform into the vehicle frame the ``foxglove.PoseInFrame`` orientations are.
- ``tf``: position and orientation of the composed chain ``world_frame -> ... ->
  vehicle_frame`` at each camera time, every dynamic edge interpolated there (tf2).
- ``odometry`` / ``pose``: the pose messages of one topic, interpolated at each camera time,
  composed with the static chain from the message's child frame to the vehicle frame (and
  with the chain from the declared world frame to the message's frame, if they differ).

Composed poses are sampled at the camera times, where the evidence stage looks them up
exactly. A camera time where the chain is not connected, or a dynamic edge would be
extrapolated or interpolated across a gap wider than the pose tolerance, gets no pose; the
evidence stage cannot bridge it either (its neighbours are farther apart than the tolerance).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import did_you_mean
from dataset_devkit.nuscenes.common.geodesy import LocalEnu, to_web_mercator
from dataset_devkit.nuscenes.common.geometry import (
    Transform,
    compose,
    interpolate_transform,
)
from dataset_devkit.nuscenes.common.tf_tree import TransformLookupError, TransformTree
from dataset_devkit.nuscenes.ingest.model import GnssContext, TimedQuat, TimedVec3
from dataset_devkit.nuscenes.ingest.records import Fix, Orientation
from dataset_devkit.nuscenes.ingest.roles import pose_config
from dataset_devkit.nuscenes.ingest.scan import PoseTrack, Scan
from dataset_devkit.nuscenes.options import IngestConfig
from dataset_devkit.nuscenes.spec import (
    POSE_FRAME_LOCAL_TF,
    POSE_FRAME_WEB_MERCATOR,
    Rejection,
)

__all__ = ["EgoPoses", "ego_poses", "frame_in_tree"]


@dataclass(frozen=True, slots=True)
class EgoPoses:
    """The pose streams of a recording and the frame they are in."""

    translations: tuple[TimedVec3, ...]
    rotations: tuple[TimedQuat, ...]
    gnss: tuple[GnssContext, ...]
    #: Vehicle positions in a local metric frame, for distance and speed tags.
    track: tuple[TimedVec3, ...]
    #: Of the first GNSS fix; None without fixes (no local solar time then).
    longitude_deg: float | None
    pose_frame: str
    #: The tree's (or pose topic's) fixed frame; ``""`` for GNSS positions.
    world_frame: str
    #: How the poses were made, for reports: ``"tf map -> base_link"``.
    description: str
    #: Pose samples observed in the source (transforms into the vehicle, pose messages).
    observed: int
    filtering: tuple[Rejection, ...] = field(default=())


def frame_in_tree(tree: TransformTree, frame: str, key: str, path: Path) -> str:
    """*frame* without a leading ``/``; a FormatError with the near misses if it is absent."""
    name = frame.lstrip("/")
    if name not in tree.frames():
        raise FormatError(
            f"{key} {name!r} is not a frame of the transform tree"
            + did_you_mean(name, tree.frames(), known="frames"),
            path=path,
        )
    return name


def _fix_streams(
    fixes: list[Fix],
) -> tuple[list[TimedVec3], list[GnssContext], list[TimedVec3], float | None]:
    """GNSS fixes: EPSG:3857 positions, their GNSS context, a local ENU track, the longitude."""
    ordered = sorted(
        {fx.timestamp_ns: fx for fx in reversed(fixes)}.values(), key=lambda fx: fx.timestamp_ns
    )
    translations: list[TimedVec3] = []
    gnss: list[GnssContext] = []
    track: list[TimedVec3] = []
    local = (
        LocalEnu(ordered[0].latitude, ordered[0].longitude, ordered[0].altitude)
        if ordered
        else None
    )
    for fx in ordered:
        east, north = to_web_mercator(fx.latitude, fx.longitude)
        translations.append(TimedVec3(fx.timestamp_ns, (east, north, fx.altitude)))
        gnss.append(GnssContext(fx.timestamp_ns, east, north))
        if local is not None:
            track.append(
                TimedVec3(fx.timestamp_ns, local.from_wgs84(fx.latitude, fx.longitude, fx.altitude))
            )
    return translations, gnss, track, (ordered[0].longitude if ordered else None)


def _dedup_q(items: list[Orientation]) -> tuple[TimedQuat, ...]:
    by_time: dict[int, Orientation] = {}
    for item in items:
        by_time.setdefault(item.timestamp_ns, item)
    return tuple(TimedQuat(t, by_time[t].rotation) for t in sorted(by_time))


class _Failures:
    """Camera times without a pose, counted by reason, reported once per recording."""

    def __init__(self) -> None:
        self.count = 0
        self.first: dict[str, tuple[int, str]] = {}
        self.kinds: Counter[str] = Counter()

    def add(self, t: int, kind: str, detail: str) -> None:
        self.count += 1
        self.kinds[kind] += 1
        self.first.setdefault(kind, (t, detail))

    def lookup_failed(self, t: int, exc: TransformLookupError) -> None:
        self.add(t, type(exc).__name__, exc.detail)

    def rejections(self, subject: str) -> list[Rejection]:
        return [
            Rejection(
                subject=subject,
                reason=f"{n} camera times have no ego pose ({kind}); first at {t} ns: {detail}",
            )
            for kind, n in sorted(self.kinds.items())
            for t, detail in [self.first[kind]]
        ]


class _Streams:
    """Position and orientation samples as they are found (no list of transforms kept:
    an hour of camera times is hundreds of thousands of samples)."""

    def __init__(self, positions: bool) -> None:
        self.translations: list[TimedVec3] | None = [] if positions else None
        self.rotations: list[TimedQuat] = []
        self.failures = _Failures()

    def add(self, t: int, value: Transform) -> None:
        if self.translations is not None:
            self.translations.append(TimedVec3(t, value[0]))
        self.rotations.append(TimedQuat(t, value[1]))


def _chain_poses(
    tree: TransformTree, world: str, vehicle: str, times: Sequence[int], *, positions: bool
) -> _Streams:
    streams = _Streams(positions)
    for t in times:
        try:
            value = tree.lookup(world, vehicle, t)
        except TransformLookupError as exc:
            streams.failures.lookup_failed(t, exc)
            continue
        streams.add(t, value)
    return streams


def _root_of(tree: TransformTree, frame: str) -> str:
    seen = {frame}
    while (parent := tree.parent_of(frame)) is not None and parent not in seen:
        seen.add(parent)
        frame = parent
    return frame


def _single_forward_edge(tree: TransformTree, world: str, vehicle: str) -> bool:
    path = tree.path(world, vehicle)
    return len(path) == 1 and not path[0].inverted and not path[0].static


def ego_poses(
    scan: Scan,
    options: IngestConfig,
    camera_times: Sequence[int],
    tolerance_ns: int,
    path: Path,
) -> EgoPoses:
    """The ego pose streams of *scan* under ``[ingest.pose]``; *camera_times* sorted."""
    pose = pose_config(options)
    tree = scan.tree
    vehicle = options.vehicle_frame.lstrip("/")
    translations, gnss, fix_track, longitude = _fix_streams(scan.fixes)
    subject = "ego pose"
    if pose.source == "gnss":
        declared = isinstance(pose.world_frame, str)
        if not declared and (vehicle not in tree.frames() or tree.parent_of(vehicle) is None):
            # No transform into the vehicle frame (it is absent, or only the cameras' parent).
            if scan.orientations:
                return EgoPoses(
                    tuple(translations),
                    _dedup_q(scan.orientations),
                    tuple(gnss),
                    tuple(fix_track),
                    longitude,
                    POSE_FRAME_WEB_MERCATOR,
                    "",
                    "gnss position, foxglove.PoseInFrame orientation",
                    len(scan.orientations),
                )
            return EgoPoses(
                tuple(translations),
                (),
                tuple(gnss),
                tuple(fix_track),
                longitude,
                POSE_FRAME_WEB_MERCATOR,
                "",
                "gnss position, no orientation",
                0,
            )
        vehicle = frame_in_tree(tree, vehicle, "ingest.vehicle_frame", path)
        world = (
            frame_in_tree(tree, str(pose.world_frame), "ingest.pose.world_frame", path)
            if declared
            else _root_of(tree, vehicle)
        )
        extra: list[Rejection] = []
        if scan.orientations:
            extra.append(
                Rejection(
                    subject="PoseInFrame",
                    reason=f"{len(scan.orientations)} poses ignored: transforms to "
                    f"{options.vehicle_frame!r} take precedence",
                )
            )
        if world == vehicle:
            raise FormatError(
                f"ingest.vehicle_frame {vehicle!r} is the root of its transform tree: no "
                "transform gives its orientation; declare [ingest.pose] world_frame",
                path=path,
            )
        if not declared and _single_forward_edge(tree, world, vehicle):
            # The edge's own samples, as MCAP recordings have always given the heading.
            times: Sequence[int] = tree.sample_times(world, vehicle)
        else:
            times = camera_times
        streams = _chain_poses(tree, world, vehicle, times, positions=False)
        return EgoPoses(
            tuple(translations),
            tuple(streams.rotations),
            tuple(gnss),
            tuple(fix_track),
            longitude,
            POSE_FRAME_WEB_MERCATOR,
            "",
            f"gnss position, tf orientation {world} -> {vehicle}",
            scan.vehicle_edges or len(scan.orientations),
            tuple(extra + streams.failures.rejections(subject)),
        )
    if pose.source == "tf":
        vehicle = frame_in_tree(tree, vehicle, "ingest.vehicle_frame", path)
        world = (
            frame_in_tree(tree, pose.world_frame, "ingest.pose.world_frame", path)
            if isinstance(pose.world_frame, str)
            else _root_of(tree, vehicle)
        )
        if world == vehicle:
            raise FormatError(
                f"ingest.pose.world_frame {world!r} is the vehicle frame itself; declare the "
                "fixed frame of the tree (map, odom)",
                path=path,
            )
        streams = _chain_poses(tree, world, vehicle, camera_times, positions=True)
        description = f"tf {world} -> {vehicle}"
        observed = scan.vehicle_edges
    else:
        track_poses = scan.poses
        if track_poses is None or not track_poses.times:
            raise FormatError(
                f"ingest.pose.topic {pose.topic!r} carries no pose message (source "
                f"{pose.source!r})",
                path=path,
            )
        world, streams = _topic_poses(
            tree, track_poses, pose.world_frame, vehicle, camera_times, tolerance_ns, path
        )
        description = f"{pose.source} {track_poses.topic} ({world} -> {vehicle})"
        observed = len(track_poses.times)
    positions = tuple(streams.translations or ())
    return EgoPoses(
        positions,
        tuple(streams.rotations),
        tuple(gnss),
        positions,
        longitude,
        POSE_FRAME_LOCAL_TF,
        world,
        description,
        observed,
        tuple(streams.failures.rejections(subject)),
    )


def _sample(track: PoseTrack, i: int) -> Transform:
    v = track.values[7 * i : 7 * i + 7]
    return ((v[0], v[1], v[2]), (v[3], v[4], v[5], v[6]))


def _topic_poses(
    tree: TransformTree,
    track: PoseTrack,
    world_frame: object,
    vehicle: str,
    times: Sequence[int],
    tolerance_ns: int,
    path: Path,
) -> tuple[str, _Streams]:
    """Pose messages at the camera times, composed with the chains around them."""
    order = sorted(range(len(track.times)), key=track.times.__getitem__)
    stamps = [track.times[i] for i in order]
    source = track.frame_id
    child = track.child_frame or vehicle
    world = world_frame.lstrip("/") if isinstance(world_frame, str) else source
    below: Transform | None = None
    if child != vehicle:
        child = frame_in_tree(tree, child, f"child frame of {track.topic}", path)
        vehicle = frame_in_tree(tree, vehicle, "ingest.vehicle_frame", path)
        if not tree.is_static_path(child, vehicle):
            raise FormatError(
                f"the chain from {track.topic}'s child frame {child!r} to the vehicle frame "
                f'{vehicle!r} is not static; use [ingest.pose] source = "tf"',
                path=path,
            )
        below = tree.lookup(child, vehicle, 0)
    if world != source:
        world = frame_in_tree(tree, world, "ingest.pose.world_frame", path)
        frame_in_tree(tree, source, f"frame_id of {track.topic}", path)
    streams = _Streams(positions=True)
    failures = streams.failures
    for t in times:
        j = bisect.bisect_left(stamps, t)
        if j < len(stamps) and stamps[j] == t:
            value = _sample(track, order[j])
        elif j == 0 or j == len(stamps) or stamps[j] - stamps[j - 1] > tolerance_ns:
            failures.add(t, *_gap(track.topic, t, stamps, j, tolerance_ns))
            continue
        else:
            t0, t1 = stamps[j - 1], stamps[j]
            value = interpolate_transform(
                _sample(track, order[j - 1]), _sample(track, order[j]), (t - t0) / (t1 - t0)
            )
        if below is not None:
            value = compose(value, below)
        if world != source:
            try:
                value = compose(tree.lookup(world, source, t), value)
            except TransformLookupError as exc:
                failures.lookup_failed(t, exc)
                continue
        streams.add(t, value)
    return world, streams


def _gap(topic: str, t: int, stamps: list[int], j: int, tolerance_ns: int) -> tuple[str, str]:
    """``(kind, detail)`` of a camera time the pose topic does not cover."""
    if j == 0 or j == len(stamps):
        return (
            "ExtrapolationError",
            f"pose topic {topic!r} has messages only from {stamps[0] / 1e9:.3f} s to "
            f"{stamps[-1] / 1e9:.3f} s, not at {t / 1e9:.3f} s",
        )
    return (
        "GapError",
        f"pose topic {topic!r} has no message between {stamps[j - 1] / 1e9:.3f} s and "
        f"{stamps[j] / 1e9:.3f} s (more than the {tolerance_ns / 1e6:g} ms pose tolerance)",
    )
