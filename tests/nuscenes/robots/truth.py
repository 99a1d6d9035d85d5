"""Ground truth of a generated recording: what a correct tf2 lookup on its messages returns.

The truth is rebuilt from the samples the recording PUBLISHED, not from the continuous
motion: dynamic edges are interpolated between their samples exactly as tf2's ``Cache`` does
(translation lerped, rotation slerped along the shortest arc, an exact stamp returns that
sample, no extrapolation), static edges hold their latest value at every time, and a lookup
walks both frames up to their common ancestor, inverting edges on the way down. Everything
is numpy and SciPy on 4×4 matrices, sharing no code with the devkit.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from tests.nuscenes.robots.geometry import Matrix, interpolate, inverse, matrix, quaternion_wxyz

__all__ = [
    "CameraTruth",
    "ExtrapolationError",
    "FixTruth",
    "NotConnectedError",
    "PoseTopicTruth",
    "TfSample",
    "TransformBuffer",
    "Truth",
]


class NotConnectedError(LookupError):
    """The two frames are not in one tree (tf2's ``ConnectivityException``)."""


class ExtrapolationError(LookupError):
    """A dynamic edge has no samples around the time asked (tf2's ``ExtrapolationException``)."""


@dataclass(frozen=True, slots=True)
class TfSample:
    """One published transform: *child*'s pose in *parent* at *stamp_ns* (rotation x y z w)."""

    stamp_ns: int
    parent: str
    child: str
    translation: tuple[float, float, float]
    rotation: tuple[float, float, float, float]

    def matrix(self) -> Matrix:
        return matrix(self.translation, self.rotation)


@dataclass(slots=True)
class _DynamicEdge:
    parent: str
    stamps: list[int] = field(default_factory=list)
    samples: list[TfSample] = field(default_factory=list)


class TransformBuffer:
    """tf2's buffer, rebuilt: edges keyed by child, static (latest wins) or dynamic (sorted)."""

    def __init__(self) -> None:
        self._static: dict[str, TfSample] = {}
        self._dynamic: dict[str, _DynamicEdge] = {}

    def add(self, sample: TfSample, *, static: bool) -> None:
        if static:
            self._static[sample.child] = sample
            return
        edge = self._dynamic.setdefault(sample.child, _DynamicEdge(sample.parent))
        if edge.parent != sample.parent:
            raise ValueError(
                f"{sample.child!r} changes parent: {edge.parent!r} → {sample.parent!r}"
            )
        at = bisect.bisect_left(edge.stamps, sample.stamp_ns)
        if at < len(edge.stamps) and edge.stamps[at] == sample.stamp_ns:
            return  # tf2 drops a second sample with the same stamp
        edge.stamps.insert(at, sample.stamp_ns)
        edge.samples.insert(at, sample)

    @property
    def frames(self) -> frozenset[str]:
        names = {s.child for s in self._static.values()} | {s.parent for s in self._static.values()}
        names |= set(self._dynamic) | {e.parent for e in self._dynamic.values()}
        return frozenset(names)

    def is_static(self, child: str) -> bool:
        return child in self._static and child not in self._dynamic

    def samples(self, child: str) -> list[TfSample]:
        """The published samples of the dynamic edge into *child*, in stamp order."""
        return list(self._dynamic[child].samples)

    def _parent(self, frame: str) -> str | None:
        if frame in self._dynamic:
            return self._dynamic[frame].parent
        if frame in self._static:
            return self._static[frame].parent
        return None

    def _edge(self, child: str, t_ns: int) -> Matrix:
        """*child* in its parent at *t_ns*: the static value, or the interpolated samples."""
        if child not in self._dynamic:
            return self._static[child].matrix()
        edge = self._dynamic[child]
        at = bisect.bisect_left(edge.stamps, t_ns)
        if at < len(edge.stamps) and edge.stamps[at] == t_ns:
            return edge.samples[at].matrix()
        if at == 0 or at == len(edge.stamps):
            raise ExtrapolationError(
                f"{edge.parent} → {child} at {t_ns}: samples span "
                f"[{edge.stamps[0]}, {edge.stamps[-1]}]"
            )
        a, b = edge.samples[at - 1], edge.samples[at]
        fraction = (t_ns - a.stamp_ns) / (b.stamp_ns - a.stamp_ns)
        return interpolate(a.translation, a.rotation, b.translation, b.rotation, fraction)

    def _chain(self, frame: str) -> list[str]:
        chain = [frame]
        while (parent := self._parent(chain[-1])) is not None:
            if parent in chain or len(chain) > 1000:
                raise ValueError(f"loop in the transform tree at {parent!r}")
            chain.append(parent)
        return chain

    def path(self, target: str, source: str) -> tuple[list[str], list[str]]:
        """The frames from *source* up to the common ancestor, and from *target* up to it."""
        for frame in (target, source):
            if frame not in self.frames:
                raise NotConnectedError(f"unknown frame {frame!r}")
        up_source, up_target = self._chain(source), self._chain(target)
        common = next((f for f in up_source if f in up_target), None)
        if common is None:
            raise NotConnectedError(f"{source!r} and {target!r} are not connected")
        return (
            up_source[: up_source.index(common) + 1],
            up_target[: up_target.index(common) + 1],
        )

    def lookup(self, target: str, source: str, t_ns: int) -> Matrix:
        """*source*'s pose in *target* (maps source coordinates into target's), tf2 style."""
        up_source, up_target = self.path(target, source)
        return inverse(self._down(up_target, t_ns)) @ self._down(up_source, t_ns)

    def _down(self, up: list[str], t_ns: int) -> Matrix:
        """The first frame of *up* in its last (the ancestor): edges composed top-down."""
        out = np.eye(4)
        for child in reversed(up[:-1]):
            out = out @ self._edge(child, t_ns)
        return out

    def static_lookup(self, target: str, source: str) -> Matrix:
        """As :meth:`lookup` for a chain of static edges only (any time gives the same)."""
        up_source, up_target = self.path(target, source)
        dynamic = [c for c in up_source[:-1] + up_target[:-1] if not self.is_static(c)]
        if dynamic:
            raise ValueError(f"{target!r} → {source!r} crosses dynamic edges into {dynamic}")
        return self.lookup(target, source, 0)


@dataclass(frozen=True, slots=True)
class PoseTopicTruth:
    """A pose topic (Odometry, PoseWithCovarianceStamped, PoseStamped, PoseInFrame).

    The messages give *body*'s pose in *frame* (the header frame); for ``nav_msgs/Odometry``
    *body* is ``child_frame_id``, for the other types the frame the publisher estimates.
    """

    topic: str
    frame: str
    body: str
    samples: tuple[TfSample, ...]

    def at(self, t_ns: int) -> Matrix:
        stamps = [s.stamp_ns for s in self.samples]
        at = bisect.bisect_left(stamps, t_ns)
        if at < len(stamps) and stamps[at] == t_ns:
            return self.samples[at].matrix()
        if at == 0 or at == len(stamps):
            raise ExtrapolationError(f"{self.topic} at {t_ns}: outside [{stamps[0]}, {stamps[-1]}]")
        a, b = self.samples[at - 1], self.samples[at]
        fraction = (t_ns - a.stamp_ns) / (b.stamp_ns - a.stamp_ns)
        return interpolate(a.translation, a.rotation, b.translation, b.rotation, fraction)


@dataclass(frozen=True, slots=True)
class CameraTruth:
    """One camera: its topics, optical frame, calibration, stamps and source pixels."""

    name: str
    topic: str
    info_topic: str
    frame: str
    payload: str
    width: int
    height: int
    #: Row-major 3×3 camera matrix and plumb_bob distortion, as published.
    k: tuple[float, ...]
    d: tuple[float, ...]
    stamps: tuple[int, ...]
    #: Stamps of the frames a decoder can show (video: from the first keyframe on).
    decodable: tuple[int, ...]
    #: Stamps of video keyframes (empty for still images).
    keyframes: tuple[int, ...]
    source: Callable[[int], NDArray[np.uint8]] = field(repr=False, compare=False)
    #: PNG / JPEG cameras: the compressed bytes of frame *index* as written (else None).
    still: Callable[[int], bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def intrinsic(self) -> list[list[float]]:
        """K as nuScenes' ``camera_intrinsic`` holds it (3 rows of 3)."""
        return [list(self.k[0:3]), list(self.k[3:6]), list(self.k[6:9])]

    def index(self, t_ns: int) -> int:
        at = bisect.bisect_left(self.stamps, t_ns)
        if at == len(self.stamps) or self.stamps[at] != t_ns:
            near = self.stamps[max(0, at - 1) : at + 1]
            raise KeyError(f"camera {self.name!r} has no frame stamped {t_ns}; nearest {near}")
        return at


@dataclass(frozen=True, slots=True)
class FixTruth:
    """One published GNSS fix (WGS 84 degrees, metres above the ellipsoid)."""

    stamp_ns: int
    latitude: float
    longitude: float
    altitude: float


@dataclass(frozen=True, slots=True)
class Truth:
    """Everything a test of an export of the recording checks against.

    ``stamps``/``log_times``: per topic, the header stamps and recorder log times of the
    messages in the file, in file order (``/tf`` messages carrying several transforms count
    once). ``origin``: the WGS 84 point that ``map``'s origin sits on (GNSS scenarios).
    """

    tf: TransformBuffer
    cameras: dict[str, CameraTruth]
    pose_topics: dict[str, PoseTopicTruth]
    stamps: dict[str, tuple[int, ...]]
    log_times: dict[str, tuple[int, ...]]
    fixes: tuple[FixTruth, ...] = ()
    origin: tuple[float, float, float] | None = None

    def pose(self, world_frame: str, vehicle_frame: str, t_ns: int) -> Matrix:
        """The vehicle frame's pose in the world frame at *t_ns* (a 4×4 matrix)."""
        return self.tf.lookup(world_frame, vehicle_frame, t_ns)

    def extrinsic(self, vehicle_frame: str, camera_frame: str) -> Matrix:
        """The camera frame's pose in the vehicle frame, composed of static edges only."""
        return self.tf.static_lookup(vehicle_frame, camera_frame)

    def camera(self, name: str) -> CameraTruth:
        if name not in self.cameras:
            raise KeyError(f"no camera {name!r}: {sorted(self.cameras)}")
        return self.cameras[name]

    def pixels(self, camera: str, t_ns: int) -> NDArray[np.uint8]:
        """The source pixels of *camera*'s frame stamped *t_ns*: H×W×3 RGB, or H×W for mono."""
        cam = self.camera(camera)
        return cam.source(cam.index(t_ns))

    def still_bytes(self, camera: str, t_ns: int) -> bytes:
        """The PNG or JPEG bytes of *camera*'s frame stamped *t_ns*, as in the recording."""
        cam = self.camera(camera)
        if cam.still is None:
            raise KeyError(f"camera {camera!r} sends {cam.payload}, not still images")
        return cam.still(cam.index(t_ns))

    def ego_pose(
        self, world_frame: str, vehicle_frame: str, t_ns: int
    ) -> tuple[list[float], list[float]]:
        """:meth:`pose` as nuScenes' ``ego_pose`` row holds it: translation, rotation w x y z."""
        pose = self.pose(world_frame, vehicle_frame, t_ns)
        return [float(v) for v in pose[:3, 3]], list(quaternion_wxyz(pose))

    def topic_pose(self, topic: str, vehicle_frame: str, t_ns: int) -> Matrix:
        """The pose a pose topic gives the vehicle frame in the topic's frame at *t_ns*.

        The topic's samples are interpolated (lerp + slerp) at *t_ns* and composed with
        the static chain from the topic's body frame to *vehicle_frame*.
        """
        pose_topic = self.pose_topics[topic]
        return pose_topic.at(t_ns) @ self.tf.static_lookup(pose_topic.body, vehicle_frame)
