"""What a generated robot recording holds: its cameras, frames, clocks and damage, as records.

A :class:`Scenario` describes one robot run independently of the container it is written to
(:mod:`.recording` writes it as a ROS 1 bag, a ROS 2 bag in MCAP or sqlite3 storage, a
Foxglove MCAP file or a plain ROS 2 MCAP file). :mod:`.scenarios` names the ones tests use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

__all__ = [
    "COMPRESSED_PAYLOADS",
    "EPOCH_START_NS",
    "RAW_ENCODINGS",
    "SIM_START_NS",
    "VIDEO_PAYLOADS",
    "WALL_CLOCK_OFFSET_NS",
    "CameraSpec",
    "Clock",
    "Payload",
    "Scenario",
    "StaticEdge",
]

#: How a camera's frames travel: a ``sensor_msgs/Image`` / ``foxglove.RawImage`` encoding, a
#: still-image format (``CompressedImage``) or a video codec (``CompressedVideo``).
Payload: TypeAlias = Literal[
    "rgb8",
    "bgr8",
    "rgba8",
    "bgra8",
    "mono8",
    "mono16",
    "bayer_rggb8",
    "bayer_bggr8",
    "bayer_gbrg8",
    "bayer_grbg8",
    "yuv422",
    "uyvy",
    "yuyv",
    "yuv422_yuy2",
    "png",
    "jpeg",
    "h264",
    "h265",
]
RAW_ENCODINGS: Final = (
    "rgb8",
    "bgr8",
    "rgba8",
    "bgra8",
    "mono8",
    "mono16",
    "bayer_rggb8",
    "bayer_bggr8",
    "bayer_gbrg8",
    "bayer_grbg8",
    "yuv422",
    "uyvy",
    "yuyv",
    "yuv422_yuy2",
)
COMPRESSED_PAYLOADS: Final = ("png", "jpeg")
VIDEO_PAYLOADS: Final = ("h264", "h265")

#: ``epoch``: stamps and log times in UTC nanoseconds (a real robot). ``sim``: both in
#: simulation time since the simulator started (``ros2 bag record --use-sim-time`` in Gazebo).
#: ``sim_wall_log``: simulation stamps in the headers, wall-clock log times (a Gazebo run
#: recorded without ``--use-sim-time``, the common case).
Clock: TypeAlias = Literal["epoch", "sim", "sim_wall_log"]

#: 2024-06-01 12:00:00.123457 UTC: daytime, not a round second, on a whole microsecond (the
#: camera stamps are whole microseconds, as the nuScenes tables count them).
EPOCH_START_NS: Final = 1_717_243_200_123_457_000
#: 31.24 s after Gazebo started (header stamps well under 10⁹ s).
SIM_START_NS: Final = 31_240_000_000
#: Wall clock of the ``sim_wall_log`` recorder at simulation time 0.
WALL_CLOCK_OFFSET_NS: Final = 1_717_240_000_000_000_000


@dataclass(frozen=True, slots=True)
class StaticEdge:
    """A ``/tf_static`` transform: *child*'s pose in *parent* (metres; roll, pitch, yaw in rad)."""

    parent: str
    child: str
    translation: tuple[float, float, float]
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class CameraSpec:
    """One camera: its topics, the static chain from ``base_link`` to its optical frame, its stream.

    The last *driver_edges* edges of *mount* are published by the camera driver in a
    ``/tf_static`` message of its own (as depthai-ros and the OAK-D URDF do); the others come
    from robot_state_publisher.
    """

    name: str
    topic: str
    info_topic: str
    payload: Payload
    mount: tuple[StaticEdge, ...]
    rate_hz: float = 15.0
    width: int = 80
    height: int = 60
    latency_ms: float = 25.0
    driver: str = "camera_driver"
    driver_edges: int = 1
    #: Bytes of padding at the end of each raw row (``step = width * bpp + padding``).
    step_padding: int = 0
    #: ``is_bigendian`` of 16-bit raw images.
    big_endian: bool = False
    #: Frames per group of pictures of a video camera (a keyframe every this many frames).
    keyframe_interval: int = 30
    #: Video frames the camera had encoded before the recording started: the recording
    #: opens mid-GOP with frames that cannot be decoded until the next keyframe.
    gop_phase: int = 0
    seed: int = 0

    @property
    def optical_frame(self) -> str:
        return self.mount[-1].child


@dataclass(frozen=True, slots=True)
class Scenario:
    """A robot run: duration, clock, frame layout, cameras, pose topics and damage.

    Times: the cameras record from the start stamp for *duration_s*; odometry, amcl and GNSS
    start a second earlier and stop a second later (so every camera time has a pose), and
    ``/tf_static`` is published 2 s before the start.
    """

    name: str
    cameras: tuple[CameraSpec, ...]
    duration_s: float = 26.0
    clock: Clock = "epoch"
    #: The frame odometry moves (``odom → odom_child`` dynamic); the other base frame hangs
    #: below or above it by a static edge.
    odom_child: Literal["base_link", "base_footprint"] = "base_link"
    #: amcl: ``map → odom`` on ``/tf`` at 10 Hz and ``/amcl_pose``.
    amcl: bool = True
    #: amcl's ``transform_tolerance``: ``map → odom`` is stamped this far in the future.
    transform_tolerance_s: float = 0.5
    gnss: bool = False
    #: A ``geometry_msgs/msg/PoseStamped`` topic of the base in ``map`` at 20 Hz.
    pose_stamped_topic: str | None = None
    #: Roll/pitch amplitude of the base (degrees): 0 for a robot on a flat floor.
    tilt_deg: float = 0.0
    #: Republish the first camera's mount edge, corrected, this many seconds after the start
    #: (the latest static transform wins).
    static_update_s: float | None = None
    #: Topics whose MCAP Schema record has an empty definition (plain ROS 2 MCAP only).
    empty_schema_topics: tuple[str, ...] = ()
    #: ROS 1 only: ``unindexed`` is a recorder killed mid-run (chunks, no index);
    #: ``truncated`` a finished bag cut short (the header points past the end).
    ros1_damage: Literal["none", "unindexed", "truncated"] = "none"
    extra_static: tuple[StaticEdge, ...] = field(default=())

    @property
    def start_ns(self) -> int:
        return EPOCH_START_NS if self.clock == "epoch" else SIM_START_NS

    @property
    def end_ns(self) -> int:
        return self.start_ns + round(self.duration_s * 1e9)

    def log_time(self, stamp_ns: int) -> int:
        """The recorder's clock at a moment whose header stamp is *stamp_ns*."""
        return stamp_ns + WALL_CLOCK_OFFSET_NS if self.clock == "sim_wall_log" else stamp_ns

    def camera(self, name: str) -> CameraSpec:
        for cam in self.cameras:
            if cam.name == name:
                return cam
        raise KeyError(f"scenario {self.name!r} has no camera {name!r}: {self.camera_names}")

    @property
    def camera_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.cameras)
