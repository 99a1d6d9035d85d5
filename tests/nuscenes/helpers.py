"""Shared test data for the nuScenes tests: the tiny drive, the config, a ROS 2 writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np

from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig, SplitConfig
from dataset_devkit.nuscenes.samples import SampleDrive, sample_events

DRIVE = SampleDrive(duration_s=6.0, fps=10.0, width=32, height=24)
CONFIG = PipelineConfig(
    namespace="test-ns",
    scenario=ScenarioConfig(scene_duration_s=2.0, min_scene_duration_s=1.0),
    split=SplitConfig(test_fraction=0.5),
)


def write_ros2(
    folder: Path, drive: SampleDrive = DRIVE, keep: Callable[[int], bool] = lambda _t: True
) -> Path:
    """Write *drive* as a ROS 2 bag in MCAP storage with rosbags; returns the .mcap file.

    Only the messages whose log time passes *keep* are written (to make bag splits).
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    ty = ts.types
    stamp_type, header_type = ty["builtin_interfaces/msg/Time"], ty["std_msgs/msg/Header"]
    vec, quat = ty["geometry_msgs/msg/Vector3"], ty["geometry_msgs/msg/Quaternion"]

    def header(p: dict[str, Any], frame: str) -> Any:
        s = p["timestamp"]
        return header_type(stamp=stamp_type(sec=s["sec"], nanosec=s["nsec"]), frame_id=frame)

    with Writer(folder, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        conns: dict[str, Any] = {}

        def conn(topic: str, msgtype: str) -> Any:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msgtype, typestore=ts)
            return conns[topic]

        for t, kind, p in sample_events(drive):
            if not keep(t):
                continue
            if kind in ("tf", "ego"):
                msgtype = "tf2_msgs/msg/TFMessage"
                tr = ty["geometry_msgs/msg/Transform"](
                    translation=vec(**p["translation"]), rotation=quat(**p["rotation"])
                )
                stamped = ty["geometry_msgs/msg/TransformStamped"](
                    header=header(p, p["parent_frame_id"]),
                    child_frame_id=p["child_frame_id"],
                    transform=tr,
                )
                msg = ty[msgtype](transforms=[stamped])
                topic = "/tf"
            elif kind == "calibration":
                msgtype = "sensor_msgs/msg/CameraInfo"
                roi = ty["sensor_msgs/msg/RegionOfInterest"](
                    x_offset=0, y_offset=0, height=0, width=0, do_rectify=False
                )
                msg = ty[msgtype](
                    header=header(p, p["frame_id"]),
                    height=p["height"],
                    width=p["width"],
                    distortion_model=p["distortion_model"],
                    d=np.array(p["D"], dtype=np.float64),
                    k=np.array(p["K"], dtype=np.float64),
                    r=np.array(p["R"], dtype=np.float64),
                    p=np.array(p["P"], dtype=np.float64),
                    binning_x=0,
                    binning_y=0,
                    roi=roi,
                )
                topic = f"/{p['frame_id']}/camera_info"
            elif kind == "fix":
                msgtype = "sensor_msgs/msg/NavSatFix"
                status = ty["sensor_msgs/msg/NavSatStatus"](status=0, service=1)
                msg = ty[msgtype](
                    header=header(p, p["frame_id"]),
                    status=status,
                    latitude=p["latitude"],
                    longitude=p["longitude"],
                    altitude=p["altitude"],
                    position_covariance=np.zeros(9, dtype=np.float64),
                    position_covariance_type=0,
                )
                topic = "/gnss"
            else:
                msgtype = "sensor_msgs/msg/CompressedImage"
                msg = ty[msgtype](
                    header=header(p, p["frame_id"]),
                    format="jpeg",
                    data=np.frombuffer(p["data"], dtype=np.uint8),
                )
                topic = f"/{p['frame_id']}/image/compressed"
            writer.write(conn(topic, msgtype), t, ts.serialize_cdr(msg, msgtype))
    return next(folder.glob("*.mcap"))


def write_ros2_split(folder: Path, drive: SampleDrive = DRIVE, splits: int = 2) -> Path:
    """Write *drive* as a ROS 2 bag folder of *splits* ``.mcap`` files, as rosbag2 splits it.

    Each split is written by the rosbags writer (which does not split by itself); the
    folder's ``metadata.yaml`` then lists them in order, as ``ros2 bag record
    --max-bag-duration`` would. Static transforms and calibrations land in the first split.
    """
    import shutil

    import yaml  # type: ignore[import-untyped]

    times = drive.frame_times()
    bounds = [times[len(times) * i // splits] for i in range(1, splits)]
    folder.mkdir()
    metas: list[dict[str, Any]] = []
    for i in range(splits):
        lo = bounds[i - 1] if i else None
        hi = bounds[i] if i < len(bounds) else None
        tmp = folder.parent / f".{folder.name}.split{i}"

        def inside(t: int, lo: int | None = lo, hi: int | None = hi) -> bool:
            return (lo is None or t >= lo) and (hi is None or t < hi)

        part = write_ros2(tmp, drive, inside)
        name = f"{folder.name}_{i}.mcap"
        part.rename(folder / name)
        meta = yaml.safe_load((tmp / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        meta["files"][0]["path"] = name
        metas.append(meta)
        shutil.rmtree(tmp)
    info = metas[0]
    info["relative_file_paths"] = [m["files"][0]["path"] for m in metas]
    info["files"] = [m["files"][0] for m in metas]
    info["message_count"] = sum(m["message_count"] for m in metas)
    doc = {"rosbag2_bagfile_information": info}
    (folder / "metadata.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def rewrite_mcap(
    src: Path,
    dst: Path,
    edit: Callable[[str, bytes], bytes] = lambda _schema, data: data,
    *,
    metadata: dict[str, str] | None = None,
    compression: Literal["zstd", "lz4", "none"] = "zstd",
    chunk_size: int = 1024 * 1024,
) -> Path:
    """Copy every message of *src* into *dst* through ``edit(schema_name, data)``.

    Tests damage one message (or add a ``recording`` metadata record) this way, with the
    real ``mcap`` writer, instead of hand-editing bytes; *compression* (``zstd``, ``lz4``
    or ``none``) and *chunk_size* are the writer's.
    """
    from mcap.reader import make_reader
    from mcap.writer import CompressionType, Writer

    with src.open("rb") as f, dst.open("wb") as out:
        codec = CompressionType[compression.upper()]
        writer = Writer(out, compression=codec, chunk_size=chunk_size)
        writer.start()
        channels: dict[int, int] = {}
        for schema, channel, message in make_reader(f).iter_messages():
            assert schema is not None
            if channel.id not in channels:
                sid = writer.register_schema(schema.name, schema.encoding, schema.data)
                channels[channel.id] = writer.register_channel(
                    channel.topic, channel.message_encoding, sid
                )
            data = edit(schema.name, message.data)
            writer.add_message(channels[channel.id], message.log_time, data, message.publish_time)
        if metadata is not None:
            writer.add_metadata("recording", metadata)
        writer.finish()
    return dst
