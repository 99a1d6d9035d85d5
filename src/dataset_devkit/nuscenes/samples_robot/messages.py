"""The recording's messages as rosbags objects of one typestore, and their serialized bytes.

ROS 2 bags get Humble's definitions (CDR), ROS 1 bags Noetic's (ROS 1 serialization, with
``header.seq`` and ``CameraInfo``'s upper-case ``D K R P``). Noetic's store has no
``tf2_msgs/msg/TFMessage`` (ROS 1 ``/tf`` carries it since Hydro), so it is registered from
its one-line definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from dataset_devkit.nuscenes.common.geometry import Transform
from dataset_devkit.nuscenes.samples_robot.robot import (
    BASE_FRAME,
    ODOM_FRAME,
    RobotCamera,
    SampleRobot,
)
from dataset_devkit.nuscenes.samples_robot.textures import bytes_per_pixel

__all__ = ["CAMERA_INFO_TYPE", "IMAGE_TYPE", "ODOMETRY_TYPE", "TF_TYPE", "RosMessages"]

#: The message types of the recording.
TF_TYPE: Final = "tf2_msgs/msg/TFMessage"
ODOMETRY_TYPE: Final = "nav_msgs/msg/Odometry"
IMAGE_TYPE: Final = "sensor_msgs/msg/Image"
CAMERA_INFO_TYPE: Final = "sensor_msgs/msg/CameraInfo"
_TFMESSAGE_ROS1 = "geometry_msgs/TransformStamped[] transforms\n"


class RosMessages:
    """Message objects of one typestore (ROS 2 Humble, or ROS 1 Noetic) and their bytes."""

    def __init__(self, ros1: bool) -> None:
        from rosbags.typesys import Stores, get_types_from_msg, get_typestore

        self.ros1 = ros1
        self.store = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE)
        if ros1 and TF_TYPE not in self.store.types:  # Noetic's store lacks tf2_msgs
            self.store.register(get_types_from_msg(_TFMESSAGE_ROS1, TF_TYPE))
        self.types = self.store.types
        self._serialize = self.store.serialize_ros1 if ros1 else self.store.serialize_cdr

    def serialize(self, message: Any, msgtype: str) -> bytes:
        return bytes(self._serialize(message, msgtype))

    def header(self, t_ns: int, frame: str, seq: int) -> Any:
        stamp = self.types["builtin_interfaces/msg/Time"](
            sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000
        )
        header = self.types["std_msgs/msg/Header"]
        if self.ros1:
            return header(seq=seq, stamp=stamp, frame_id=frame)
        return header(stamp=stamp, frame_id=frame)

    def vector(self, v: Sequence[float]) -> Any:
        return self.types["geometry_msgs/msg/Vector3"](x=v[0], y=v[1], z=v[2])

    def quaternion(self, q: Sequence[float]) -> Any:
        w, x, y, z = q
        return self.types["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z, w=w)

    def transforms(self, t_ns: int, edges: Sequence[tuple[str, str, Transform]]) -> bytes:
        stamped = self.types["geometry_msgs/msg/TransformStamped"]
        transform = self.types["geometry_msgs/msg/Transform"]
        items = [
            stamped(
                header=self.header(t_ns, parent, 0),
                child_frame_id=child,
                transform=transform(translation=self.vector(t), rotation=self.quaternion(q)),
            )
            for parent, child, (t, q) in edges
        ]
        return self.serialize(self.types[TF_TYPE](transforms=items), TF_TYPE)

    def odometry(
        self, t_ns: int, seq: int, pose: Transform, speed: float, yaw_rate: float
    ) -> bytes:
        types = self.types
        point = types["geometry_msgs/msg/Point"](x=pose[0][0], y=pose[0][1], z=pose[0][2])
        with_covariance = types["geometry_msgs/msg/PoseWithCovariance"](
            pose=types["geometry_msgs/msg/Pose"](
                position=point, orientation=self.quaternion(pose[1])
            ),
            covariance=_covariance(1e-3, 1e-3, 1e6, 1e6, 1e6, 3e-3),
        )
        twist = types["geometry_msgs/msg/TwistWithCovariance"](
            twist=types["geometry_msgs/msg/Twist"](
                linear=self.vector((speed, 0.0, 0.0)), angular=self.vector((0.0, 0.0, yaw_rate))
            ),
            covariance=_covariance(1e-4, 1e-4, 1e6, 1e6, 1e6, 1e-3),
        )
        message = types[ODOMETRY_TYPE](
            header=self.header(t_ns, ODOM_FRAME, seq),
            child_frame_id=BASE_FRAME,
            pose=with_covariance,
            twist=twist,
        )
        return self.serialize(message, ODOMETRY_TYPE)

    def image(
        self, t_ns: int, seq: int, camera: RobotCamera, robot: SampleRobot, data: Any
    ) -> bytes:
        message = self.types[IMAGE_TYPE](
            header=self.header(t_ns, camera.optical_frame, seq),
            height=robot.height,
            width=robot.width,
            encoding=camera.encoding,
            is_bigendian=0,
            step=robot.width * bytes_per_pixel(camera.encoding),
            data=data,
        )
        return self.serialize(message, IMAGE_TYPE)

    def camera_info(self, t_ns: int, seq: int, camera: RobotCamera, robot: SampleRobot) -> bytes:
        k = robot.intrinsic()
        fields = {
            "d": np.array([0.02, -0.01, 0.0005, -0.0003, 0.0], dtype=np.float64),
            "k": np.array(k, dtype=np.float64),
            "r": np.array([1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0], dtype=np.float64),
            "p": np.array([*k[0:3], 0.0, *k[3:6], 0.0, *k[6:9], 0.0], dtype=np.float64),
        }
        if self.ros1:  # ROS 1 spells them D, K, R, P
            fields = {name.upper(): value for name, value in fields.items()}
        roi = self.types["sensor_msgs/msg/RegionOfInterest"](
            x_offset=0, y_offset=0, height=0, width=0, do_rectify=False
        )
        message = self.types[CAMERA_INFO_TYPE](
            header=self.header(t_ns, camera.optical_frame, seq),
            height=robot.height,
            width=robot.width,
            distortion_model="plumb_bob",
            binning_x=0,
            binning_y=0,
            roi=roi,
            **fields,
        )
        return self.serialize(message, CAMERA_INFO_TYPE)


def _covariance(*diagonal: float) -> npt.NDArray[np.float64]:
    out = np.zeros(36, dtype=np.float64)
    out[::7] = diagonal
    return out


# ---------------------------------------------------------------------- streams
