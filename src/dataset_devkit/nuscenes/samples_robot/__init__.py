"""A synthetic nav2-like robot recording written with rosbags, for the demo, tests and benchmarks.

A wheeled robot drives a figure eight in ``map``, as a TurtleBot running nav2 records it
(REP-105): ``map -> odom`` on ``/tf`` at 10 Hz (amcl's correction, slowly moving),
``odom -> base_link`` on ``/tf`` at 50 Hz with the same samples as ``nav_msgs/msg/Odometry``
on ``/odom``, and on ``/tf_static`` the static ``base_link -> base_footprint`` edge plus a
chain of four edges from ``base_link`` to each camera's optical frame. Every camera publishes
raw ``sensor_msgs/msg/Image`` frames (rgb8 unless chosen otherwise) and a
``sensor_msgs/msg/CameraInfo`` under its own topics (``/oakd/rgb/preview/image_raw``). There
is no GNSS: a build takes its poses from the transform tree (``[ingest.pose] source = "tf"``,
:func:`robot_ingest_config`).

:func:`write_sample_robot` writes it as a ROS 2 bag folder with rosbags' ``rosbag2.Writer``
(MCAP storage, or sqlite3) or as a ROS 1 ``.bag`` (``rosbag1.Writer``). Messages are made
and written one at a time in log-time order, so an hour of 1280x720 frames is written in
the memory of a few frames. Frames are crops of one precomputed texture per camera
(:mod:`.textures`) panning across the image: a copy per frame, no rendering.

The bytes depend on the parameters and the rosbags release only (its name is in the MCAP
header): the same parameters give the same bytes. Modules: :mod:`.robot` (cameras, motion,
transforms, pixels), :mod:`.textures`, :mod:`.messages` (rosbags objects), :mod:`.writer`.

Usage::

    robot = SampleRobot(duration_s=60, cameras=robot_cameras(2))
    bag = write_sample_robot("robot-bag", robot)       # a ROS 2 bag folder, MCAP storage
    config = PipelineConfig(namespace="robots", ingest=robot_ingest_config(robot))
"""

from __future__ import annotations

from dataset_devkit.nuscenes.samples_robot.robot import (
    ROBOT_CAMERAS,
    ROBOT_ENCODINGS,
    ROBOT_STORAGES,
    RobotCamera,
    SampleRobot,
    robot_cameras,
    robot_ingest_config,
)
from dataset_devkit.nuscenes.samples_robot.writer import write_sample_robot

__all__ = [
    "ROBOT_CAMERAS",
    "ROBOT_ENCODINGS",
    "ROBOT_STORAGES",
    "RobotCamera",
    "SampleRobot",
    "robot_cameras",
    "robot_ingest_config",
    "write_sample_robot",
]
