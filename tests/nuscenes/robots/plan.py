"""A scenario's messages in recorder order, and the ground truth of exactly those messages.

Each publisher is one stream with its own clock: odometry on ``/tf`` and ``/odom`` at 50 Hz,
amcl's future-dated ``map → odom`` at 10 Hz, the wheel joints at 20 Hz, each camera at its
rate with a little jitter, ``/tf_static`` once per publisher. Log times trail the header
stamps by each publisher's latency; the streams are merged by log time as a recorder
receives them. Images are made lazily, so a recording is written in bounded memory.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tests.nuscenes.robots.geometry import Matrix, euler_xyzw, quaternions_xyzw
from tests.nuscenes.robots.images import (
    compressed_formats,
    encode_compressed,
    encode_raw,
    gray,
    scene_rgb,
)
from tests.nuscenes.robots.messages import (
    CameraInfoMessage,
    CompressedImageMessage,
    Event,
    FixMessage,
    Message,
    OdometryMessage,
    PoseMessage,
    RawImageMessage,
    Role,
    TfMessage,
    TopicPlan,
    VideoMessage,
)
from tests.nuscenes.robots.motion import Motion, edge_matrix, robot_static_edges
from tests.nuscenes.robots.spec import (
    COMPRESSED_PAYLOADS,
    RAW_ENCODINGS,
    VIDEO_PAYLOADS,
    CameraSpec,
    Scenario,
    StaticEdge,
)
from tests.nuscenes.robots.truth import (
    CameraTruth,
    FixTruth,
    PoseTopicTruth,
    TfSample,
    TransformBuffer,
    Truth,
)
from tests.nuscenes.robots.video import VideoPacket, encode_video

__all__ = ["GNSS_ORIGIN", "Plan", "clear_caches", "enu_to_wgs84", "plan"]

_MS = 1_000_000
#: ``map``'s origin on the earth (GNSS scenarios: map is a local east-north-up frame).
GNSS_ORIGIN = (48.262_65, 11.668_01, 481.0)
_ODOM_HZ, _AMCL_HZ, _JOINTS_HZ, _FIX_HZ, _POSE_HZ = 50.0, 10.0, 10.0, 5.0, 20.0


def _jitter(stream: str, k: int, amplitude_ns: int) -> int:
    """A deterministic pseudo-random offset in [-amplitude, amplitude] (same on every platform)."""
    digest = hashlib.blake2b(f"{stream}/{k}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % (2 * amplitude_ns + 1) - amplitude_ns


def _clock(
    stream: str, start_ns: int, end_ns: int, rate_hz: float, jitter_ns: int, quantum_ns: int = 1
) -> list[int]:
    """Stamps of a periodic publisher between *start_ns* and *end_ns*, jittered."""
    period = 1e9 / rate_hz
    out = []
    k = 0
    while (base := start_ns + round(k * period)) <= end_ns:
        t = base + _jitter(stream, k, jitter_ns)
        out.append(t - t % quantum_ns)
        k += 1
    return out


def _samples(
    stamps: list[int], parent: str, child: str, transforms: list[Matrix]
) -> list[TfSample]:
    """The published samples of an edge (quaternions from the matrices in one batch)."""
    return [
        TfSample(stamp, parent, child, (float(m[0, 3]), float(m[1, 3]), float(m[2, 3])), q)
        for stamp, m, q in zip(stamps, transforms, quaternions_xyzw(transforms), strict=True)
    ]


def _static_sample(stamp: int, edge: StaticEdge) -> TfSample:
    return TfSample(stamp, edge.parent, edge.child, edge.translation, euler_xyzw(*edge.rpy))


@functools.cache
def _to_ecef() -> Any:
    """pyproj's WGS 84 geodetic (EPSG:4979) → earth-centred (EPSG:4978) transformer."""
    from pyproj import Transformer

    return Transformer.from_crs("EPSG:4979", "EPSG:4978", always_xy=True)


def enu_to_wgs84(east: float, north: float, up: float) -> tuple[float, float, float]:
    """A local east-north-up point as WGS 84 latitude, longitude, ellipsoidal height."""
    lat0, lon0, h0 = GNSS_ORIGIN
    to_ecef = _to_ecef()
    x0, y0, z0 = to_ecef.transform(lon0, lat0, h0)
    phi, lam = math.radians(lat0), math.radians(lon0)
    rot = np.array(
        [
            [-math.sin(lam), -math.sin(phi) * math.cos(lam), math.cos(phi) * math.cos(lam)],
            [math.cos(lam), -math.sin(phi) * math.sin(lam), math.cos(phi) * math.sin(lam)],
            [0.0, math.cos(phi), math.sin(phi)],
        ]
    )
    dx, dy, dz = rot @ np.array([east, north, up])
    lon, lat, h = to_ecef.transform(x0 + dx, y0 + dy, z0 + dz, direction="INVERSE")
    return float(lat), float(lon), float(h)


def _intrinsics(cam: CameraSpec) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """K, D (plumb_bob) and P of a ~69° horizontal field of view camera, as calibrated."""
    fx = cam.width / (2 * math.tan(math.radians(34.5))) + 0.37 * (cam.seed % 3)
    fy = fx * 1.0013
    cx, cy = cam.width / 2 - 0.5 + 0.41, cam.height / 2 - 0.5 - 0.23
    k = (fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0)
    d = (-0.0412, 0.0123, 0.00031, -0.00022, 0.0)
    p = (fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0)
    return k, d, p


_Stream = Iterator[tuple[int, str, Message]]


def _tagged(
    index: int, topic: str, stream: _Stream
) -> Iterator[tuple[int, int, str, str, Message]]:
    for log, publisher, message in stream:
        yield log, index, topic, publisher, message


@dataclass(frozen=True, slots=True)
class Plan:
    """A scenario made concrete: its topics, its messages (lazily) and their truth."""

    scenario: Scenario
    topics: tuple[TopicPlan, ...]
    truth: Truth
    _streams: tuple[tuple[str, Callable[[], _Stream]], ...]

    def events(self) -> Iterator[Event]:
        """Every message, merged by log time (ties keep stream order), as a recorder logs them."""
        streams = [_tagged(i, topic, make()) for i, (topic, make) in enumerate(self._streams)]
        for log, _, topic, pub, msg in heapq.merge(*streams, key=lambda e: (e[0], e[1])):
            yield Event(log, topic, pub, msg)

    def topic(self, name: str) -> TopicPlan:
        return next(t for t in self.topics if t.topic == name)


def _camera_source(
    cam: CameraSpec, stamps: list[int], start_ns: int
) -> Callable[[int], NDArray[np.uint8]]:
    """Frame *index*'s source pixels (negative: frames before the recording started)."""
    mono = cam.payload in ("mono8", "mono16")

    def source(index: int) -> NDArray[np.uint8]:
        stamp = stamps[index] if index >= 0 else stamps[0] + round(index * 1e9 / cam.rate_hz)
        return _pixels(cam.seed, stamp - start_ns, cam.width, cam.height, mono)

    return source


@functools.lru_cache(maxsize=2048)
def _pixels(seed: int, rel_ns: int, width: int, height: int, mono: bool) -> NDArray[np.uint8]:
    """A camera's source frame, shared by every container the scenario is written to.

    Read-only, as it is cached: a writer of one container cannot change another's pixels.
    """
    rgb = scene_rgb(seed, rel_ns / 1e9, width, height)
    out = gray(rgb) if mono else rgb
    out.setflags(write=False)
    return out


_VIDEO_CACHE: dict[tuple[CameraSpec, tuple[int, ...]], tuple[VideoPacket, ...]] = {}


def _video(
    cam: CameraSpec, rel: tuple[int, ...], source: Callable[[int], NDArray[np.uint8]]
) -> tuple[VideoPacket, ...]:
    """The camera's packets, encoded once per session (a stream is ~100 KB).

    The camera encoded ``gop_phase`` frames before the recording started: they are made,
    encoded and dropped by the caller, so the recording opens mid-GOP.
    """
    key = (cam, rel)
    if key not in _VIDEO_CACHE:
        frames = (source(i) for i in range(-cam.gop_phase, len(rel)))
        _VIDEO_CACHE[key] = tuple(
            encode_video(
                cam.payload,
                frames,
                width=cam.width,
                height=cam.height,
                rate_hz=cam.rate_hz,
                keyframe_interval=cam.keyframe_interval,
            )
        )
    return _VIDEO_CACHE[key]


@functools.lru_cache(maxsize=2048)
def _still(seed: int, rel_ns: int, width: int, height: int, mono: bool, payload: str) -> bytes:
    return encode_compressed(_pixels(seed, rel_ns, width, height, mono), payload)


def _camera_stamps(cam: CameraSpec, start_ns: int, end_ns: int) -> list[int]:
    # µs-aligned stamps (the nuScenes tables count microseconds) with ±1 ms jitter; cameras
    # are not synchronized with each other.
    offset = (cam.seed % 7) * 3_300_000
    return _clock(f"cam/{cam.name}", start_ns + offset, end_ns, cam.rate_hz, _MS, 1000)


@functools.lru_cache(maxsize=32)
def plan(scenario: Scenario) -> Plan:
    """Lay out every publisher of *scenario* and compute the truth of what they publish.

    Cached: a scenario written to several containers is planned once, and every container
    gets the same messages and the same :class:`Truth` object.
    """
    motion = Motion(scenario)
    s0, s1 = scenario.start_ns, scenario.end_ns

    def rel(t_ns: int) -> float:
        return (t_ns - s0) / 1e9

    log = scenario.log_time
    child = scenario.odom_child
    topics: list[TopicPlan] = []
    eager: list[tuple[str, list[tuple[int, str, Message]]]] = []

    # /tf_static: robot_state_publisher first, then each camera driver; later a correction.
    static_robot = list(robot_static_edges(scenario))
    drivers: dict[str, list[StaticEdge]] = {}
    for cam in scenario.cameras:
        split = len(cam.mount) - cam.driver_edges
        static_robot += [e for e in cam.mount[:split] if e not in static_robot]
        drivers.setdefault(cam.driver, []).extend(cam.mount[split:])
    tf_static: list[tuple[int, str, Message]] = []
    stamp = s0 - 2000 * _MS
    tf_static.append(
        (
            log(stamp + _MS),
            "robot_state_publisher",
            TfMessage(tuple(_static_sample(stamp, e) for e in static_robot)),
        )
    )
    for i, (driver, edges) in enumerate(drivers.items()):
        stamp = s0 - 1500 * _MS + i * 100 * _MS
        tf_static.append(
            (log(stamp + _MS), driver, TfMessage(tuple(_static_sample(stamp, e) for e in edges)))
        )
    if scenario.static_update_s is not None:
        edge = scenario.cameras[0].mount[0]
        fixed = StaticEdge(
            edge.parent,
            edge.child,
            (edge.translation[0] + 0.005, edge.translation[1] - 0.003, edge.translation[2]),
            (edge.rpy[0], edge.rpy[1] + math.radians(0.5), edge.rpy[2]),
        )
        stamp = s0 + round(scenario.static_update_s * 1e9)
        tf_static.append(
            (log(stamp + _MS), "camera_calibration", TfMessage((_static_sample(stamp, fixed),)))
        )
    publishers = tuple(dict.fromkeys(p for _, p, _ in tf_static))
    topics.append(TopicPlan("/tf_static", "tf_static", publishers, "latched"))
    eager.append(("/tf_static", tf_static))

    # /tf: wheel odometry, amcl's correction, the wheel joints.
    odom_stamps = _clock("odom", s0 - 1000 * _MS, s1 + 1000 * _MS, _ODOM_HZ, 1 * _MS // 2)
    odom_matrices = [motion.odom_to_child(rel(t)) for t in odom_stamps]
    odom_samples = _samples(odom_stamps, "odom", child, odom_matrices)
    tf_odom: list[tuple[int, str, Message]] = [
        (
            log(s.stamp_ns + 1500_000 + _jitter("odom-log", i, 400_000)),
            "diff_drive_controller",
            TfMessage((s,)),
        )
        for i, s in enumerate(odom_samples)
    ]
    tf_streams = [("/tf", tf_odom)]
    tf_publishers = ["diff_drive_controller"]
    amcl_scans: list[int] = []
    if scenario.amcl:
        amcl_scans = _clock("amcl", s0 - 1200 * _MS, s1 + 1000 * _MS, _AMCL_HZ, 3 * _MS)
        tolerance = round(scenario.transform_tolerance_s * 1e9)
        corrections = _samples(
            [t + tolerance for t in amcl_scans],
            "map",
            "odom",
            [motion.map_to_odom(rel(t)) for t in amcl_scans],
        )
        tf_amcl: list[tuple[int, str, Message]] = [
            (log(t + 30 * _MS + _jitter("amcl-log", i, 2 * _MS)), "amcl", TfMessage((c,)))
            for i, (t, c) in enumerate(zip(amcl_scans, corrections, strict=True))
        ]
        tf_streams.append(("/tf", tf_amcl))
        tf_publishers.append("amcl")
    joint_stamps = _clock("joints", s0 - 1000 * _MS, s1 + 1000 * _MS, _JOINTS_HZ, _MS)
    wheels = [
        _samples(
            joint_stamps,
            "base_link",
            f"wheel_{side}_link",
            [motion.wheel(side, rel(t)) for t in joint_stamps],
        )
        for side in ("left", "right")
    ]
    tf_joints: list[tuple[int, str, Message]] = [
        (log(t + 3 * _MS), "robot_state_publisher", TfMessage((left, right)))
        for t, left, right in zip(joint_stamps, *wheels, strict=True)
    ]
    tf_streams.append(("/tf", tf_joints))
    tf_publishers.append("robot_state_publisher")
    topics.append(TopicPlan("/tf", "tf", tuple(tf_publishers), "reliable"))
    eager += tf_streams

    # Pose topics: /odom with the same samples as odometry's tf, amcl's estimate, a PoseStamped.
    pose_topics: dict[str, PoseTopicTruth] = {}
    odom_msgs: list[tuple[int, str, Message]] = []
    for n, ((log_t, _, _), s) in enumerate(zip(tf_odom, odom_samples, strict=True)):
        linear, angular = _twist(odom_matrices, odom_stamps, n)
        odom_msgs.append(
            (log_t + 50_000, "diff_drive_controller", OdometryMessage(s, linear, angular))
        )
    topics.append(TopicPlan("/odom", "odometry", ("diff_drive_controller",), "reliable"))
    eager.append(("/odom", odom_msgs))
    pose_topics["/odom"] = PoseTopicTruth("/odom", "odom", child, tuple(odom_samples))
    if scenario.amcl:
        amcl_samples = _samples(
            amcl_scans, "map", child, [motion.base_in_map(child, rel(t)) for t in amcl_scans]
        )
        amcl_msgs: list[tuple[int, str, Message]] = [
            (
                log(s.stamp_ns + 31 * _MS + _jitter("amcl-log", i, 2 * _MS)),
                "amcl",
                PoseMessage(s, True),
            )
            for i, s in enumerate(amcl_samples)
        ]
        topics.append(TopicPlan("/amcl_pose", "pose_with_covariance", ("amcl",), "latched"))
        eager.append(("/amcl_pose", amcl_msgs))
        pose_topics["/amcl_pose"] = PoseTopicTruth("/amcl_pose", "map", child, tuple(amcl_samples))
    if scenario.pose_stamped_topic is not None:
        name = scenario.pose_stamped_topic
        pose_stamps = _clock("pose", s0 - 1000 * _MS, s1 + 1000 * _MS, _POSE_HZ, _MS)
        pose_samples = _samples(
            pose_stamps, "map", child, [motion.base_in_map(child, rel(t)) for t in pose_stamps]
        )
        topics.append(TopicPlan(name, "pose", ("localization",), "reliable"))
        eager.append(
            (
                name,
                [
                    (log(s.stamp_ns + 8 * _MS), "localization", PoseMessage(s, False))
                    for s in pose_samples
                ],
            )
        )
        pose_topics[name] = PoseTopicTruth(name, "map", child, tuple(pose_samples))

    # GNSS: the antenna's position, map being east-north-up at GNSS_ORIGIN.
    fixes: list[FixTruth] = []
    if scenario.gnss:
        antenna = edge_matrix(
            next(e for e in robot_static_edges(scenario) if e.child == "gps_link")
        )
        fix_msgs: list[tuple[int, str, Message]] = []
        for t in _clock("fix", s0 - 500 * _MS, s1 + 500 * _MS, _FIX_HZ, 2 * _MS):
            e, n, u = (motion.base_in_map("base_link", rel(t)) @ antenna)[:3, 3]
            lat, lon, alt = enu_to_wgs84(float(e), float(n), float(u))
            fixes.append(FixTruth(t, lat, lon, alt))
            fix_msgs.append(
                (log(t + 40 * _MS), "gnss_driver", FixMessage(t, "gps_link", lat, lon, alt))
            )
        topics.append(TopicPlan("/gps/fix", "fix", ("gnss_driver",), "sensor"))
        eager.append(("/gps/fix", fix_msgs))

    # Cameras: calibration with each frame (same stamp), frames made when written.
    cameras: dict[str, CameraTruth] = {}
    camera_logs: dict[str, list[int]] = {}
    lazy: list[tuple[str, Callable[[], _Stream]]] = []
    for cam in scenario.cameras:
        stamps = _camera_stamps(cam, s0, s1)
        latency = round(cam.latency_ms * _MS)
        logs = [
            log(t + latency + _jitter(f"{cam.name}-log", i, 3 * _MS)) for i, t in enumerate(stamps)
        ]
        k, d, p = _intrinsics(cam)
        frame = cam.optical_frame
        info: list[tuple[int, str, Message]] = [
            (
                lt + 60_000,
                cam.driver,
                CameraInfoMessage(
                    t, frame, cam.width, cam.height, k, d, (1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0), p
                ),
            )
            for lt, t in zip(logs, stamps, strict=True)
        ]
        topics.append(TopicPlan(cam.info_topic, "camera_info", (cam.driver,), "sensor"))
        eager.append((cam.info_topic, info))
        source = _camera_source(cam, stamps, s0)
        camera_logs[cam.topic] = logs
        keyframes: tuple[int, ...] = ()
        decodable = tuple(stamps)
        if cam.payload in VIDEO_PAYLOADS:
            keyed = [
                i for i in range(len(stamps)) if (i + cam.gop_phase) % cam.keyframe_interval == 0
            ]
            keyframes = tuple(stamps[i] for i in keyed)
            decodable = tuple(stamps[keyed[0] :]) if keyed else ()
        role: Role = (
            "raw_image"
            if cam.payload in RAW_ENCODINGS
            else "compressed_image"
            if cam.payload in COMPRESSED_PAYLOADS
            else "video"
        )
        topics.append(TopicPlan(cam.topic, role, (cam.driver,), "sensor"))
        lazy.append((cam.topic, functools.partial(_image_stream, cam, s0, stamps, logs, source)))
        cameras[cam.name] = CameraTruth(
            name=cam.name,
            topic=cam.topic,
            info_topic=cam.info_topic,
            frame=frame,
            payload=cam.payload,
            width=cam.width,
            height=cam.height,
            k=k,
            d=d,
            stamps=tuple(stamps),
            decodable=decodable,
            keyframes=keyframes,
            source=source,
            still=(
                functools.partial(_still_of, cam, stamps, s0)
                if cam.payload in COMPRESSED_PAYLOADS
                else None
            ),
        )

    # The truth: every transform in recorder order (the latest static value wins).
    tf = TransformBuffer()
    ordered = heapq.merge(
        *[_tagged(i, topic, iter(items)) for i, (topic, items) in enumerate(eager)],
        key=lambda e: (e[0], e[1]),
    )
    stamp_lists: dict[str, list[int]] = {t.topic: [] for t in topics}
    log_lists: dict[str, list[int]] = {t.topic: [] for t in topics}
    for lt, _, topic, _, msg in ordered:
        if isinstance(msg, TfMessage):
            for s in msg.transforms:
                tf.add(s, static=topic == "/tf_static")
        stamp_lists[topic].append(_stamp(msg))
        log_lists[topic].append(lt)
    for cam in scenario.cameras:
        stamp_lists[cam.topic] = list(cameras[cam.name].stamps)
        log_lists[cam.topic] = camera_logs[cam.topic]
    truth = Truth(
        tf=tf,
        cameras=cameras,
        pose_topics=pose_topics,
        stamps={k: tuple(v) for k, v in stamp_lists.items()},
        log_times={k: tuple(v) for k, v in log_lists.items()},
        fixes=tuple(fixes),
        origin=GNSS_ORIGIN if scenario.gnss else None,
    )
    all_streams = [(topic, functools.partial(iter, items)) for topic, items in eager] + lazy
    return Plan(scenario, tuple(topics), truth, tuple(all_streams))


def _twist(
    poses: list[Matrix], stamps: list[int], k: int
) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Body-frame velocity at sample *k*, from its neighbours (as a controller estimates it)."""
    a, b = poses[max(k - 1, 0)], poses[min(k + 1, len(poses) - 1)]
    dt = (stamps[min(k + 1, len(poses) - 1)] - stamps[max(k - 1, 0)]) / 1e9
    linear = poses[k][:3, :3].T @ (b[:3, 3] - a[:3, 3]) / dt
    delta = a[:3, :3].T @ b[:3, :3]
    yaw_rate = math.atan2(delta[1, 0], delta[0, 0]) / dt
    return (float(linear[0]), float(linear[1]), float(linear[2])), (0.0, 0.0, yaw_rate)


def _still_of(cam: CameraSpec, stamps: list[int], start_ns: int, index: int) -> bytes:
    mono = cam.payload in ("mono8", "mono16")
    return _still(cam.seed, stamps[index] - start_ns, cam.width, cam.height, mono, cam.payload)


def _stamp(msg: Message) -> int:
    if isinstance(msg, TfMessage):
        return msg.transforms[0].stamp_ns
    if isinstance(msg, OdometryMessage | PoseMessage):
        return msg.pose.stamp_ns
    return msg.stamp_ns


def _image_stream(
    cam: CameraSpec,
    start_ns: int,
    stamps: list[int],
    logs: list[int],
    source: Callable[[int], NDArray[np.uint8]],
) -> _Stream:
    frame = cam.optical_frame
    if cam.payload in VIDEO_PAYLOADS:
        rel = tuple(t - start_ns for t in stamps)
        for packet in _video(cam, rel, source):
            i = packet.index - cam.gop_phase
            if i >= 0:
                msg = VideoMessage(stamps[i], frame, cam.payload, packet.data, packet.keyframe)
                yield logs[i], cam.driver, msg
        return
    for i, (t, lt) in enumerate(zip(stamps, logs, strict=True)):
        pixels = source(i)
        if cam.payload in COMPRESSED_PAYLOADS:
            ros_format, fox_format = compressed_formats(cam.payload, mono=pixels.ndim == 2)
            rel_ns = stamps[i] - start_ns
            data = _still(cam.seed, rel_ns, cam.width, cam.height, pixels.ndim == 2, cam.payload)
            yield lt, cam.driver, CompressedImageMessage(t, frame, ros_format, fox_format, data)
        else:
            raw = encode_raw(
                pixels, cam.payload, step_padding=cam.step_padding, big_endian=cam.big_endian
            )
            yield lt, cam.driver, RawImageMessage(t, frame, raw)


def clear_caches() -> None:
    """Forget every planned scenario, frame, still image and video stream (determinism tests)."""
    plan.cache_clear()
    _pixels.cache_clear()
    _still.cache_clear()
    _VIDEO_CACHE.clear()
