"""Real-shaped robot recordings for the nuScenes ingest tests, written by third-party writers.

A nav2-like robot (REP-105 frames, amcl's drifting ``map → odom``, wheel odometry, a 5-edge
camera chain on ``/tf_static``) and its variants (:mod:`.scenarios`) are written as ROS 2 bag
folders in MCAP or sqlite3 storage and ROS 1 bags (rosbags), Foxglove MCAP files
(foxglove-sdk) or plain ROS 2 MCAP files (mcap + mcap-ros2-support), with raw, PNG, JPEG,
H.264 and H.265 cameras. Each comes with its ground truth (:class:`Truth`): what a correct
tf2 lookup on the written messages gives, computed with numpy and SciPy only.

Usage::

    rec = write_recording("ros2_mcap", tmp_path, NAV2_TURTLEBOT)
    t = rec.truth.camera("oakd_rgb").stamps[40]
    ego = rec.truth.pose("map", "base_link", t)          # 4×4, base_link in map
    cam = rec.truth.extrinsic("base_link", rec.frames.cameras["oakd_rgb"])
    rgb = rec.truth.pixels("oakd_rgb", t)                # H×W×3 uint8
    # after building and exporting rec.path into dataroot:
    result = compare_dataroot(dataroot, rec, world_frame="map", vehicle_frame="base_link",
                              channels={"oakd_rgb": "CAM_FRONT"})
    assert result.mismatches == []
"""

from tests.nuscenes.robots.dataroot_check import DatarootComparison, compare_dataroot
from tests.nuscenes.robots.geometry import pose_error, quaternion_wxyz
from tests.nuscenes.robots.images import psnr
from tests.nuscenes.robots.recording import (
    KINDS,
    Frames,
    Kind,
    RecordedRobot,
    TopicInfo,
    write_recording,
)
from tests.nuscenes.robots.scenarios import (
    DEPTHAI_OAKD,
    EMPTY_SCHEMA,
    NAV2_FOOTPRINT,
    NAV2_TURTLEBOT,
    RAW_ZOO,
    ROS1_TRUNCATED,
    ROS1_UNINDEXED,
    SCENARIOS,
    SIM_TIME,
    SIM_TIME_WALL_LOG,
    STATIC_UPDATE,
    VIDEO_MID_GOP,
    VIDEO_STREAMS,
    WITH_GNSS,
)
from tests.nuscenes.robots.spec import CameraSpec, Scenario, StaticEdge
from tests.nuscenes.robots.truth import CameraTruth, PoseTopicTruth, Truth
from tests.nuscenes.robots.video import decode_packets

__all__ = [
    "DEPTHAI_OAKD",
    "EMPTY_SCHEMA",
    "KINDS",
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
    "CameraSpec",
    "CameraTruth",
    "DatarootComparison",
    "Frames",
    "Kind",
    "PoseTopicTruth",
    "RecordedRobot",
    "Scenario",
    "StaticEdge",
    "TopicInfo",
    "Truth",
    "compare_dataroot",
    "decode_packets",
    "pose_error",
    "psnr",
    "quaternion_wxyz",
    "write_recording",
]
