"""The named robot recordings the tests use (any of them can be written in any container).

``NAV2_TURTLEBOT`` is the reference: a TurtleBot 4 running nav2 (REP-105 ``map → odom →
base_link``, ``base_link → base_footprint`` static, a 5-edge OAK-D chain, raw rgb8 and PNG
cameras, no GNSS). The others change one thing each, so a failure names its cause.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Final

from tests.nuscenes.robots.spec import CameraSpec, Scenario, StaticEdge

__all__ = [
    "DEPTHAI_OAKD",
    "EMPTY_SCHEMA",
    "NAV2_FOOTPRINT",
    "NAV2_TURTLEBOT",
    "RAW_ZOO",
    "ROS1_TRUNCATED",
    "ROS1_UNINDEXED",
    "SCENARIOS",
    "SIM_TIME",
    "SIM_TIME_WALL_LOG",
    "STATIC_UPDATE",
    "VIDEO_MID_GOP",
    "VIDEO_STREAMS",
    "WITH_GNSS",
]

_OPTICAL = (-math.pi / 2, 0.0, -math.pi / 2)  # x right, y down, z forward (REP-103)

#: TurtleBot 4: base_link → shell_link → oakd_base → oakd_link → oakd_rgb_camera_frame →
#: oakd_rgb_camera_optical_frame; the camera is tilted 10° down.
OAKD_RGB_MOUNT: Final = (
    StaticEdge("base_link", "shell_link", (0.0, 0.0, 0.0945)),
    StaticEdge("shell_link", "oakd_base", (0.0587, 0.0, 0.1108), (0.0, math.radians(10.0), 0.0)),
    StaticEdge("oakd_base", "oakd_link", (0.0, 0.0, 0.0125)),
    StaticEdge(
        "oakd_link", "oakd_rgb_camera_frame", (0.0012, -0.0009, 0.0), (0.0, 0.0, math.radians(0.4))
    ),
    StaticEdge("oakd_rgb_camera_frame", "oakd_rgb_camera_optical_frame", (0.0, 0.0, 0.0), _OPTICAL),
)
#: The OAK-D's stereo frames: in the tree, on no camera's chain.
_OAKD_STEREO = (
    StaticEdge("oakd_link", "oakd_left_camera_frame", (0.0, 0.0375, 0.0)),
    StaticEdge(
        "oakd_left_camera_frame", "oakd_left_camera_optical_frame", (0.0, 0.0, 0.0), _OPTICAL
    ),
    StaticEdge("oakd_link", "oakd_right_camera_frame", (0.0, -0.0375, 0.0)),
    StaticEdge(
        "oakd_right_camera_frame", "oakd_right_camera_optical_frame", (0.0, 0.0, 0.0), _OPTICAL
    ),
)
#: A second camera looking 35° to the left, pitched 15° down.
LEFT_MOUNT: Final = (
    StaticEdge(
        "base_link", "camera_mount_link", (0.12, 0.08, 0.25), (0.0, 0.0, math.radians(35.0))
    ),
    StaticEdge(
        "camera_mount_link", "camera_left_link", (0.02, 0.0, 0.0), (0.0, math.radians(15.0), 0.0)
    ),
    StaticEdge("camera_left_link", "camera_left_optical_frame", (0.0, 0.0, 0.0), _OPTICAL),
)

NAV2_TURTLEBOT: Final = Scenario(
    name="nav2_turtlebot",
    cameras=(
        CameraSpec(
            name="oakd_rgb",
            topic="/oakd/rgb/preview/image_raw",
            info_topic="/oakd/rgb/preview/camera_info",
            payload="rgb8",
            mount=OAKD_RGB_MOUNT,
            rate_hz=15.0,
            driver="oakd",
            driver_edges=2,
            seed=0,
        ),
        CameraSpec(
            name="camera_left",
            topic="/camera/left/image_raw/compressed",
            info_topic="/camera/left/camera_info",
            payload="png",
            mount=LEFT_MOUNT,
            rate_hz=12.0,
            width=64,
            height=48,
            driver="camera_left_driver",
            seed=1,
        ),
    ),
    extra_static=_OAKD_STEREO,
)
#: As NAV2_TURTLEBOT, but odometry moves base_footprint, and base_link sits on it.
NAV2_FOOTPRINT: Final = dataclasses.replace(
    NAV2_TURTLEBOT, name="nav2_footprint", odom_child="base_footprint"
)
#: Gazebo: header stamps and log times in simulation seconds (``--use-sim-time``).
SIM_TIME: Final = dataclasses.replace(NAV2_TURTLEBOT, name="sim_time", clock="sim")
#: Gazebo recorded without ``--use-sim-time``: sim stamps, wall-clock log times.
SIM_TIME_WALL_LOG: Final = dataclasses.replace(
    NAV2_TURTLEBOT, name="sim_time_wall_log", clock="sim_wall_log"
)
#: An outdoor robot: GNSS fixes (map is ENU at the GNSS origin), a localization PoseStamped,
#: a base that rolls and pitches on uneven ground.
WITH_GNSS: Final = dataclasses.replace(
    NAV2_TURTLEBOT,
    name="with_gnss",
    gnss=True,
    pose_stamped_topic="/localization/pose",
    tilt_deg=3.0,
)
#: The OAK-D image topic's Schema record has an empty definition (plain ROS 2 MCAP only).
EMPTY_SCHEMA: Final = dataclasses.replace(
    NAV2_TURTLEBOT, name="empty_schema", empty_schema_topics=("/oakd/rgb/preview/image_raw",)
)
#: The left camera's mount is republished, corrected, 12 s in: the latest static wins.
STATIC_UPDATE: Final = dataclasses.replace(
    NAV2_TURTLEBOT,
    name="static_update",
    cameras=(NAV2_TURTLEBOT.cameras[1], NAV2_TURTLEBOT.cameras[0]),
    static_update_s=12.0,
)
ROS1_UNINDEXED: Final = dataclasses.replace(
    NAV2_TURTLEBOT, name="ros1_unindexed", ros1_damage="unindexed"
)
ROS1_TRUNCATED: Final = dataclasses.replace(
    NAV2_TURTLEBOT, name="ros1_truncated", ros1_damage="truncated"
)

_OAK_BASE = StaticEdge(
    "base_link", "oak-d-base-frame", (0.16, 0.0, 0.31), (0.0, math.radians(5.0), 0.0)
)
_OAK_D = StaticEdge("oak-d-base-frame", "oak-d_frame", (0.0, 0.0, 0.0135))
#: depthai-ros on a robot: bgr8 colour, a UYVY (``yuv422``) stream, and an H.264 front camera.
DEPTHAI_OAKD: Final = Scenario(
    name="depthai_oakd",
    cameras=(
        CameraSpec(
            name="oak_rgb",
            topic="/oak/rgb/image_raw",
            info_topic="/oak/rgb/camera_info",
            payload="bgr8",
            mount=(
                _OAK_BASE,
                _OAK_D,
                StaticEdge("oak-d_frame", "oak_rgb_camera_frame", (0.0, 0.0, 0.0)),
                StaticEdge(
                    "oak_rgb_camera_frame",
                    "oak_rgb_camera_optical_frame",
                    (0.0, 0.0, 0.0),
                    _OPTICAL,
                ),
            ),
            driver="oak",
            driver_edges=3,
            seed=2,
        ),
        CameraSpec(
            name="oak_left",
            topic="/oak/left/image_raw",
            info_topic="/oak/left/camera_info",
            payload="yuv422",
            mount=(
                _OAK_BASE,
                _OAK_D,
                StaticEdge("oak-d_frame", "oak_left_camera_frame", (0.0, 0.0375, 0.0)),
                StaticEdge(
                    "oak_left_camera_frame",
                    "oak_left_camera_optical_frame",
                    (0.0, 0.0, 0.0),
                    _OPTICAL,
                ),
            ),
            driver="oak",
            driver_edges=3,
            seed=3,
        ),
        CameraSpec(
            name="front_video",
            topic="/front_camera/image_raw/h264",
            info_topic="/front_camera/camera_info",
            payload="h264",
            mount=(
                StaticEdge(
                    "base_link",
                    "front_camera_link",
                    (0.21, -0.02, 0.22),
                    (0.0, 0.0, math.radians(-20.0)),
                ),
                StaticEdge(
                    "front_camera_link", "front_camera_optical_frame", (0.0, 0.0, 0.0), _OPTICAL
                ),
            ),
            driver="front_camera",
            keyframe_interval=30,
            seed=4,
        ),
    ),
    tilt_deg=2.0,
)


def _zoo_camera(index: int, encoding: str, **kw: object) -> CameraSpec:
    name = encoding.replace("_", "-")
    yaw = math.radians(-150 + 30 * index)
    return CameraSpec(
        name=f"zoo_{encoding}",
        topic=f"/zoo/{name}/image_raw",
        info_topic=f"/zoo/{name}/camera_info",
        payload=encoding,  # type: ignore[arg-type]
        mount=(
            StaticEdge(
                "base_link",
                f"zoo_{name}_link",
                (0.1 * math.cos(yaw), 0.1 * math.sin(yaw), 0.3),
                (0.0, 0.0, yaw),
            ),
            StaticEdge(f"zoo_{name}_link", f"zoo_{name}_optical_frame", (0.0, 0.0, 0.0), _OPTICAL),
        ),
        width=64,
        height=48,
        driver=f"zoo_{encoding}_driver",
        seed=10 + index,
        **kw,  # type: ignore[arg-type]
    )


#: Every other raw encoding, one camera each, 6 s (one scene longer than the 5 s minimum);
#: mono16 is big-endian with padded rows.
RAW_ZOO: Final = Scenario(
    name="raw_zoo",
    duration_s=6.0,
    cameras=tuple(
        _zoo_camera(i, enc, **({"big_endian": True, "step_padding": 6} if enc == "mono16" else {}))
        for i, enc in enumerate(
            (
                "rgba8",
                "bgra8",
                "mono8",
                "mono16",
                "bayer_rggb8",
                "bayer_bggr8",
                "bayer_gbrg8",
                "bayer_grbg8",
                "uyvy",
                "yuyv",
                "yuv422_yuy2",
            )
        )
    ),
)

#: Foxglove-style compressed streams: H.264 (2 s GOP), H.265 (1 s GOP), JPEG.
VIDEO_STREAMS: Final = Scenario(
    name="video_streams",
    cameras=(
        CameraSpec(
            name="front_h264",
            topic="/camera/front/h264",
            info_topic="/camera/front/calibration",
            payload="h264",
            mount=(
                StaticEdge("base_link", "camera_front", (0.2, 0.0, 0.3)),
                StaticEdge("camera_front", "camera_front_optical", (0.0, 0.0, 0.0), _OPTICAL),
            ),
            keyframe_interval=30,
            driver="front_camera",
            seed=5,
        ),
        CameraSpec(
            name="rear_h265",
            topic="/camera/rear/h265",
            info_topic="/camera/rear/calibration",
            payload="h265",
            mount=(
                StaticEdge("base_link", "camera_rear", (-0.2, 0.0, 0.3), (0.0, 0.0, math.pi)),
                StaticEdge("camera_rear", "camera_rear_optical", (0.0, 0.0, 0.0), _OPTICAL),
            ),
            keyframe_interval=15,
            driver="rear_camera",
            seed=6,
        ),
        CameraSpec(
            name="side_jpeg",
            topic="/camera/side/jpeg",
            info_topic="/camera/side/calibration",
            payload="jpeg",
            mount=(
                StaticEdge("base_link", "camera_side", (0.0, 0.15, 0.3), (0.0, 0.0, math.pi / 2)),
                StaticEdge("camera_side", "camera_side_optical", (0.0, 0.0, 0.0), _OPTICAL),
            ),
            driver="side_camera",
            seed=7,
        ),
    ),
)
#: The H.264 camera was already streaming: the recording opens 10 frames into a GOP.
VIDEO_MID_GOP: Final = dataclasses.replace(
    VIDEO_STREAMS,
    name="video_mid_gop",
    cameras=(
        dataclasses.replace(VIDEO_STREAMS.cameras[0], gop_phase=10),
        *VIDEO_STREAMS.cameras[1:],
    ),
)

SCENARIOS: Final = {
    s.name: s
    for s in (
        NAV2_TURTLEBOT,
        NAV2_FOOTPRINT,
        DEPTHAI_OAKD,
        SIM_TIME,
        SIM_TIME_WALL_LOG,
        WITH_GNSS,
        EMPTY_SCHEMA,
        STATIC_UPDATE,
        RAW_ZOO,
        VIDEO_STREAMS,
        VIDEO_MID_GOP,
        ROS1_UNINDEXED,
        ROS1_TRUNCATED,
    )
}
