"""The robot recordings hold what they claim, read back by the libraries' own readers.

Each container is opened with the reader its users would use (rosbags' ``AnyReader`` for ROS
1, sqlite3 and MCAP bags; mcap's reader with the protobuf and ROS 2 decoders for MCAP
files), and its messages are compared with the scenario's ground truth.
"""

from __future__ import annotations

import math
import shutil
import struct
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

from tests.nuscenes.robots import (
    DEPTHAI_OAKD,
    EMPTY_SCHEMA,
    KINDS,
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
    RecordedRobot,
    StaticEdge,
    decode_packets,
    pose_error,
    psnr,
    write_recording,
)
from tests.nuscenes.robots.fixtures import RobotRecordings
from tests.nuscenes.robots.geometry import euler_xyzw, matrix, rpy_matrix
from tests.nuscenes.robots.images import bayer_mosaic, encode_raw
from tests.nuscenes.robots.motion import Motion, edge_matrix
from tests.nuscenes.robots.plan import GNSS_ORIGIN, clear_caches

ROS_BAGS = ("ros2_mcap", "ros2_sqlite3", "ros1")


def _read_rosbag(rec: RecordedRobot) -> dict[str, list[tuple[int, Any]]]:
    """Every message per topic as (log time, deserialized message), through AnyReader."""
    from rosbags.highlevel import AnyReader

    out: dict[str, list[tuple[int, Any]]] = defaultdict(list)
    with AnyReader([rec.path]) as reader:
        for connection, log_time, raw in reader.messages():
            out[connection.topic].append((log_time, reader.deserialize(raw, connection.msgtype)))
    return out


def _read_mcap(rec: RecordedRobot) -> dict[str, list[tuple[int, Any]]]:
    """Every message per topic through mcap's reader and the protobuf / ROS 2 decoders."""
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory as ProtobufDecoder
    from mcap_ros2.decoder import DecoderFactory as Ros2Decoder

    out: dict[str, list[tuple[int, Any]]] = defaultdict(list)
    with rec.path.open("rb") as f:
        reader = make_reader(f, decoder_factories=[ProtobufDecoder(), Ros2Decoder()])
        for _, channel, message, decoded in reader.iter_decoded_messages():
            out[channel.topic].append((message.log_time, decoded))
    return out


def _read(rec: RecordedRobot) -> dict[str, list[tuple[int, Any]]]:
    return _read_rosbag(rec) if rec.kind in ROS_BAGS else _read_mcap(rec)


def _stamp(message: Any) -> int:
    """Header stamp of a ROS message (rosbags or mcap-ros2 objects) or Foxglove timestamp."""
    if hasattr(message, "header"):
        s = message.header.stamp
        return int(s.sec) * 1_000_000_000 + int(s.nanosec)
    if hasattr(message, "transforms"):
        return _stamp(message.transforms[0])
    ts = message.timestamp
    if hasattr(ts, "seconds"):
        return int(ts.seconds) * 1_000_000_000 + int(ts.nanos)
    return int(ts.sec) * 1_000_000_000 + int(ts.nanosec)


def _transforms(message: Any) -> list[tuple[str, str, Any, Any]]:
    """(parent, child, translation, rotation) of each transform of a TFMessage/FrameTransforms."""
    out = []
    for tf in message.transforms:
        if hasattr(tf, "transform"):
            out.append(
                (
                    tf.header.frame_id,
                    tf.child_frame_id,
                    tf.transform.translation,
                    tf.transform.rotation,
                )
            )
        else:
            out.append((tf.parent_frame_id, tf.child_frame_id, tf.translation, tf.rotation))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_every_container_holds_the_topics_types_and_counts_it_claims(
    robot_recording: RobotRecordings, kind: str
) -> None:
    rec = robot_recording(kind, NAV2_TURTLEBOT)  # type: ignore[arg-type]
    if kind in ROS_BAGS:
        from rosbags.highlevel import AnyReader

        with AnyReader([rec.path]) as reader:
            counts: Counter[str] = Counter()
            types = {}
            for c in reader.connections:
                counts[c.topic] += c.msgcount
                types[c.topic] = c.msgtype
        # AnyReader names ROS 1 types as ROS 2 does; the bag's own name is the ROS 1 one.
        expected_types = {
            t: i.msgtype.replace("/", "/msg/", 1) if kind == "ros1" else i.msgtype
            for t, i in rec.topics.items()
        }
    else:
        from mcap.reader import make_reader

        with rec.path.open("rb") as f:
            summary = make_reader(f).get_summary()
        assert summary is not None and summary.statistics is not None
        counts = Counter(
            {
                summary.channels[cid].topic: n
                for cid, n in summary.statistics.channel_message_counts.items()
            }
        )
        types = {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}
        expected_types = {t: i.msgtype for t, i in rec.topics.items()}
    assert types == expected_types
    assert dict(counts) == {t: i.count for t, i in rec.topics.items()}
    assert set(rec.camera_topics.values()) <= set(types)
    assert "/gps/fix" not in types  # the nav2 robot has no GNSS


def test_ros1_bag_names_types_and_publishers_as_rosbag_does(
    robot_recording: RobotRecordings,
) -> None:
    rec = robot_recording("ros1", NAV2_TURTLEBOT)
    from rosbags.interfaces import ConnectionExtRosbag1
    from rosbags.rosbag1 import Reader

    with Reader(rec.path) as reader:
        conns = list(reader.connections)
    ext = {id(c): c.ext for c in conns if isinstance(c.ext, ConnectionExtRosbag1)}
    assert len(ext) == len(conns)
    static = [c for c in conns if c.topic == "/tf_static"]
    assert {ext[id(c)].callerid for c in static} == {
        "/robot_state_publisher",
        "/oakd",
        "/camera_left_driver",
    }
    assert all(ext[id(c)].latching == 1 for c in static)
    tf_publishers = {ext[id(c)].callerid for c in conns if c.topic == "/tf"}
    assert tf_publishers == {"/diff_drive_controller", "/amcl", "/robot_state_publisher"}
    image = next(c for c in conns if c.topic == "/oakd/rgb/preview/image_raw")
    assert image.msgtype == "sensor_msgs/msg/Image"  # normalized by the reader
    assert image.digest == "060021388200f6f0f447d0fcd9c64743"  # sensor_msgs/Image's md5sum
    assert "MSG: std_msgs/Header" in image.msgdef.data
    assert rec.topics["/oakd/rgb/preview/image_raw"].msgtype == "sensor_msgs/Image"


@pytest.mark.parametrize(
    ("kind", "version", "storage"), [("ros2_mcap", 9, "mcap"), ("ros2_sqlite3", 8, "sqlite3")]
)
def test_rosbag2_metadata_is_what_a_rosbag2_writer_writes(
    robot_recording: RobotRecordings, kind: str, version: int, storage: str
) -> None:
    import yaml  # type: ignore[import-untyped]

    rec = robot_recording(kind, NAV2_TURTLEBOT)  # type: ignore[arg-type]
    info = yaml.safe_load((rec.path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert (info["version"], info["storage_identifier"]) == (version, storage)
    assert info["message_count"] == sum(t.count for t in rec.topics.values())
    (data_file,) = info["relative_file_paths"]
    assert (rec.path / data_file).is_file()
    qos = {
        t["topic_metadata"]["name"]: t["topic_metadata"]["offered_qos_profiles"]
        for t in info["topics_with_message_count"]
    }
    static_qos = (
        yaml.safe_load(qos["/tf_static"])
        if isinstance(qos["/tf_static"], str)
        else qos["/tf_static"]
    )
    assert len(static_qos) == 3  # one offer per publisher
    assert {p["durability"] for p in static_qos} == ({1} if version == 8 else {"transient_local"})


@pytest.mark.parametrize("kind", KINDS)
def test_messages_deserialize_back_to_the_values_written(
    robot_recording: RobotRecordings, kind: str
) -> None:
    rec = robot_recording(kind, NAV2_TURTLEBOT)  # type: ignore[arg-type]
    truth = rec.truth
    messages = _read(rec)
    for topic, items in messages.items():
        assert [t for t, _ in items] == list(truth.log_times[topic]), topic
        assert [_stamp(m) for _, m in items] == list(truth.stamps[topic]), topic
    # Wheel odometry on /tf: bit-exact floats, the same samples the truth interpolates.
    odom = [
        (p, c, tr, rot)
        for _, m in messages["/tf"]
        for p, c, tr, rot in _transforms(m)
        if c == "base_link"
    ]
    samples = truth.tf.samples("base_link")
    assert len(odom) == len(samples)
    for (parent, _, tr, rot), s in zip(odom, samples, strict=True):
        assert parent == "odom"
        assert (tr.x, tr.y, tr.z) == s.translation
        assert (rot.x, rot.y, rot.z, rot.w) == s.rotation
    # Calibration.
    cam = truth.camera("oakd_rgb")
    _, info = messages[cam.info_topic][0]
    k = getattr(info, "k", None)
    k = info.K if k is None else k
    assert tuple(float(x) for x in k) == cam.k
    # Images: raw rgb8 and PNG are lossless, so the bytes decode to the source exactly.
    for name, payload in (("oakd_rgb", "rgb8"), ("camera_left", "png")):
        cam = truth.camera(name)
        for (_, message), stamp in list(zip(messages[cam.topic], cam.stamps, strict=True))[::50]:
            assert (
                message.header.frame_id
                if hasattr(message, "header")
                else message.frame_id == cam.frame
            )
            data = bytes(message.data)
            if payload == "png":
                import io

                from PIL import Image

                assert data[:8] == b"\x89PNG\r\n\x1a\n"
                assert data == truth.still_bytes(name, stamp)
                assert message.format == (
                    "png" if kind == "foxglove_mcap" else "rgb8; png compressed bgr8"
                )
                pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
            else:
                assert (message.encoding, message.width, message.height, message.step) == (
                    "rgb8",
                    80,
                    60,
                    240,
                )
                pixels = np.frombuffer(data, np.uint8).reshape(60, 80, 3)
            np.testing.assert_array_equal(pixels, truth.pixels(name, stamp))


def test_odometry_and_amcl_topics_carry_the_truth_of_their_frames(
    robot_recording: RobotRecordings,
) -> None:
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    messages = _read(rec)
    _, odom = messages["/odom"][10]
    assert (odom.header.frame_id, odom.child_frame_id) == ("odom", "base_link")
    stamp = _stamp(odom)
    p = odom.pose.pose
    got = matrix(
        (p.position.x, p.position.y, p.position.z),
        (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w),
    )
    assert pose_error(got, rec.truth.pose("odom", "base_link", stamp)) == (0.0, 0.0)
    _, amcl = messages["/amcl_pose"][20]
    assert amcl.header.frame_id == "map"
    stamp = _stamp(amcl)
    p = amcl.pose.pose
    got = matrix(
        (p.position.x, p.position.y, p.position.z),
        (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w),
    )
    assert pose_error(got, rec.truth.topic_pose("/amcl_pose", "base_link", stamp)) == (0.0, 0.0)
    # amcl's pose and the tf chain at the same time agree only roughly: map → odom is
    # future-dated (transform_tolerance), so the tf lookup sees an older correction.
    distance, angle = pose_error(got, rec.truth.pose("map", "base_link", stamp))
    assert 1e-4 < distance < 0.05 and angle < 0.02


def test_truth_of_a_single_edge_is_the_recorded_sample_at_sample_times(
    robot_recording: RobotRecordings,
) -> None:
    truth = robot_recording("ros2_mcap", NAV2_TURTLEBOT).truth
    for child, parent in (("base_link", "odom"), ("odom", "map")):
        samples = truth.tf.samples(child)
        for s in samples[::37]:
            np.testing.assert_array_equal(truth.pose(parent, child, s.stamp_ns), s.matrix())
        # Half way between two samples: the lerp of the translations, the rotation half way.
        a, b = samples[100], samples[101]
        mid = truth.pose(parent, child, (a.stamp_ns + b.stamp_ns) // 2)
        fraction = ((a.stamp_ns + b.stamp_ns) // 2 - a.stamp_ns) / (b.stamp_ns - a.stamp_ns)
        expected = np.array(a.translation) + fraction * (
            np.array(b.translation) - np.array(a.translation)
        )
        np.testing.assert_allclose(mid[:3, 3], expected, rtol=0, atol=1e-12)
        ra, rb = Rotation.from_quat(a.rotation), Rotation.from_quat(b.rotation)
        half = ra * Rotation.from_rotvec((ra.inv() * rb).as_rotvec() * fraction)
        assert Rotation.from_matrix(mid[:3, :3]).inv().__mul__(half).magnitude() < 1e-12
        with pytest.raises(LookupError, match="samples span"):
            truth.pose(parent, child, samples[0].stamp_ns - 1)


def test_truth_composes_the_chain_from_the_interpolated_edges(
    robot_recording: RobotRecordings,
) -> None:
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    truth = rec.truth
    for t in truth.camera("oakd_rgb").stamps[::40]:
        composed = truth.pose("map", "odom", t) @ truth.pose("odom", "base_link", t)
        translation, rotation = truth.ego_pose("map", "base_link", t)
        nuscenes = matrix(translation, (*rotation[1:], rotation[0]))
        assert pose_error(nuscenes, composed) < (1e-12, 1e-12)
        assert pose_error(truth.pose("map", "base_link", t), composed) < (1e-12, 1e-12)
        # Edges are usable in both directions, and static edges compose too.
        back = truth.pose("base_link", "map", t) @ truth.pose("map", "base_link", t)
        np.testing.assert_allclose(back, np.eye(4), atol=1e-12)
        footprint = truth.pose("map", "base_link", t) @ truth.extrinsic(
            "base_link", "base_footprint"
        )
        assert pose_error(truth.pose("map", "base_footprint", t), footprint) < (1e-12, 1e-12)


def test_footprint_variant_moves_base_footprint_and_hangs_base_link_above_it(
    robot_recording: RobotRecordings,
) -> None:
    rec = robot_recording("ros2_mcap", NAV2_FOOTPRINT)
    assert rec.frames.odom_child == "base_footprint"
    assert rec.truth.tf.samples("base_footprint")[0].parent == "odom"
    lift = rec.truth.extrinsic("base_footprint", "base_link")
    np.testing.assert_allclose(lift[:3, 3], (0.0, 0.0, 0.0785), atol=1e-15)
    cam = rec.truth.extrinsic("base_footprint", rec.frames.cameras["oakd_rgb"])
    ref = robot_recording("ros2_mcap", NAV2_TURTLEBOT).truth.extrinsic(
        "base_footprint", "oakd_rgb_camera_optical_frame"
    )
    assert pose_error(cam, ref) < (1e-12, 1e-12)


def test_the_robot_turns_tens_of_degrees_and_odom_is_off_by_more(
    robot_recording: RobotRecordings,
) -> None:
    truth = robot_recording("ros2_mcap", NAV2_TURTLEBOT).truth
    stamps = truth.camera("oakd_rgb").stamps
    yaw = np.unwrap(
        [
            Rotation.from_matrix(truth.pose("map", "base_link", t)[:3, :3]).as_euler("xyz")[2]
            for t in stamps[::10]
        ]
    )
    assert np.ptp(yaw) > math.radians(60)
    # The odom frame's heading differs from map's by 16.7°-31.7° (the nav2 bag).
    offsets = [
        pose_error(truth.pose("map", "odom", t), np.eye(4))[1] for t in (stamps[0], stamps[-1])
    ]
    assert math.radians(15) < offsets[0] < offsets[1] < math.radians(35)


def test_extrinsic_is_the_static_chain_of_five_edges(robot_recording: RobotRecordings) -> None:
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    mount = NAV2_TURTLEBOT.camera("oakd_rgb").mount
    assert len(mount) == 5
    chain = np.eye(4)
    for edge in mount:
        chain = chain @ edge_matrix(edge)
    got = rec.truth.extrinsic("base_link", "oakd_rgb_camera_optical_frame")
    assert pose_error(got, chain) < (1e-12, 1e-12)
    forward = got[:3, 2]  # the optical z axis: forward and 10° down
    assert forward[0] > 0.98 and math.isclose(
        math.degrees(math.asin(-forward[2])), 10.0, abs_tol=0.01
    )
    with pytest.raises(ValueError, match="dynamic"):
        rec.truth.extrinsic("map", "oakd_rgb_camera_optical_frame")


def test_the_latest_static_transform_wins(robot_recording: RobotRecordings) -> None:
    rec = robot_recording("ros2_mcap", STATIC_UPDATE)
    messages = _read(rec)
    assert len(messages["/tf_static"]) == 4
    _, last = messages["/tf_static"][-1]
    ((parent, child, tr, _),) = _transforms(last)
    assert (parent, child) == ("base_link", "camera_mount_link")
    got = rec.truth.extrinsic("base_link", "camera_mount_link")
    np.testing.assert_array_equal(got[:3, 3], (tr.x, tr.y, tr.z))
    first = robot_recording("ros2_mcap", NAV2_TURTLEBOT).truth.extrinsic(
        "base_link", "camera_mount_link"
    )
    assert pose_error(got, first)[0] > 0.005


@pytest.mark.parametrize("scenario", [SIM_TIME, SIM_TIME_WALL_LOG], ids=lambda s: s.name)
def test_sim_time_recordings_stamp_headers_in_simulation_seconds(
    robot_recording: RobotRecordings, scenario: Any
) -> None:
    rec = robot_recording("ros2_mcap", scenario)
    messages = _read(rec)
    stamps = [_stamp(m) for items in messages.values() for _, m in items]
    logs = [t for items in messages.values() for t, _ in items]
    assert min(stamps) > 0 and max(stamps) < 10**9 * 10**9 // 10**7  # under 100 s, far under 10⁹ s
    if scenario.clock == "sim":
        assert max(logs) < 100 * 10**9
    else:
        assert min(logs) > 1_700_000_000 * 10**9
    # The robot is the nav2 one on another clock: same motion relative to the start.
    ref = robot_recording("ros2_mcap", NAV2_TURTLEBOT).truth
    for i in (0, 100, 300):
        t, t_ref = rec.truth.camera("oakd_rgb").stamps[i], ref.camera("oakd_rgb").stamps[i]
        assert t - scenario.start_ns == t_ref - NAV2_TURTLEBOT.start_ns
        assert pose_error(
            rec.truth.pose("map", "base_link", t), ref.pose("map", "base_link", t_ref)
        ) < (1e-9, 1e-9)


def test_gnss_fixes_are_where_the_antenna_is(robot_recording: RobotRecordings) -> None:
    from pyproj import Transformer

    rec = robot_recording("ros2_mcap", WITH_GNSS)
    messages = _read(rec)
    assert rec.topics["/gps/fix"].msgtype == "sensor_msgs/msg/NavSatFix"
    assert rec.topics["/localization/pose"].msgtype == "geometry_msgs/msg/PoseStamped"
    # Back from WGS 84 to map's east-north-up at the origin (pyproj, ECEF, rotation).
    to_ecef = Transformer.from_crs("EPSG:4979", "EPSG:4978", always_xy=True)
    lat0, lon0, h0 = GNSS_ORIGIN
    origin = np.array(to_ecef.transform(lon0, lat0, h0))
    phi, lam = math.radians(lat0), math.radians(lon0)
    east = np.array([-math.sin(lam), math.cos(lam), 0.0])
    north = np.array(
        [-math.sin(phi) * math.cos(lam), -math.sin(phi) * math.sin(lam), math.cos(phi)]
    )
    up = np.array([math.cos(phi) * math.cos(lam), math.cos(phi) * math.sin(lam), math.sin(phi)])
    motion = Motion(WITH_GNSS)
    antenna_edge = edge_matrix(StaticEdge("base_link", "gps_link", (0.1, 0.02, 0.45)))
    for (_, fix), truth_fix in list(zip(messages["/gps/fix"], rec.truth.fixes, strict=True))[
        5:-5:10
    ]:
        assert (fix.latitude, fix.longitude, fix.header.frame_id) == (
            truth_fix.latitude,
            truth_fix.longitude,
            "gps_link",
        )
        d = np.array(to_ecef.transform(fix.longitude, fix.latitude, fix.altitude)) - origin
        t_s = (truth_fix.stamp_ns - WITH_GNSS.start_ns) / 1e9
        true_antenna = (motion.base_in_map("base_link", t_s) @ antenna_edge)[:3, 3]
        enu = np.array([d @ east, d @ north, d @ up])
        assert np.linalg.norm(enu - true_antenna) < 1e-6
        # The tf lookup interpolates published samples, and amcl's correction is future-dated.
        tf_antenna = rec.truth.pose("map", "gps_link", truth_fix.stamp_ns)[:3, 3]
        assert np.linalg.norm(enu[:2] - tf_antenna[:2]) < 0.06


def test_empty_schema_record_has_no_definition(robot_recording: RobotRecordings) -> None:
    from mcap.reader import make_reader
    from rosbags.typesys import Stores, get_typestore

    rec = robot_recording("ros2_cdr_mcap", EMPTY_SCHEMA)
    with rec.path.open("rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        assert summary is not None
        schemas = {c.topic: summary.schemas[c.schema_id] for c in summary.channels.values()}
        empty = {t for t, s in schemas.items() if s.data == b""}
        assert empty == {"/oakd/rgb/preview/image_raw"}
        assert schemas["/oakd/rgb/preview/image_raw"].name == "sensor_msgs/msg/Image"
        assert all(s.encoding == "ros2msg" for s in schemas.values())
        # The bytes are plain CDR of the standard type: the typestore's definition reads them.
        store = get_typestore(Stores.ROS2_HUMBLE)
        for _, _, message in reader.iter_messages(topics=["/oakd/rgb/preview/image_raw"]):
            image: Any = store.deserialize_cdr(message.data, "sensor_msgs/msg/Image")
            assert image.encoding == "rgb8"
            stamp = image.header.stamp.sec * 10**9 + image.header.stamp.nanosec
            np.testing.assert_array_equal(
                image.data.reshape(60, 80, 3), rec.truth.pixels("oakd_rgb", stamp)
            )
            break


# OpenCV decodes as cv_bridge does (its Bayer names are shifted by one row: ROS's rggb is
# OpenCV's BG); an independent decoder of the raw encodings.
_CV_DECODE = {
    "bayer_rggb8": "COLOR_BayerBG2RGB",
    "bayer_bggr8": "COLOR_BayerRG2RGB",
    "bayer_gbrg8": "COLOR_BayerGR2RGB",
    "bayer_grbg8": "COLOR_BayerGB2RGB",
    "uyvy": "COLOR_YUV2RGB_UYVY",
    "yuv422": "COLOR_YUV2RGB_UYVY",
    "yuyv": "COLOR_YUV2RGB_YUYV",
    "yuv422_yuy2": "COLOR_YUV2RGB_YUYV",
}


def _decode_raw(message: Any, big_endian: bool) -> NDArray[np.uint8]:
    import cv2

    h, w, step, enc = message.height, message.width, message.step, message.encoding
    rows = np.frombuffer(bytes(message.data), np.uint8).reshape(h, step)
    if enc in ("rgb8", "bgr8", "rgba8", "bgra8"):
        channels = 4 if enc.endswith("a8") else 3
        px = rows[:, : w * channels].reshape(h, w, channels)[..., :3]
        return px[..., ::-1] if enc.startswith("bgr") else px
    if enc == "mono8":
        return rows[:, :w]
    if enc == "mono16":
        return (rows[:, : 2 * w].copy().view(">u2" if big_endian else "<u2") >> 8).astype(np.uint8)
    code = getattr(cv2, _CV_DECODE[enc])
    if enc.startswith("bayer"):
        return np.asarray(cv2.cvtColor(np.ascontiguousarray(rows[:, :w]), code), np.uint8)
    packed = np.ascontiguousarray(rows[:, : 2 * w]).reshape(h, w, 2)
    return np.asarray(cv2.cvtColor(packed, code), np.uint8)


@pytest.mark.parametrize("kind", ["ros2_mcap", "foxglove_mcap"])
def test_raw_encodings_decode_to_the_source_pixels(
    robot_recording: RobotRecordings, kind: str
) -> None:
    rec = robot_recording(kind, RAW_ZOO)  # type: ignore[arg-type]
    messages = _read(rec)
    exact = {"rgba8", "bgra8", "mono8", "mono16"}
    seen = set()
    for cam in RAW_ZOO.cameras:
        truth = rec.truth.camera(cam.name)
        for (_, message), stamp in list(zip(messages[cam.topic], truth.stamps, strict=True))[::40]:
            assert message.encoding == cam.payload
            big_endian = bool(getattr(message, "is_bigendian", False))
            assert big_endian == (cam.big_endian and kind != "foxglove_mcap")
            decoded = _decode_raw(message, big_endian)
            source = rec.truth.pixels(cam.name, stamp)
            if cam.payload in exact:
                np.testing.assert_array_equal(decoded, source)
            else:
                assert psnr(decoded, source) > 44.0, cam.payload
            seen.add(cam.payload)
    assert seen == {c.payload for c in RAW_ZOO.cameras}
    mono16 = RAW_ZOO.camera("zoo_mono16")
    assert (
        rec.truth.camera("zoo_mono16").width * 2 + mono16.step_padding
        == messages[mono16.topic][0][1].step
    )


def test_the_content_tells_a_wrong_bayer_pattern_or_channel_order_apart() -> None:
    import cv2

    from tests.nuscenes.robots.images import scene_rgb

    rgb = scene_rgb(3, 1.5, 80, 60)
    mosaic = bayer_mosaic(rgb, "bayer_rggb8")
    assert psnr(np.asarray(cv2.cvtColor(mosaic, cv2.COLOR_BayerBG2RGB), np.uint8), rgb) > 44
    for wrong in ("COLOR_BayerRG2RGB", "COLOR_BayerGB2RGB", "COLOR_BayerGR2RGB"):
        assert psnr(np.asarray(cv2.cvtColor(mosaic, getattr(cv2, wrong)), np.uint8), rgb) < 25
    assert psnr(rgb[..., ::-1], rgb) < 25
    # The next frame at 15 Hz is far from this one: an off-by-one frame cannot pass a PSNR check.
    for t in np.arange(0.0, 26.0, 0.25):
        assert psnr(scene_rgb(3, t + 1 / 15, 80, 60), scene_rgb(3, t, 80, 60)) < 35


@pytest.mark.parametrize("scenario", [VIDEO_STREAMS, VIDEO_MID_GOP], ids=lambda s: s.name)
def test_video_packets_decode_with_pyav_one_frame_each(
    robot_recording: RobotRecordings, scenario: Any
) -> None:
    rec = robot_recording("foxglove_mcap", scenario)
    messages = _read(rec)
    for cam in scenario.cameras:
        if cam.payload not in ("h264", "h265"):
            continue
        truth = rec.truth.camera(cam.name)
        items = [m for _, m in messages[cam.topic]]
        assert rec.topics[cam.topic].msgtype == "foxglove.CompressedVideo"
        assert {m.format for m in items} == {cam.payload}
        packets = [bytes(m.data) for m in items]
        assert all(p.startswith(b"\x00\x00\x00\x01") for p in packets)  # Annex B
        frames = decode_packets(cam.payload, packets)
        # No B-frames: each message is one picture, in display order.
        first = truth.stamps.index(truth.decodable[0])
        assert _picture_types(cam.payload, packets[first:]) <= {"I", "P"}
        decodable = [t for t, f in zip(truth.stamps, frames, strict=True) if f is not None]
        assert decodable == list(truth.decodable)
        assert truth.keyframes[0] == truth.decodable[0]
        gaps = np.diff([truth.stamps.index(k) for k in truth.keyframes])
        assert set(gaps) == {cam.keyframe_interval}
        for stamp, frame in list(zip(truth.stamps, frames, strict=True))[::25]:
            if frame is not None:
                assert psnr(frame, rec.truth.pixels(cam.name, stamp)) > 38.0
    if scenario is VIDEO_MID_GOP:
        assert (
            rec.truth.camera("front_h264").stamps.index(rec.truth.camera("front_h264").decodable[0])
            == 20
        )


def _picture_types(codec: str, packets: list[bytes]) -> set[str]:
    import av
    from av.video.frame import PictureType

    ctx = av.CodecContext.create(codec if codec == "h264" else "hevc", "r")
    types = set()
    for data in [*packets, None]:
        packet = None if data is None else av.Packet(data)
        for frame in ctx.decode(packet):  # type: ignore[attr-defined]
            types.add(PictureType(frame.pict_type).name)
    return types


def test_video_in_a_ros2_bag_is_foxglove_msgs_compressed_video(
    robot_recording: RobotRecordings,
) -> None:
    rec = robot_recording("ros2_mcap", DEPTHAI_OAKD)
    topic = rec.camera_topics["front_video"]
    assert rec.topics[topic].msgtype == "foxglove_msgs/msg/CompressedVideo"
    messages = _read(rec)
    items = [m for _, m in messages[topic]]
    frames = decode_packets("h264", [bytes(m.data) for m in items])
    assert all(f is not None for f in frames)
    assert items[0].frame_id == "front_camera_optical_frame"
    bgr = messages["/oak/rgb/image_raw"][0][1]
    assert (bgr.encoding, rec.topics["/oak/left/image_raw"].msgtype) == (
        "bgr8",
        "sensor_msgs/msg/Image",
    )
    assert rec.truth.extrinsic("base_link", "oak_rgb_camera_optical_frame")[2, 3] > 0.3


def test_damaged_ros1_bags_refuse_a_plain_open(robot_recording: RobotRecordings) -> None:
    from rosbags.highlevel import AnyReader, AnyReaderError

    unindexed = robot_recording("ros1", ROS1_UNINDEXED)
    with unindexed.path.open("rb") as f:
        head = f.read(4096)
    assert head.startswith(b"#ROSBAG V2.0\n")
    assert struct.unpack("<Q", head[head.index(b"index_pos=") + 10 :][:8])[0] == 0
    with pytest.raises(AnyReaderError, match="not indexed"):
        AnyReader([unindexed.path]).open()
    assert 0 < sum(unindexed.readable.values()) < sum(t.count for t in unindexed.topics.values())
    truncated = robot_recording("ros1", ROS1_TRUNCATED)
    with truncated.path.open("rb") as f:
        head = f.read(4096)
    index_pos = struct.unpack("<Q", head[head.index(b"index_pos=") + 10 :][:8])[0]
    assert index_pos > truncated.path.stat().st_size
    with pytest.raises(AnyReaderError):
        AnyReader([truncated.path]).open()
    assert 0 < sum(truncated.readable.values()) < sum(unindexed.readable.values())


def _tree_bytes(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {path.name: path.read_bytes()}
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


@pytest.mark.parametrize(
    ("kind", "scenario"),
    [
        *((k, NAV2_TURTLEBOT) for k in KINDS),
        ("foxglove_mcap", VIDEO_STREAMS),
        ("ros2_cdr_mcap", EMPTY_SCHEMA),
    ],
    ids=lambda v: v if isinstance(v, str) else v.name,
)
def test_a_recording_written_twice_is_byte_identical(
    tmp_path: Path, kind: Any, scenario: Any
) -> None:
    """No writer stamps wall-clock time; encoders run single-threaded.

    The video case starts from empty caches each time, so scene generation, planning and
    both video encoders are exercised from scratch; the others re-run the writers on the
    cached plan.
    """
    written = []
    for i in range(2):
        if scenario is VIDEO_STREAMS:
            clear_caches()
        written.append(_tree_bytes(write_recording(kind, tmp_path / str(i), scenario).path))
    assert written[0].keys() == written[1].keys()
    for name in written[0]:
        assert written[0][name] == written[1][name], name


def test_writers_refuse_damage_their_container_cannot_have(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty schema"):
        write_recording("ros2_mcap", tmp_path, EMPTY_SCHEMA)
    with pytest.raises(ValueError, match="ROS 1 damage"):
        write_recording("ros2_sqlite3", tmp_path, ROS1_UNINDEXED)
    assert not any(tmp_path.iterdir())


def test_every_named_scenario_has_a_pose_for_every_camera_frame() -> None:
    from tests.nuscenes.robots.plan import plan

    for scenario in SCENARIOS.values():
        truth = plan(scenario).truth
        for cam in truth.cameras.values():
            assert cam.stamps[-1] - cam.stamps[0] >= (scenario.duration_s - 0.2) * 1e9
            for t in (cam.stamps[0], cam.stamps[-1]):
                truth.pose("map", "base_link", t)
                truth.pose("map", "base_footprint", t)
                truth.pose("base_link", cam.frame, t)
            assert all(t % 1000 == 0 for t in cam.stamps)  # whole microseconds


@settings(max_examples=200, deadline=None)
@given(
    st.floats(-math.pi, math.pi),
    st.floats(-1.5, 1.5),
    st.floats(-math.pi, math.pi),
)
def test_the_fast_roll_pitch_yaw_matrix_is_scipys(roll: float, pitch: float, yaw: float) -> None:
    np.testing.assert_allclose(
        rpy_matrix((1.0, -2.0, 0.5), roll, pitch, yaw),
        matrix((1.0, -2.0, 0.5), euler_xyzw(roll, pitch, yaw)),
        atol=1e-12,
    )


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["rgb8", "bgr8", "rgba8", "bgra8", "mono8", "mono16"]),
    st.integers(1, 6).map(lambda n: 2 * n),
    st.integers(1, 5),
    st.integers(0, 7),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_lossless_raw_encodings_round_trip(
    encoding: str, width: int, height: int, padding: int, big_endian: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    source = rgb if not encoding.startswith("mono") else rgb[..., 0]
    frame = encode_raw(source, encoding, step_padding=padding, big_endian=big_endian)
    bpp = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1, "mono16": 2}[encoding]
    assert (frame.width, frame.height, frame.step) == (width, height, width * bpp + padding)
    assert len(frame.data) == frame.step * height
    assert frame.is_bigendian == (big_endian and encoding == "mono16")

    class Message:
        pass

    message = Message()
    message.__dict__.update(
        height=height, width=width, step=frame.step, encoding=encoding, data=frame.data
    )
    np.testing.assert_array_equal(_decode_raw(message, frame.is_bigendian), source)


def test_bayer_mosaics_put_each_colour_where_the_pattern_says() -> None:
    solid = np.zeros((4, 4, 3), np.uint8)
    solid[..., 0], solid[..., 1], solid[..., 2] = 10, 20, 30
    for encoding, tile in (
        ("bayer_rggb8", "RGGB"),
        ("bayer_bggr8", "BGGR"),
        ("bayer_gbrg8", "GBRG"),
        ("bayer_grbg8", "GRBG"),
    ):
        mosaic = bayer_mosaic(solid, encoding)
        values = {"R": 10, "G": 20, "B": 30}
        assert [mosaic[0, 0], mosaic[0, 1], mosaic[1, 0], mosaic[1, 1]] == [values[c] for c in tile]
        np.testing.assert_array_equal(mosaic[2:, 2:], mosaic[:2, :2])


def test_copies_of_shared_recordings_are_independent(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros1", NAV2_TURTLEBOT)
    copy = tmp_path / rec.path.name
    shutil.copyfile(rec.path, copy)
    with copy.open("r+b") as f:
        f.truncate(100)
    assert rec.path.stat().st_size > 100
