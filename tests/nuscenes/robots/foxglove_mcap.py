"""Foxglove-schema MCAP files written by foxglove-sdk, as a Foxglove-native robot logs them.

One ``foxglove.Context`` per file (channels never leak between recordings), protobuf
messages from the SDK's own schema classes, zstd chunks compressed on the calling thread
(the SDK's multithreaded compressor is the one source of run-to-run variation it has).
Odometry and pose topics become ``foxglove.PoseInFrame``: Foxglove has no odometry schema,
and the pose's frame is the header frame (the body frame is implied, as with PoseStamped).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import numpy as np

from tests.nuscenes.robots.messages import (
    CameraInfoMessage,
    CompressedImageMessage,
    FixMessage,
    Message,
    OdometryMessage,
    PoseMessage,
    RawImageMessage,
    Role,
    TfMessage,
    VideoMessage,
)
from tests.nuscenes.robots.plan import Plan
from tests.nuscenes.robots.truth import TfSample

__all__ = ["FOXGLOVE_SCHEMAS", "write_foxglove_mcap"]

#: The Foxglove schema of each role.
FOXGLOVE_SCHEMAS: Final[dict[Role, str]] = {
    "tf": "foxglove.FrameTransforms",
    "tf_static": "foxglove.FrameTransforms",
    "odometry": "foxglove.PoseInFrame",
    "pose_with_covariance": "foxglove.PoseInFrame",
    "pose": "foxglove.PoseInFrame",
    "camera_info": "foxglove.CameraCalibration",
    "raw_image": "foxglove.RawImage",
    "compressed_image": "foxglove.CompressedImage",
    "video": "foxglove.CompressedVideo",
    "fix": "foxglove.LocationFix",
}


def _converter() -> Callable[[Message], Any]:
    from foxglove.messages import (
        CameraCalibration,
        CompressedImage,
        CompressedVideo,
        FrameTransform,
        FrameTransforms,
        LocationFix,
        LocationFixPositionCovarianceType,
        Pose,
        PoseInFrame,
        Quaternion,
        RawImage,
        Timestamp,
        Vector3,
    )

    def stamp(t_ns: int) -> Any:
        return Timestamp(t_ns // 1_000_000_000, t_ns % 1_000_000_000)

    def quaternion(q: tuple[float, float, float, float]) -> Any:
        return Quaternion(x=q[0], y=q[1], z=q[2], w=q[3])

    def vector(v: tuple[float, float, float]) -> Any:
        return Vector3(x=v[0], y=v[1], z=v[2])

    def pose(s: TfSample) -> Any:
        return PoseInFrame(
            timestamp=stamp(s.stamp_ns),
            frame_id=s.parent,
            pose=Pose(position=vector(s.translation), orientation=quaternion(s.rotation)),
        )

    def convert(m: Message) -> Any:
        if isinstance(m, TfMessage):
            return FrameTransforms(
                transforms=[
                    FrameTransform(
                        timestamp=stamp(s.stamp_ns),
                        parent_frame_id=s.parent,
                        child_frame_id=s.child,
                        translation=vector(s.translation),
                        rotation=quaternion(s.rotation),
                    )
                    for s in m.transforms
                ]
            )
        if isinstance(m, OdometryMessage | PoseMessage):
            return pose(m.pose)
        if isinstance(m, CameraInfoMessage):
            return CameraCalibration(
                timestamp=stamp(m.stamp_ns),
                frame_id=m.frame,
                width=m.width,
                height=m.height,
                distortion_model="plumb_bob",
                D=list(m.d),
                K=list(m.k),
                R=list(m.r),
                P=list(m.p),
            )
        if isinstance(m, RawImageMessage):
            img = m.image
            data = img.data
            if img.is_bigendian:
                # foxglove.RawImage has no endianness field: 16-bit samples are little-endian.
                rows = np.frombuffer(data, np.uint8).reshape(img.height, img.step)
                body = rows[:, : img.width * 2].copy().view(">u2").astype("<u2").view(np.uint8)
                data = np.concatenate([body, rows[:, img.width * 2 :]], axis=1).tobytes()
            return RawImage(
                timestamp=stamp(m.stamp_ns),
                frame_id=m.frame,
                width=img.width,
                height=img.height,
                encoding=img.encoding,
                step=img.step,
                data=data,
            )
        if isinstance(m, CompressedImageMessage):
            return CompressedImage(
                timestamp=stamp(m.stamp_ns), frame_id=m.frame, data=m.data, format=m.foxglove_format
            )
        if isinstance(m, VideoMessage):
            return CompressedVideo(
                timestamp=stamp(m.stamp_ns), frame_id=m.frame, data=m.data, format=m.format
            )
        assert isinstance(m, FixMessage)
        return LocationFix(
            timestamp=stamp(m.stamp_ns),
            frame_id=m.frame,
            latitude=m.latitude,
            longitude=m.longitude,
            altitude=m.altitude,
            position_covariance=[0.04, 0.0, 0.0, 0.0, 0.04, 0.0, 0.0, 0.0, 0.09],
            position_covariance_type=LocationFixPositionCovarianceType.DiagonalKnown,
        )

    return convert


def write_foxglove_mcap(path: Path, plan: Plan) -> Path:
    """Write *plan* as one MCAP file of Foxglove protobuf messages with foxglove-sdk."""
    from foxglove import Context, open_mcap
    from foxglove import channels as fc
    from foxglove.mcap import MCAPCompression, MCAPWriteOptions

    channel_class = {
        "foxglove.FrameTransforms": fc.FrameTransformsChannel,
        "foxglove.PoseInFrame": fc.PoseInFrameChannel,
        "foxglove.CameraCalibration": fc.CameraCalibrationChannel,
        "foxglove.RawImage": fc.RawImageChannel,
        "foxglove.CompressedImage": fc.CompressedImageChannel,
        "foxglove.CompressedVideo": fc.CompressedVideoChannel,
        "foxglove.LocationFix": fc.LocationFixChannel,
    }
    convert = _converter()
    context = Context()
    options = MCAPWriteOptions(compression=MCAPCompression.Zstd, compression_threads=0)
    with open_mcap(path, context=context, writer_options=options):
        channels: dict[str, Any] = {
            t.topic: channel_class[FOXGLOVE_SCHEMAS[t.role]](t.topic, context=context)
            for t in plan.topics
        }
        for event in plan.events():
            channels[event.topic].log(convert(event.message), log_time=event.log_time_ns)
    return path
