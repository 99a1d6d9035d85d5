"""The sample robot recording: deterministic, readable by rosbags, and buildable with tf poses.

The checks read the written bags back with rosbags' ``AnyReader`` (not our ingest), rebuild
tf2's answer from the transforms the bag holds with the tests' own SciPy buffer
(:mod:`tests.nuscenes.robots.truth`), and compare the dataroot the real pipeline builds
from ``[ingest.pose] source = "tf"`` through the official ``NuScenes`` loader.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import simplejpeg

from dataset_devkit.errors import ConfigError, DestinationExistsError
from dataset_devkit.integrity import build_manifest
from dataset_devkit.nuscenes import build_evidence, export_dataset, load_build_config
from dataset_devkit.nuscenes.common.pixels import raw_to_pixels
from dataset_devkit.nuscenes.options import CameraTopicConfig, PoseSourceConfig
from dataset_devkit.nuscenes.samples_robot import (
    ROBOT_ENCODINGS,
    SampleRobot,
    robot_cameras,
    robot_ingest_config,
    write_sample_robot,
)
from tests.nuscenes.robots import pose_error, psnr
from tests.nuscenes.robots.geometry import matrix
from tests.nuscenes.robots.truth import TfSample, TransformBuffer

SMALL = SampleRobot(duration_s=3.0, fps=10.0, width=64, height=48)
#: Long enough for three 4 s scenes and a tail.
BUILD = SampleRobot(duration_s=14.0, fps=10.0, width=96, height=72)


def _path(folder: Path, robot: SampleRobot, name: str = "robot") -> Path:
    return folder / (f"{name}.bag" if robot.storage == "ros1" else name)


def _write_in(folder: Path, robot: SampleRobot, name: str = "robot") -> Path:
    folder.mkdir(exist_ok=True)
    return write_sample_robot(_path(folder, robot, name), robot)


def _files(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {path.name: path.read_bytes()}
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def _read(path: Path) -> list[tuple[str, str, int, Any]]:
    """Every message as ``(topic, message type, log time, decoded message)``, in file order."""
    from rosbags.highlevel import AnyReader

    with AnyReader([path]) as reader:
        return [
            (c.topic, c.msgtype, t, reader.deserialize(raw, c.msgtype))
            for c, t, raw in reader.messages()
        ]


def _stamp(message: Any) -> int:
    stamp = message.header.stamp
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3", "ros1"])
def test_writing_the_same_robot_twice_gives_identical_bytes(storage: str, tmp_path: Path) -> None:
    robot = dataclasses.replace(SMALL, storage=storage)
    first = _write_in(tmp_path / "a", robot)
    second = _write_in(tmp_path / "b", robot)
    assert _files(first) == _files(second)
    other = _write_in(tmp_path / "c", dataclasses.replace(robot, start_ns=robot.start_ns + 1000))
    assert _files(other).keys() == _files(first).keys()
    assert _files(other) != _files(first)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3", "ros1"])
def test_anyreader_reads_the_nav2_topics_frames_and_pixels(storage: str, tmp_path: Path) -> None:
    robot = dataclasses.replace(SMALL, storage=storage)
    path = write_sample_robot(_path(tmp_path, robot), robot)
    messages = _read(path)
    front, rear = robot.cameras
    counts = Counter(topic for topic, _, _, _ in messages)
    frames = robot.frame_count
    assert frames == 30
    assert counts.pop("/tf") > counts.pop("/odom") > 0
    assert counts == {
        "/tf_static": 1,
        front.topic: frames,
        front.info_topic: frames,
        rear.topic: frames,
        rear.info_topic: frames,
    }
    assert {(topic, kind) for topic, kind, _, _ in messages} == {
        ("/tf_static", "tf2_msgs/msg/TFMessage"),
        ("/tf", "tf2_msgs/msg/TFMessage"),
        ("/odom", "nav_msgs/msg/Odometry"),
        (front.topic, "sensor_msgs/msg/Image"),
        (front.info_topic, "sensor_msgs/msg/CameraInfo"),
        (rear.topic, "sensor_msgs/msg/Image"),
        (rear.info_topic, "sensor_msgs/msg/CameraInfo"),
    }
    log_times = [t for _, _, t, _ in messages]
    assert log_times == sorted(log_times)
    # No GNSS: nothing but tf, odometry and the cameras.
    assert not any("NavSatFix" in kind for _, kind, _, _ in messages)
    edges = {
        (x.header.frame_id, x.child_frame_id)
        for topic, _, _, m in messages
        if topic == "/tf"
        for x in m.transforms
    }
    assert edges == {("map", "odom"), ("odom", "base_link")}
    (static,) = [m for topic, _, _, m in messages if topic == "/tf_static"]
    chain = {x.child_frame_id: x.header.frame_id for x in static.transforms}
    assert chain["base_footprint"] == "base_link"
    for camera in robot.cameras:
        frame, depth = camera.optical_frame, 0
        while frame != "base_link":
            frame, depth = chain[frame], depth + 1
        assert depth >= 3  # a chain of several static edges to the optical frame
    for i, camera in enumerate(robot.cameras):
        images = [m for topic, _, _, m in messages if topic == camera.topic]
        infos = [m for topic, _, _, m in messages if topic == camera.info_topic]
        stamps = [robot.frame_stamp(i, k) for k in range(frames)]
        assert [_stamp(m) for m in images] == stamps == [_stamp(m) for m in infos]
        assert {m.header.frame_id for m in images + infos} == {camera.optical_frame}
        k = 7
        image = images[k]
        assert (image.encoding, image.width, image.height, image.step) == ("rgb8", 64, 48, 192)
        pixels = np.frombuffer(bytes(image.data), np.uint8).reshape(48, 64, 3)
        assert np.array_equal(pixels, robot.pixels(i, k))
        assert not np.array_equal(pixels, robot.pixels(i, k + 1))
        k_matrix = list(infos[k].K if storage == "ros1" else infos[k].k)
        assert k_matrix == robot.intrinsic()


def test_transforms_and_odometry_cover_every_frame_and_agree(tmp_path: Path) -> None:
    path = write_sample_robot(tmp_path / "robot", SMALL)
    messages = _read(path)
    odom = [m for topic, _, _, m in messages if topic == "/odom"]
    base = [
        (_stamp(x), x.transform)
        for topic, _, _, m in messages
        if topic == "/tf"
        for x in m.transforms
        if x.child_frame_id == "base_link"
    ]
    assert [_stamp(m) for m in odom] == [t for t, _ in base]
    for m, (_, tf) in zip(odom, base, strict=True):
        assert (m.header.frame_id, m.child_frame_id) == ("odom", "base_link")
        p, q = m.pose.pose.position, m.pose.pose.orientation
        assert (p.x, p.y, p.z) == (tf.translation.x, tf.translation.y, tf.translation.z)
        assert (q.x, q.y, q.z, q.w) == (tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w)
    amcl = [
        _stamp(x)
        for topic, _, _, m in messages
        if topic == "/tf"
        for x in m.transforms
        if x.child_frame_id == "odom"
    ]
    first = SMALL.frame_stamp(0, 0)
    last = SMALL.frame_stamp(len(SMALL.cameras) - 1, SMALL.frame_count - 1)
    for stamps, hz in ((amcl, 10), ([t for t, _ in base], 50)):
        assert stamps[0] < first and stamps[-1] > last
        assert set(np.diff(stamps)) == {round(1e9 / hz)}


def _tf_buffer(messages: list[tuple[str, str, int, Any]]) -> TransformBuffer:
    buffer = TransformBuffer()
    for topic, _, _, m in messages:
        if topic not in ("/tf", "/tf_static"):
            continue
        for x in m.transforms:
            t, r = x.transform.translation, x.transform.rotation
            sample = TfSample(
                _stamp(x),
                x.header.frame_id,
                x.child_frame_id,
                (t.x, t.y, t.z),
                (r.x, r.y, r.z, r.w),
            )
            buffer.add(sample, static=topic == "/tf_static")
    return buffer


def _nuscenes(translation: list[float], rotation_wxyz: list[float]) -> Any:
    w, x, y, z = rotation_wxyz
    return matrix(translation, (x, y, z, w))


_TOML = """\
namespace = "robot-test"

[sources]
type = "mcap_hf"
paths = ["{recording}"]

[ingest]
vehicle_frame = "base_footprint"

[ingest.pose]
source = "tf"
world_frame = "map"

[[ingest.cameras]]
topic = "/oakd/rgb/preview/image_raw"
channel = "CAM_FRONT"
calibration_topic = "/oakd/rgb/preview/camera_info"

[[ingest.cameras]]
topic = "/rear_camera/image_raw"
channel = "CAM_BACK"
calibration_topic = "/rear_camera/camera_info"

[scenario]
scene_duration_s = 4.0
min_scene_duration_s = 2.0

[split]
test_fraction = 0.5

[image]
jpeg_quality = 95

[publication]
version = "v1.0-trainval"
refuse_overwrite = true

[paths]
output_dir = "out"
"""


@pytest.mark.needs("nuscenes")
@pytest.mark.parametrize("storage", ["mcap", "sqlite3", "ros1"])
def test_a_tf_build_opens_in_the_official_loader_with_the_bags_own_poses(
    storage: str, tmp_path: Path
) -> None:
    from nuscenes.nuscenes import NuScenes

    robot = dataclasses.replace(BUILD, storage=storage)
    path = write_sample_robot(_path(tmp_path, robot), robot)
    toml = tmp_path / "build.toml"
    toml.write_text(_TOML.format(recording=path.name), encoding="utf-8")
    config = load_build_config(toml).pipeline
    assert config.ingest == robot_ingest_config(robot)
    evidence = build_evidence([path], config, tmp_path / "evidence")
    staging = tmp_path / "staging"
    export_dataset(staging, evidence, config=config)
    nusc = NuScenes(version="v1.0-trainval", dataroot=str(staging), verbose=False)
    assert len(nusc.scene) == 3
    assert sorted(s["channel"] for s in nusc.sensor) == ["CAM_BACK", "CAM_FRONT"]
    truth = _tf_buffer(_read(path))
    frame_of = {
        (c.channel, robot.frame_stamp(i, k)): (i, k)
        for i, c in enumerate(robot.cameras)
        for k in range(robot.frame_count)
    }
    optical = {c.channel: c.optical_frame for c in robot.cameras}
    assert nusc.sample_data
    for sd in nusc.sample_data:
        channel = nusc.get("calibrated_sensor", sd["calibrated_sensor_token"])
        sensor = nusc.get("sensor", channel["sensor_token"])["channel"]
        t_ns = sd["timestamp"] * 1000
        ego = nusc.get("ego_pose", sd["ego_pose_token"])
        expected = truth.lookup("map", "base_footprint", t_ns)
        distance, angle = pose_error(_nuscenes(ego["translation"], ego["rotation"]), expected)
        assert distance < 1e-6 and angle < 1e-9, (sensor, t_ns, distance, angle)
        extrinsic = truth.static_lookup("base_footprint", optical[sensor])
        distance, angle = pose_error(
            _nuscenes(channel["translation"], channel["rotation"]), extrinsic
        )
        assert distance < 1e-9 and angle < 1e-9
        i, k = frame_of[(sensor, t_ns)]
        image = simplejpeg.decode_jpeg(Path(nusc.get_sample_data_path(sd["token"])).read_bytes())
        assert psnr(image, robot.pixels(i, k)) >= 40.0
        assert psnr(image, robot.pixels(i, k + 1)) < 35.0
    again = _write_in(tmp_path / "again", robot)
    rebuilt = build_evidence([again], config, tmp_path / "evidence-again")
    export_dataset(tmp_path / "staging-again", rebuilt, config=config)
    assert build_manifest(tmp_path / "staging-again").root_sha256 == (
        build_manifest(staging).root_sha256
    )


def test_robot_ingest_config_maps_every_camera_and_takes_poses_from_tf() -> None:
    robot = SampleRobot(cameras=robot_cameras(3))
    config = robot_ingest_config(robot, vehicle_frame="base_link")
    assert config.vehicle_frame == "base_link"
    assert config.pose == PoseSourceConfig(source="tf", world_frame="map")
    assert config.cameras == (
        CameraTopicConfig(
            topic="/oakd/rgb/preview/image_raw",
            channel="CAM_FRONT",
            calibration_topic="/oakd/rgb/preview/camera_info",
        ),
        CameraTopicConfig(
            topic="/rear_camera/image_raw",
            channel="CAM_BACK",
            calibration_topic="/rear_camera/camera_info",
        ),
        CameraTopicConfig(
            topic="/front_left_camera/image_raw",
            channel="CAM_FRONT_LEFT",
            calibration_topic="/front_left_camera/camera_info",
        ),
    )


_LOSSLESS = ("rgb8", "bgr8", "rgba8", "bgra8")


@pytest.mark.parametrize("group", [ROBOT_ENCODINGS[:6], ROBOT_ENCODINGS[6:]])
def test_every_encoding_holds_the_frame_the_robot_shows(
    group: tuple[str, ...], tmp_path: Path
) -> None:
    cameras = tuple(
        dataclasses.replace(c, encoding=e)
        for c, e in zip(robot_cameras(len(group)), group, strict=True)
    )
    robot = dataclasses.replace(SMALL, duration_s=1.0, cameras=cameras)
    messages = _read(write_sample_robot(tmp_path / "robot", robot))
    for i, camera in enumerate(cameras):
        images = [m for topic, _, _, m in messages if topic == camera.topic]
        assert len(images) == robot.frame_count
        for k in (0, robot.frame_count - 1):
            m = images[k]
            assert m.encoding == camera.encoding
            decoded = raw_to_pixels(
                bytes(m.data),
                encoding=m.encoding,
                width=m.width,
                height=m.height,
                step=m.step,
                is_bigendian=bool(m.is_bigendian),
                what=camera.topic,
            )
            rgb = robot.pixels(i, k)
            if camera.encoding in _LOSSLESS:
                assert np.array_equal(decoded, rgb)
            elif camera.encoding.startswith("mono"):
                luma = rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
                assert decoded.shape == (48, 64)
                assert np.abs(decoded - luma).max() <= 1.5
            else:  # a Bayer mosaic or 4:2:2 chroma loses detail, not the picture
                assert psnr(decoded, rgb) > 30.0, camera.encoding


def test_memory_does_not_grow_with_the_recording_length(tmp_path: Path) -> None:
    robot = dataclasses.replace(SMALL, width=320, height=240, cameras=robot_cameras(1))
    write_sample_robot(tmp_path / "warm", dataclasses.replace(robot, duration_s=0.5))
    peaks = []
    for seconds in (2.0, 10.0):
        tracemalloc.start()
        try:
            write_sample_robot(
                tmp_path / f"r{seconds}", dataclasses.replace(robot, duration_s=seconds)
            )
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    frame = 320 * 240 * 3
    # Eighty more frames in the long recording; at most a few are alive at any time.
    assert peaks[1] < peaks[0] + 4 * frame, peaks


def test_a_failed_write_leaves_nothing_and_a_rerun_writes_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.nuscenes.samples_robot import writer

    real = writer._events

    def failing(robot: SampleRobot, messages: Any) -> Any:
        for n, event in enumerate(real(robot, messages)):
            if n == 40:
                raise OSError("disk full")
            yield event

    monkeypatch.setattr(writer, "_events", failing)
    with pytest.raises(OSError, match="disk full"):
        write_sample_robot(tmp_path / "robot", SMALL)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(writer, "_events", real)
    path = write_sample_robot(tmp_path / "robot", SMALL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["robot"]
    assert sorted(p.name for p in path.iterdir()) == ["metadata.yaml", "robot.mcap"]


def test_a_killed_writer_leaves_no_recording_and_the_next_call_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "robot"
    code = (
        "import sys; from dataset_devkit.nuscenes.samples_robot import SampleRobot, "
        "write_sample_robot; write_sample_robot(sys.argv[1], SampleRobot(duration_s=600))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", code, str(target)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not any(p.stat().st_size > 1 << 20 for p in tmp_path.rglob("*.mcap")):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
    (staging,) = tmp_path.iterdir()
    assert staging.name.startswith(".robot.staging-")  # never the destination itself
    path = write_sample_robot(target, SMALL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["robot"]
    assert _files(path) == _files(_write_in(tmp_path / "fresh", SMALL))


def test_an_existing_destination_is_refused_and_left_untouched(tmp_path: Path) -> None:
    target = tmp_path / "robot"
    target.mkdir()
    with pytest.raises(DestinationExistsError, match="never replaced"):
        write_sample_robot(target, SMALL)
    assert list(target.iterdir()) == []
    with pytest.raises(ConfigError, match=r"must be a \.bag file"):
        write_sample_robot(tmp_path / "robot1", dataclasses.replace(SMALL, storage="ros1"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["robot"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"storage": "mcaps"}, r"storage: 'mcaps' .*did you mean 'mcap'"),
        ({"width": 63}, r"width: expected an even number of pixels, found 63"),
        ({"height": 0}, r"height: expected a positive int, found 0"),
        ({"fps": float("nan")}, r"fps: expected a positive float"),
        ({"duration_s": True}, r"duration_s: expected a positive float"),
        ({"cameras": ()}, r"cameras: expected a non-empty tuple"),
        ({"start_ns": 31_000_000_000}, r"start_ns: expected whole microseconds"),
    ],
)
def test_a_bad_parameter_is_one_clear_error(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SampleRobot(**change)


def test_a_bad_camera_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"'rgb9' .*did you mean 'rgb8'"):
        robot_cameras(2, encoding="rgb9")
    with pytest.raises(ConfigError, match="expected 1 to 6 cameras, found 7"):
        robot_cameras(7)
    twins = (robot_cameras(1)[0], robot_cameras(1)[0])
    with pytest.raises(ConfigError, match="two cameras share a name"):
        SampleRobot(cameras=twins)
    bad = (dataclasses.replace(robot_cameras(1)[0], encoding="jpeg"),)
    with pytest.raises(ConfigError, match=r"cameras\[0\]\.encoding: 'jpeg'"):
        SampleRobot(cameras=bad)
