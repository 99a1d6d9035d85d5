"""The sample robot: its cameras, its motion, its transform tree and its frames.

Everything here is a pure function of the parameters (no file is touched): the writer
(:mod:`.writer`) serializes what these methods return, and tests compare a build against
them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import did_you_mean
from dataset_devkit.nuscenes.common.geometry import Transform, compose, invert, quat_mul
from dataset_devkit.nuscenes.options import CameraTopicConfig, IngestConfig, PoseSourceConfig
from dataset_devkit.nuscenes.samples_robot.textures import (
    TEXTURE_ENCODINGS,
    bytes_per_pixel,
    encoded_texture,
    frame_offset,
    rgb_texture,
)

__all__ = [
    "BASE_FRAME",
    "FOOTPRINT_FRAME",
    "ODOM_FRAME",
    "ROBOT_CAMERAS",
    "ROBOT_ENCODINGS",
    "ROBOT_STORAGES",
    "WORLD_FRAME",
    "RobotCamera",
    "SampleRobot",
    "robot_cameras",
    "robot_ingest_config",
]

#: The ``sensor_msgs/msg/Image`` encodings a camera can publish.
ROBOT_ENCODINGS: Final = TEXTURE_ENCODINGS
#: ``mcap`` and ``sqlite3``: a ROS 2 bag folder; ``ros1``: a ROS 1 ``.bag`` file.
ROBOT_STORAGES: Final = ("mcap", "sqlite3", "ros1")
#: REP-105 frame names.
WORLD_FRAME: Final = "map"
ODOM_FRAME: Final = "odom"
BASE_FRAME: Final = "base_link"
FOOTPRINT_FRAME: Final = "base_footprint"
#: base_link sits this far above the ground (base_footprint).
_BASE_HEIGHT: Final = 0.1
#: The camera frame to optical frame rotation (z forward, x right, y down), wxyz.
_OPTICAL: Final = (0.5, -0.5, 0.5, -0.5)


@dataclass(frozen=True, slots=True)
class RobotCamera:
    """One camera of the robot: its topics, the nuScenes channel it suits, and its mount.

    Its frames are ``<name>_mount_link`` (on the body, turned by *yaw_deg*), ``<name>_link``
    (tilted 10 degrees down), ``<name>_camera_frame`` and ``<name>_camera_optical_frame``
    (the images' ``frame_id``).
    """

    name: str
    topic: str
    info_topic: str
    #: The official nuScenes channel of a camera looking this way (for ``[[ingest.cameras]]``).
    channel: str
    #: Where it looks, counter-clockwise from the robot's forward axis.
    yaw_deg: float
    #: The ``sensor_msgs/msg/Image`` encoding of its frames (:data:`ROBOT_ENCODINGS`).
    encoding: str = "rgb8"

    @property
    def optical_frame(self) -> str:
        """The frame id of its images and calibration."""
        return f"{self.name}_camera_optical_frame"


#: The cameras :func:`robot_cameras` takes from, in order: an OAK-D at the front first.
ROBOT_CAMERAS: Final = (
    RobotCamera(
        name="oakd_rgb",
        topic="/oakd/rgb/preview/image_raw",
        info_topic="/oakd/rgb/preview/camera_info",
        channel="CAM_FRONT",
        yaw_deg=0.0,
    ),
    RobotCamera(
        name="rear",
        topic="/rear_camera/image_raw",
        info_topic="/rear_camera/camera_info",
        channel="CAM_BACK",
        yaw_deg=180.0,
    ),
    RobotCamera(
        name="front_left",
        topic="/front_left_camera/image_raw",
        info_topic="/front_left_camera/camera_info",
        channel="CAM_FRONT_LEFT",
        yaw_deg=55.0,
    ),
    RobotCamera(
        name="front_right",
        topic="/front_right_camera/image_raw",
        info_topic="/front_right_camera/camera_info",
        channel="CAM_FRONT_RIGHT",
        yaw_deg=-55.0,
    ),
    RobotCamera(
        name="back_left",
        topic="/back_left_camera/image_raw",
        info_topic="/back_left_camera/camera_info",
        channel="CAM_BACK_LEFT",
        yaw_deg=110.0,
    ),
    RobotCamera(
        name="back_right",
        topic="/back_right_camera/image_raw",
        info_topic="/back_right_camera/camera_info",
        channel="CAM_BACK_RIGHT",
        yaw_deg=-110.0,
    ),
)


def robot_cameras(count: int = 2, *, encoding: str = "rgb8") -> tuple[RobotCamera, ...]:
    """The first *count* cameras of :data:`ROBOT_CAMERAS`, all publishing *encoding*."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 6:
        raise ConfigError(f"cameras: expected 1 to 6 cameras, found {count!r}", key="cameras")
    _check_encoding(encoding, "encoding")
    return tuple(dataclasses.replace(c, encoding=encoding) for c in ROBOT_CAMERAS[:count])


def _check_encoding(encoding: str, key: str) -> None:
    if encoding not in ROBOT_ENCODINGS:
        raise ConfigError(
            f"{key}: {encoding!r} is not an encoding the sample robot writes"
            + did_you_mean(str(encoding), ROBOT_ENCODINGS, known="expected one of"),
            key=key,
        )


def _positive(value: object, key: str, *, whole: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        ok = False
    else:
        ok = math.isfinite(value) and value > 0
    if not ok:
        kind = "int" if whole else "float"
        raise ConfigError(f"{key}: expected a positive {kind}, found {value!r}", key=key)


@dataclass(frozen=True, slots=True)
class SampleRobot:
    """The recording: its length, camera rate, frame size, cameras and container.

    Frame *k* of camera *i* is stamped ``start_ns + round(k * 1e6 / fps)`` microseconds plus
    ``3 i`` ms (whole microseconds, as the exported timestamps are). Transforms and
    odometry begin before the first frame and end after the last, so every frame has a pose.
    """

    duration_s: float = 25.0
    fps: float = 15.0
    width: int = 320
    height: int = 240
    cameras: tuple[RobotCamera, ...] = field(default_factory=robot_cameras)
    #: :data:`ROBOT_STORAGES`.
    storage: str = "mcap"
    #: 2023-11-14 22:13:20 UTC: a wall-clock start (not simulation time).
    start_ns: int = 1_700_000_000_000_000_000
    odom_hz: float = 50.0
    amcl_hz: float = 10.0

    def __post_init__(self) -> None:
        for key in ("duration_s", "fps", "odom_hz", "amcl_hz"):
            _positive(getattr(self, key), key)
        for key in ("width", "height"):
            value = getattr(self, key)
            _positive(value, key, whole=True)
            if value % 2:  # Bayer tiles and 4:2:2 pairs need even sizes
                raise ConfigError(
                    f"{key}: expected an even number of pixels, found {value}", key=key
                )
        if self.fps > 1000 or self.odom_hz > 1000 or self.amcl_hz > 1000:
            raise ConfigError("fps, odom_hz and amcl_hz must be at most 1000", key="fps")
        if not isinstance(self.cameras, tuple) or not self.cameras:
            raise ConfigError(
                f"cameras: expected a non-empty tuple of RobotCamera, found {self.cameras!r}",
                key="cameras",
            )
        for key in ("name", "topic", "info_topic"):
            values = [getattr(c, key) for c in self.cameras]
            if len(set(values)) != len(values):
                raise ConfigError(f"cameras: two cameras share a {key}: {values}", key="cameras")
        for i, camera in enumerate(self.cameras):
            _check_encoding(camera.encoding, f"cameras[{i}].encoding")
        if self.storage not in ROBOT_STORAGES:
            raise ConfigError(
                f"storage: {self.storage!r} is not a container the sample robot writes"
                + did_you_mean(str(self.storage), ROBOT_STORAGES, known="expected one of"),
                key="storage",
            )
        if not isinstance(self.start_ns, int) or self.start_ns % 1000 or self.start_ns < 10**18:
            raise ConfigError(
                f"start_ns: expected whole microseconds after 2001-09-09, found {self.start_ns!r}",
                key="start_ns",
            )

    @property
    def frame_count(self) -> int:
        """Frames per camera."""
        return int(self.duration_s * self.fps + 1e-9)

    def frame_stamp(self, camera: int, k: int) -> int:
        """The header stamp (ns) of frame *k* of camera number *camera* (3 ms apart)."""
        return self.start_ns + (round(k * 1e6 / self.fps) + 3000 * camera) * 1000

    # ------------------------------------------------------------------ motion
    def base_pose(self, t_ns: int) -> Transform:
        """``base_link`` in ``map`` at *t_ns* on the continuous path (a figure eight)."""
        t = self._seconds(t_ns)
        x, y, heading, _, _ = _path(t)
        pitch, roll = 0.02 * math.sin(0.9 * t), 0.015 * math.sin(1.3 * t)
        rotation = quat_mul(quat_mul(_axis(2, heading), _axis(1, pitch)), _axis(0, roll))
        return ((x, y, _BASE_HEIGHT), rotation)

    def correction(self, t_ns: int) -> Transform:
        """amcl's ``map -> odom`` at *t_ns*: about 17 degrees and half a metre, drifting."""
        t = self._seconds(t_ns)
        x = 0.42 + 0.15 * math.sin(2 * math.pi * t / 240)
        y = -0.31 + 0.10 * math.sin(2 * math.pi * t / 310)
        return ((x, y, 0.0), _axis(2, 0.2914 + 0.04 * math.sin(2 * math.pi * t / 200)))

    def odometry(self, t_ns: int) -> Transform:
        """``odom -> base_link`` at *t_ns*: the path seen through amcl's correction."""
        return compose(invert(self.correction(t_ns)), self.base_pose(t_ns))

    def twist(self, t_ns: int) -> tuple[float, float]:
        """``(forward speed m/s, yaw rate rad/s)`` of base_link at *t_ns*."""
        _, _, _, speed, yaw_rate = _path(self._seconds(t_ns))
        return (speed, yaw_rate)

    def static_edges(self) -> list[tuple[str, str, Transform]]:
        """``(parent, child, transform)`` of every ``/tf_static`` edge, in message order."""
        edges: list[tuple[str, str, Transform]] = [
            (BASE_FRAME, FOOTPRINT_FRAME, ((0.0, 0.0, -_BASE_HEIGHT), (1.0, 0.0, 0.0, 0.0)))
        ]
        for camera in self.cameras:
            yaw = math.radians(camera.yaw_deg)
            mount = (0.12 * math.cos(yaw), 0.12 * math.sin(yaw), 0.25)
            n = camera.name
            edges += [
                (BASE_FRAME, f"{n}_mount_link", (mount, _axis(2, yaw))),
                (f"{n}_mount_link", f"{n}_link", ((0.02, 0.0, 0.03), _axis(1, math.radians(10)))),
                (f"{n}_link", f"{n}_camera_frame", ((0.0, 0.0375, 0.0), (1.0, 0.0, 0.0, 0.0))),
                (f"{n}_camera_frame", camera.optical_frame, ((0.0, 0.0, 0.0), _OPTICAL)),
            ]
        return edges

    def intrinsic(self) -> list[float]:
        """K, row-major: a 69 degree horizontal field of view, square pixels."""
        f = self.width / (2 * math.tan(math.radians(69) / 2))
        return [f, 0.0, (self.width - 1) / 2, 0.0, f, (self.height - 1) / 2, 0.0, 0.0, 1.0]

    # ------------------------------------------------------------------ pixels
    def pixels(self, camera: int, k: int) -> npt.NDArray[np.uint8]:
        """What frame *k* of camera number *camera* shows: ``(height, width, 3)`` RGB.

        A read-only view of a cached texture. Its message holds exactly these pixels in
        rgb8, bgr8, rgba8 and bgra8; their BT.601 luma in mono8 (and x257 in mono16); a
        Bayer mosaic or 4:2:2 YUV of them otherwise.
        """
        texture = rgb_texture(self.width, self.height, self.cameras[camera].name)
        x, y = frame_offset(self.width, k)
        return texture[y : y + self.height, x : x + self.width]

    def frame_data(self, camera: int, k: int) -> npt.NDArray[np.uint8]:
        """The ``data`` of frame *k*'s Image message: its rows in the camera's encoding."""
        encoding = self.cameras[camera].encoding
        texture = encoded_texture(self.width, self.height, self.cameras[camera].name, encoding)
        x, y = frame_offset(self.width, k)
        bpp = bytes_per_pixel(encoding)
        rows = texture[y : y + self.height, x * bpp : (x + self.width) * bpp]
        return np.ascontiguousarray(rows).reshape(-1)

    def _seconds(self, t_ns: int) -> float:
        return (t_ns - self.start_ns) / 1e9


def _axis(axis: int, angle: float) -> tuple[float, float, float, float]:
    """The wxyz rotation by *angle* about x (0), y (1) or z (2)."""
    out = [math.cos(angle / 2), 0.0, 0.0, 0.0]
    out[axis + 1] = math.sin(angle / 2)
    return (out[0], out[1], out[2], out[3])


#: The figure eight: this many metres wide, one lap in this many seconds, centred here.
_LOOP_M, _LAP_S, _CENTRE = 3.0, 90.0, (2.0, -1.0)


def _path(t: float) -> tuple[float, float, float, float, float]:
    """``(x, y, heading, speed, yaw rate)`` at *t* seconds: Gerono's lemniscate."""
    w = 2 * math.pi / _LAP_S
    theta = w * t + 0.3
    x = _CENTRE[0] + _LOOP_M * math.sin(theta)
    y = _CENTRE[1] + _LOOP_M / 2 * math.sin(2 * theta)
    dx, dy = _LOOP_M * w * math.cos(theta), _LOOP_M * w * math.cos(2 * theta)
    ddx, ddy = -_LOOP_M * w * w * math.sin(theta), -2 * _LOOP_M * w * w * math.sin(2 * theta)
    speed2 = dx * dx + dy * dy
    return (x, y, math.atan2(dy, dx), math.sqrt(speed2), (dx * ddy - dy * ddx) / speed2)


def robot_ingest_config(
    robot: SampleRobot, *, vehicle_frame: str = FOOTPRINT_FRAME, world_frame: str = WORLD_FRAME
) -> IngestConfig:
    """``[ingest]`` for a build of *robot*: poses from tf, each camera on its channel."""
    return IngestConfig(
        vehicle_frame=vehicle_frame,
        pose=PoseSourceConfig(source="tf", world_frame=world_frame),
        cameras=tuple(
            CameraTopicConfig(topic=c.topic, channel=c.channel, calibration_topic=c.info_topic)
            for c in robot.cameras
        ),
    )
