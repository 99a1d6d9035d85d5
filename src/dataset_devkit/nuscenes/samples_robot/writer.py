"""Write the sample robot: every message made lazily, merged by log time, written by rosbags.

The recording is written into a staging directory beside the destination and renamed into
place when complete (no-replace), so the destination never holds a partial recording.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from dataset_devkit.errors import ConfigError, DestinationExistsError, MissingDependencyError
from dataset_devkit.integrity import open_dir_nofollow, path_argument
from dataset_devkit.integrity.rename import rename_noreplace
from dataset_devkit.integrity.staging import (
    new_staging_dir,
    remove_staging,
    remove_stale_staging,
)
from dataset_devkit.nuscenes.samples_robot.messages import (
    CAMERA_INFO_TYPE,
    IMAGE_TYPE,
    ODOMETRY_TYPE,
    TF_TYPE,
    RosMessages,
)
from dataset_devkit.nuscenes.samples_robot.robot import (
    BASE_FRAME,
    ODOM_FRAME,
    WORLD_FRAME,
    SampleRobot,
)

__all__ = ["write_sample_robot"]

#: Recorder delays (log time minus header stamp), as a real recorder's queues give them.
_TF_DELAY_NS: Final = 1_000_000
_AMCL_DELAY_NS: Final = 3_000_000
_CAMERA_DELAY_NS: Final = 8_000_000

#: One message: (log time, stream rank, topic, serialized bytes). The rank orders ties.
_Event = tuple[int, int, str, bytes]


def _stamps(first: int, last: int, hz: float) -> Iterator[int]:
    period = round(1e9 / hz)
    t = first
    while t <= last:
        yield t
        t += period


def _events(robot: SampleRobot, messages: RosMessages) -> Iterator[_Event]:
    """Every message of the recording, merged in log-time order, made one at a time."""
    start = robot.start_ns
    end = robot.frame_stamp(len(robot.cameras) - 1, max(0, robot.frame_count - 1))

    def static() -> Iterator[_Event]:
        t = start - 300_000_000
        yield (t + _TF_DELAY_NS, 0, "/tf_static", messages.transforms(t, robot.static_edges()))

    def amcl() -> Iterator[_Event]:
        for t in _stamps(start - 200_000_000, end + 200_000_000, robot.amcl_hz):
            edge = [(WORLD_FRAME, ODOM_FRAME, robot.correction(t))]
            yield (t + _AMCL_DELAY_NS, 1, "/tf", messages.transforms(t, edge))

    def odometry() -> Iterator[_Event]:
        for seq, t in enumerate(_stamps(start - 100_000_000, end + 100_000_000, robot.odom_hz)):
            pose = robot.odometry(t)
            speed, yaw_rate = robot.twist(t)
            yield (
                t + _TF_DELAY_NS,
                2,
                "/tf",
                messages.transforms(t, [(ODOM_FRAME, BASE_FRAME, pose)]),
            )
            yield (t + _TF_DELAY_NS, 3, "/odom", messages.odometry(t, seq, pose, speed, yaw_rate))

    def camera(i: int) -> Iterator[_Event]:
        spec = robot.cameras[i]
        for k in range(robot.frame_count):
            t = robot.frame_stamp(i, k)
            data = robot.frame_data(i, k)
            log = t + _CAMERA_DELAY_NS
            yield (log, 4 + 2 * i, spec.topic, messages.image(t, k, spec, robot, data))
            yield (log, 5 + 2 * i, spec.info_topic, messages.camera_info(t, k, spec, robot))

    streams = [static(), amcl(), odometry(), *(camera(i) for i in range(len(robot.cameras)))]
    return heapq.merge(*streams, key=lambda event: (event[0], event[1]))


def _topics(robot: SampleRobot) -> list[tuple[str, str, str, str]]:
    """``(topic, message type, publisher, QoS kind)`` of every topic, in connection order."""
    topics = [
        ("/tf_static", TF_TYPE, "robot_state_publisher", "latched"),
        ("/tf", TF_TYPE, "amcl", "reliable"),
        ("/odom", ODOMETRY_TYPE, "diffdrive_controller", "reliable"),
    ]
    for c in robot.cameras:
        topics += [
            (c.topic, IMAGE_TYPE, f"{c.name}_driver", "sensor"),
            (c.info_topic, CAMERA_INFO_TYPE, f"{c.name}_driver", "sensor"),
        ]
    return topics


def _qos(kind: str) -> list[Any]:
    """The offered QoS of a publisher, as ``ros2 bag record`` stores it."""
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )

    infinite = QosTime(9223372036, 854775807)
    reliability = QosReliability.BEST_EFFORT if kind == "sensor" else QosReliability.RELIABLE
    durability = QosDurability.TRANSIENT_LOCAL if kind == "latched" else QosDurability.VOLATILE
    profile = Qos(
        QosHistory.UNKNOWN,
        0,
        reliability,
        durability,
        infinite,
        infinite,
        QosLiveliness.AUTOMATIC,
        infinite,
        False,
    )
    return [profile]


def _write_rosbag2(folder: Path, robot: SampleRobot) -> None:
    from rosbags.rosbag2 import StoragePlugin, Writer

    messages = RosMessages(ros1=False)
    mcap = robot.storage == "mcap"
    plugin = StoragePlugin.MCAP if mcap else StoragePlugin.SQLITE3
    # Version 9 (Jazzy's metadata) for MCAP; 8 (Iron's, definitions in the file) for sqlite3.
    with Writer(folder, version=9 if mcap else 8, storage_plugin=plugin) as writer:
        connections = {
            topic: writer.add_connection(
                topic, msgtype, typestore=messages.store, offered_qos_profiles=_qos(kind)
            )
            for topic, msgtype, _, kind in _topics(robot)
        }
        for log_time, _, topic, data in _events(robot, messages):
            writer.write(connections[topic], log_time, data)


def _write_rosbag1(path: Path, robot: SampleRobot) -> None:
    from rosbags.rosbag1 import Writer

    messages = RosMessages(ros1=True)
    with Writer(path) as writer:
        connections = {
            topic: writer.add_connection(
                topic,
                msgtype,
                typestore=messages.store,
                callerid=f"/{publisher}",
                latching=1 if kind == "latched" else None,
            )
            for topic, msgtype, publisher, kind in _topics(robot)
        }
        for log_time, _, topic, data in _events(robot, messages):
            writer.write(connections[topic], log_time, data)


def write_sample_robot(path: Path | str, robot: SampleRobot | None = None) -> Path:
    """Write *robot* at *path*: a ROS 2 bag folder, or a ``.bag`` file for ``storage="ros1"``.

    The recording is written beside *path* and renamed into place when complete, so *path*
    never holds a partial recording; what a killed writer left is removed by the next call.

    Raises
    ------
    ConfigError
        A ``ros1`` path that does not end in ``.bag`` (the ingest knows ROS 1 bags by it).
    DestinationExistsError
        *path* exists; it is never replaced.
    """
    robot = robot or SampleRobot()
    path = path_argument(path, "path").absolute()
    if robot.storage == "ros1" and path.suffix != ".bag":
        raise ConfigError(
            f"{path}: a ROS 1 recording must be a .bag file, found the suffix {path.suffix!r}",
            key="path",
        )
    if os.path.lexists(path):
        raise DestinationExistsError(f"{path}: already exists; it is never replaced")
    try:
        import rosbags  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            "rosbags", extra="mcap", purpose="writing the sample robot recording"
        ) from exc
    remove_stale_staging(path)
    staging = new_staging_dir(path)
    try:
        if robot.storage == "ros1":
            _write_rosbag1(staging / path.name, robot)
        else:
            _write_rosbag2(staging / path.name, robot)
        source_fd = open_dir_nofollow(staging)
        target_fd = open_dir_nofollow(path.parent)
        try:
            rename_noreplace(source_fd, path.name, target_fd, path.name)
        finally:
            os.close(source_fd)
            os.close(target_fd)
    finally:
        remove_staging(staging)
    return path
