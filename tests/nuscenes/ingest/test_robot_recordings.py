"""Real-shaped robot recordings (third-party writers) become exact nuScenes dataroots.

Every recording here is written by rosbags, foxglove-sdk or mcap (``tests/nuscenes/robots``)
with a ground truth computed independently with SciPy; the dataroots are read back with the
official ``NuScenes`` loader and compared frame by frame: ego pose within 1e-6 m / 1e-9 rad
of the composed ``world_frame -> vehicle_frame`` transform at the camera time, extrinsics equal
to the static chain, images within JPEG q95 of the source pixels.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from dataset_devkit.errors import ConfigError, FormatError
from dataset_devkit.integrity import build_manifest
from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig, build_evidence, export_dataset
from dataset_devkit.nuscenes.ingest import open_recording
from dataset_devkit.nuscenes.spec import CameraTopicConfig, IngestConfig, PoseSourceConfig
from tests.nuscenes.robots import (
    DEPTHAI_OAKD,
    EMPTY_SCHEMA,
    KINDS,
    NAV2_TURTLEBOT,
    RAW_ZOO,
    ROS1_UNINDEXED,
    SIM_TIME,
    STATIC_UPDATE,
    VIDEO_STREAMS,
    WITH_GNSS,
    RecordedRobot,
    Scenario,
    compare_dataroot,
    pose_error,
)
from tests.nuscenes.robots.fixtures import RobotRecordings

OFFICIAL = ("CAM_FRONT", "CAM_FRONT_LEFT", "CAM_FRONT_RIGHT", "CAM_BACK", "CAM_BACK_LEFT")


def _channels(scenario: Scenario) -> dict[str, str]:
    """Camera name -> channel: official names in the scenario's camera order, then CAM_Z<i>."""
    return {
        c.name: OFFICIAL[i] if i < len(OFFICIAL) else f"CAM_Z{i}"
        for i, c in enumerate(scenario.cameras)
    }


def _ingest(
    scenario: Scenario, *, pose: PoseSourceConfig | None = None, vehicle: str = "base_link"
) -> IngestConfig:
    channels = _channels(scenario)
    return IngestConfig(
        vehicle_frame=vehicle,
        pose=pose or PoseSourceConfig(source="tf", world_frame="map"),
        cameras=tuple(
            CameraTopicConfig(topic=c.topic, channel=channels[c.name]) for c in scenario.cameras
        ),
    )


def _export(
    rec: RecordedRobot, ingest: IngestConfig, out: Path, scenario: ScenarioConfig | None = None
) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    config = PipelineConfig(
        namespace="robots", ingest=ingest, scenario=scenario or ScenarioConfig()
    )
    evidence = build_evidence([rec.path], config, out / "evidence")
    export_dataset(out / "staging", evidence, config=config)
    return out / "staging"


def _exact(dataroot: Path, rec: RecordedRobot, scenario: Scenario, **kw: object) -> None:
    found = compare_dataroot(
        dataroot,
        rec,
        world_frame=str(kw.get("world_frame", "map")),
        vehicle_frame=str(kw.get("vehicle_frame", "base_link")),
        channels=_channels(scenario),
        **{k: v for k, v in kw.items() if k not in ("world_frame", "vehicle_frame")},  # type: ignore[arg-type]
    )
    assert found.mismatches == []
    assert all(n > 0 for n in found.checked.values()), found.checked


def _extension(dataroot: Path, name: str) -> Any:
    return json.loads((dataroot / "mz_extensions" / name).read_text())


@pytest.mark.needs("nuscenes")
@pytest.mark.parametrize("kind", KINDS)
def test_a_nav2_robot_builds_with_exact_tf_poses_from_every_container(
    kind: str, robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording(kind, NAV2_TURTLEBOT)  # type: ignore[arg-type]
    dataroot = _export(rec, _ingest(NAV2_TURTLEBOT), tmp_path)
    _exact(dataroot, rec, NAV2_TURTLEBOT)
    source = _extension(dataroot, "source.json")
    assert (source["pose_frame"], source["world_frame"]) == ("recording_local_tf_v1", "map")
    assert source["jpeg_policy"] == "per_camera" and source["jpeg_quality"] == 95
    recordings = _extension(dataroot, "recordings.json")["recordings"][0]
    encodings = {c["topic"]: c.get("source_encoding") for c in recordings["cameras"]}
    assert encodings == {
        "/oakd/rgb/preview/image_raw": "rgb8",
        "/camera/left/image_raw/compressed": "png",
    }
    assert recordings["pose_source"] == "tf map -> base_link"
    assert _extension(dataroot, "gnss.json")["rows"] == []  # no fix, no GNSS claim


def test_a_rebuild_of_a_robot_recording_gives_the_same_root_hash(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    roots = {
        build_manifest(_export(rec, _ingest(NAV2_TURTLEBOT), tmp_path / str(i))).root_sha256
        for i in range(2)
    }
    assert len(roots) == 1


@pytest.mark.needs("nuscenes")
def test_the_vehicle_frame_may_sit_below_the_odometry_frame_through_a_static_edge(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    # base_link -> base_footprint is static and walked backwards for the cameras (tf2
    # inverts edges): extrinsics and poses are of base_footprint.
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    dataroot = _export(rec, _ingest(NAV2_TURTLEBOT, vehicle="base_footprint"), tmp_path)
    _exact(dataroot, rec, NAV2_TURTLEBOT, vehicle_frame="base_footprint")


@pytest.mark.needs("nuscenes")
def test_a_gnss_source_takes_the_heading_from_the_declared_world_frame_chain(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    # REP-105: map -> odom -> base_link. The heading must be base_link's in map (the GNSS
    # positions' frame), never the odom frame's.
    rec = robot_recording("ros2_mcap", WITH_GNSS)
    ingest = _ingest(WITH_GNSS, pose=PoseSourceConfig(source="gnss", world_frame="map"))
    # 5 Hz fixes with jitter are a little more than the default 200 ms apart: the refusal
    # says so and what to raise.
    with pytest.raises(FormatError, match=r"GNSS fixes are farther apart than scenario.pose_"):
        _export(rec, ingest, tmp_path / "default")
    dataroot = _export(rec, ingest, tmp_path, ScenarioConfig(pose_tolerance_ms=300.0))
    from nuscenes.nuscenes import NuScenes

    nusc = NuScenes(version="v1.0-trainval", dataroot=str(dataroot), verbose=False)
    assert nusc.sample_data
    for sd in nusc.sample_data:
        ego = nusc.get("ego_pose", sd["ego_pose_token"])
        truth = rec.truth.pose("map", "base_link", sd["timestamp"] * 1000)
        from scipy.spatial.transform import Rotation

        w, x, y, z = ego["rotation"]
        got = Rotation.from_quat([x, y, z, w]).as_matrix()
        angle = Rotation.from_matrix(got.T @ truth[:3, :3]).magnitude()
        assert angle < 1e-9
        assert np.isfinite(ego["translation"]).all()
    assert _extension(dataroot, "source.json")["pose_frame"] == "legacy_web_mercator"
    assert len(_extension(dataroot, "gnss.json")["rows"]) == len(nusc.sample_data)


@pytest.mark.needs("nuscenes")
@pytest.mark.parametrize(
    ("scenario", "kind"),
    [(DEPTHAI_OAKD, "ros2_mcap"), (VIDEO_STREAMS, "foxglove_mcap"), (STATIC_UPDATE, "ros1")],
    ids=["depthai-bgr8-yuv422-h264", "foxglove-h264-h265-jpeg", "static-update-latest-wins"],
)
def test_raw_and_video_cameras_export_exact_poses_and_faithful_images(
    scenario: Scenario, kind: str, robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording(kind, scenario)  # type: ignore[arg-type]
    dataroot = _export(rec, _ingest(scenario), tmp_path)
    # A video frame went through two lossy codecs (the recording's H.264/H.265, then JPEG
    # q95): 36 dB against the pixels before the video encoder, still far from the next
    # frame's (adjacent frames of this content are under 35 dB apart).
    video = any(c.payload in ("h264", "h265") for c in scenario.cameras)
    _exact(dataroot, rec, scenario, min_psnr_db=36.0 if video else 40.0)


@pytest.mark.needs("nuscenes")
def test_jpeg_frames_are_copied_verbatim_beside_reencoded_video(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("foxglove_mcap", VIDEO_STREAMS)
    dataroot = _export(rec, _ingest(VIDEO_STREAMS), tmp_path)
    from nuscenes.nuscenes import NuScenes

    nusc = NuScenes(version="v1.0-trainval", dataroot=str(dataroot), verbose=False)
    side = _channels(VIDEO_STREAMS)["side_jpeg"]
    copied = [sd for sd in nusc.sample_data if sd["channel"] == side]
    assert copied
    for sd in copied:
        data = (dataroot / sd["filename"]).read_bytes()
        assert data == rec.truth.still_bytes("side_jpeg", sd["timestamp"] * 1000)


@pytest.mark.needs("nuscenes")
def test_every_raw_encoding_decodes_close_to_the_source_pixels(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros2_mcap", RAW_ZOO)
    # A 6 s recording: 5 s scenes, so the first holds a frame of every camera at each point.
    dataroot = _export(rec, _ingest(RAW_ZOO), tmp_path, ScenarioConfig(scene_duration_s=5.0))
    # The Bayer and 4:2:2 sources carry less than the truth's full RGB: a fixed bilinear
    # demosaic and chroma upsampling bound them (measured 33+ dB on this content).
    _exact(dataroot, rec, RAW_ZOO, min_psnr_db=30.0)


@pytest.mark.needs("nuscenes")
def test_poses_may_come_from_an_odometry_topic(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros1", NAV2_TURTLEBOT)
    pose = PoseSourceConfig(source="odometry", topic="/odom")
    dataroot = _export(rec, _ingest(NAV2_TURTLEBOT, pose=pose), tmp_path)
    from nuscenes.nuscenes import NuScenes

    nusc = NuScenes(version="v1.0-trainval", dataroot=str(dataroot), verbose=False)
    for sd in nusc.sample_data:
        ego = nusc.get("ego_pose", sd["ego_pose_token"])
        truth = rec.truth.topic_pose("/odom", "base_link", sd["timestamp"] * 1000)
        distance, angle = pose_error(_matrix(ego), truth)
        assert distance < 1e-6 and angle < 1e-9
    assert _extension(dataroot, "source.json")["world_frame"] == "odom"


@pytest.mark.needs("nuscenes")
def test_poses_may_come_from_a_pose_with_covariance_topic_in_the_map_frame(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros2_sqlite3", NAV2_TURTLEBOT)
    pose = PoseSourceConfig(source="pose", topic="/amcl_pose")
    dataroot = _export(rec, _ingest(NAV2_TURTLEBOT, pose=pose), tmp_path)
    from nuscenes.nuscenes import NuScenes

    nusc = NuScenes(version="v1.0-trainval", dataroot=str(dataroot), verbose=False)
    assert nusc.sample_data
    for sd in nusc.sample_data:
        ego = nusc.get("ego_pose", sd["ego_pose_token"])
        truth = rec.truth.topic_pose("/amcl_pose", "base_link", sd["timestamp"] * 1000)
        distance, angle = pose_error(_matrix(ego), truth)
        assert distance < 1e-6 and angle < 1e-9


def _matrix(ego: dict[str, Any]) -> npt.NDArray[np.float64]:
    from scipy.spatial.transform import Rotation

    w, x, y, z = ego["rotation"]
    out = np.eye(4)
    out[:3, :3] = Rotation.from_quat([x, y, z, w]).as_matrix()
    out[:3, 3] = ego["translation"]
    return out


@pytest.mark.needs("nuscenes")
def test_simulation_stamps_build_and_are_declared_not_hidden(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros2_mcap", SIM_TIME)
    dataroot = _export(rec, _ingest(SIM_TIME), tmp_path)
    _exact(dataroot, rec, SIM_TIME)
    assert _extension(dataroot, "recordings.json")["recordings"][0]["clock"] == "simulation"
    tags = _extension(dataroot, "tags.json")["tags"]
    assert {t["time_of_day"] for t in tags} == {"unknown"}
    assert {t["local_solar_hour"] for t in tags} == {None}


@pytest.mark.needs("nuscenes")
def test_a_schema_with_an_empty_definition_reads_with_the_standard_definition(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros2_cdr_mcap", EMPTY_SCHEMA)
    dataroot = _export(rec, _ingest(EMPTY_SCHEMA), tmp_path)
    _exact(dataroot, rec, EMPTY_SCHEMA)


def test_an_unindexed_ros1_bag_is_refused_saying_to_reindex_it(
    robot_recording: RobotRecordings,
) -> None:
    rec = robot_recording("ros1", ROS1_UNINDEXED)
    with pytest.raises(FormatError, match=r"has no index .*reindex it with `rosbag reindex`"):
        open_recording(rec.path, _ingest(NAV2_TURTLEBOT))


def test_a_robot_without_gnss_under_the_default_config_is_told_to_take_poses_from_tf(
    robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    config = PipelineConfig(namespace="robots")
    evidence = build_evidence([rec.path], config, tmp_path / "evidence")
    with pytest.raises(FormatError) as info:
        export_dataset(tmp_path / "staging", evidence, config=config)
    text = str(info.value)
    assert "without ego pose" in text and "nothing to export" in text
    assert "the pose source is GNSS (the default)" in text
    assert '[ingest.pose] source = "tf", world_frame = "map"' in text


@pytest.mark.parametrize(
    ("ingest", "key", "message"),
    [
        (
            IngestConfig(cameras=(CameraTopicConfig(topic="/oakd/rgb/preview/image_rw"),)),
            "ingest.cameras[0].topic",
            "topic '/oakd/rgb/preview/image_rw' is in none of the recordings; did you mean "
            "'/oakd/rgb/preview/image_raw'?",
        ),
        (
            IngestConfig(cameras=(CameraTopicConfig(topic="/odom"),)),
            "ingest.cameras[0].topic",
            "topic '/odom' carries no camera messages (its schema kind: odometry)",
        ),
        (
            IngestConfig(
                cameras=(
                    CameraTopicConfig(
                        topic="/oakd/rgb/preview/image_raw",
                        calibration_topic="/oakd/rgb/preview/camera_inf",
                    ),
                )
            ),
            "ingest.cameras[0].calibration_topic",
            "did you mean '/oakd/rgb/preview/camera_info'?",
        ),
        (
            IngestConfig(pose=PoseSourceConfig(source="odometry", topic="/odometry")),
            "ingest.pose.topic",
            "has no odometry topic '/odometry'; did you mean '/odom'?",
        ),
    ],
    ids=["camera-typo", "not-a-camera", "calibration-typo", "pose-topic-typo"],
)
def test_every_name_in_the_config_is_checked_against_the_recordings_before_the_ingest(
    ingest: IngestConfig, key: str, message: str, robot_recording: RobotRecordings, tmp_path: Path
) -> None:
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    copy = tmp_path / "bag"
    shutil.copytree(rec.path, copy)
    with pytest.raises(ConfigError) as info:
        build_evidence([copy], PipelineConfig(namespace="robots", ingest=ingest), tmp_path / "ev")
    assert info.value.key == key
    assert message in str(info.value)
    assert not (tmp_path / "ev").exists()


def test_a_wrong_frame_name_is_refused_with_the_frames_of_the_tree(
    robot_recording: RobotRecordings,
) -> None:
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    wrong = IngestConfig(pose=PoseSourceConfig(source="tf", world_frame="mapp"))
    with pytest.raises(
        FormatError, match=r"ingest.pose.world_frame 'mapp' is not a frame .*did you mean 'map'"
    ):
        open_recording(rec.path, wrong)


def test_recording_inspect_reports_a_decoded_folder_and_an_mcap_drive(
    recordings: dict[str, Path],
) -> None:
    from dataset_devkit.nuscenes.ingest.inspect import inspect_recording

    decoded = inspect_recording(recordings["decoded"])
    assert decoded.build == "ready" and decoded.backend == "pyav"
    assert [c.channel for c in decoded.cameras] == ["CAM_FRONT", "CAM_BACK"][: len(decoded.cameras)]
    drive = inspect_recording(recordings["protobuf"])
    assert (drive.container, drive.build, drive.clock) == ("MCAP file", "ready", "wall")
    roles = {t.topic: t.role for t in drive.topics}
    assert "gnss" in roles.values() and "camera" in roles.values()
    assert drive.pose.startswith("gnss position, tf orientation")
