"""The dataroot checker agrees with an exact export and names every way a wrong one is off.

An exact dataroot is made with today's pipeline from a decoded-recording twin of the nav2
robot: ``recording.json`` holds the truth's ``map → base_link`` poses at every camera time
and its static extrinsics, the videos hold the source pixels losslessly. The checker must
find nothing wrong with it, and must find each planted mistake.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from dataset_devkit.nuscenes import PipelineConfig, build_evidence, export_dataset
from tests.nuscenes.robots import NAV2_TURTLEBOT, RecordedRobot
from tests.nuscenes.robots.dataroot_check import compare_dataroot
from tests.nuscenes.robots.fixtures import RobotRecordings
from tests.nuscenes.robots.plan import GNSS_ORIGIN, enu_to_wgs84

#: Checked through the official loader of nuscenes-devkit.
pytestmark = pytest.mark.needs("nuscenes")

CHANNELS = {"oakd_rgb": "CAM_FRONT", "camera_left": "CAM_FRONT_LEFT"}


def _write_decoded_twin(folder: Path, rec: RecordedRobot) -> Path:
    """The recording as a decoded folder: poses and extrinsics from the truth, lossless video."""
    import av

    truth = rec.truth
    folder.mkdir()
    cameras = []
    times: set[int] = set()
    for name, channel in CHANNELS.items():
        cam = truth.camera(name)
        video = f"{channel.lower()}.mp4"
        with av.open(str(folder / video), mode="w") as container:
            stream = container.add_stream("libx264rgb", rate=15)
            stream.width, stream.height, stream.pix_fmt = cam.width, cam.height, "rgb24"
            stream.options = {"crf": "0", "preset": "ultrafast", "bframes": "0"}
            stream.codec_context.thread_count = 1
            for t in cam.stamps:
                frame = av.VideoFrame.from_ndarray(
                    np.ascontiguousarray(truth.pixels(name, t)), format="rgb24"
                )
                for packet in stream.encode(frame):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        extrinsic = truth.extrinsic("base_link", cam.frame)
        cameras.append(
            {
                "name": channel.lower(),
                "video": video,
                "timestamps_ns": list(cam.stamps),
                "width": cam.width,
                "height": cam.height,
                "K": cam.intrinsic,
                "rotation_vector": Rotation.from_matrix(extrinsic[:3, :3]).as_rotvec().tolist(),
                "translation": extrinsic[:3, 3].tolist(),
                "distortion_model": "plumb_bob",
                "distortion": list(cam.d),
            }
        )
        times.update(cam.stamps)
    poses: list[dict[str, Any]] = []
    for t in sorted(times):
        pose = truth.pose("map", "base_link", t)
        poses.append(
            {
                "timestamp_ns": t,
                "translation": pose[:3, 3].tolist(),
                "rotation_vector": Rotation.from_matrix(pose[:3, :3]).as_rotvec().tolist(),
            }
        )
    # Today's pipeline wants a GNSS fix near every frame: the poses' own positions, in WGS 84.
    fixes = []
    for row in poses[::8]:
        lat, lon, alt = enu_to_wgs84(*row["translation"])
        fixes.append(
            {
                "timestamp_ns": row["timestamp_ns"],
                "latitude_deg": lat,
                "longitude_deg": lon,
                "altitude_m": alt,
            }
        )
    lat0, lon0, alt0 = GNSS_ORIGIN
    doc = {
        "schema_version": 1,
        "recording_id": "nav2-twin",
        "vehicle": "turtlebot4",
        "location": "lab",
        "enu_origin": {"latitude_deg": lat0, "longitude_deg": lon0, "altitude_m": alt0},
        "cameras": cameras,
        "ego_poses": poses,
        "gnss": fixes,
    }
    (folder / "recording.json").write_text(json.dumps(doc))
    return folder


@pytest.fixture(scope="module")
def exact_dataroot(
    robot_recording: RobotRecordings, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, RecordedRobot]:
    rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)
    root = tmp_path_factory.mktemp("twin")
    twin = _write_decoded_twin(root / "twin", rec)
    config = PipelineConfig(namespace="robots-twin")
    evidence = build_evidence([twin], config, root / "evidence")
    dataroot = root / "dataroot"
    export_dataset(dataroot, evidence, config=config)
    return dataroot, rec


def test_an_exact_export_has_no_mismatch(exact_dataroot: tuple[Path, RecordedRobot]) -> None:
    dataroot, rec = exact_dataroot
    result = compare_dataroot(
        dataroot, rec, world_frame="map", vehicle_frame="base_link", channels=CHANNELS
    )
    assert result.mismatches == []
    assert min(result.checked.values()) >= 40  # key frames of a 20 s and a 6 s scene
    assert min(result.worst_psnr_db.values()) > 40.0


def _tampered(dataroot: Path, tmp_path: Path, table: str, edit: object) -> Path:
    copy = tmp_path / "dataroot"
    shutil.copytree(dataroot, copy)
    (path,) = copy.glob(f"*/{table}.json")
    rows = json.loads(path.read_text())
    edit(rows)  # type: ignore[operator]
    path.write_text(json.dumps(rows))
    return copy


def test_a_pose_in_the_odom_frame_is_named(exact_dataroot: tuple[Path, RecordedRobot]) -> None:
    dataroot, rec = exact_dataroot
    result = compare_dataroot(
        dataroot, rec, world_frame="odom", vehicle_frame="base_link", channels=CHANNELS
    )
    assert result.mismatches and all(
        "ego_pose off by" in m and "odom → base_link" in m for m in result.mismatches
    )


def test_planted_mistakes_are_each_named(
    exact_dataroot: tuple[Path, RecordedRobot], tmp_path: Path
) -> None:
    dataroot, rec = exact_dataroot

    def nudge(rows: list[dict[str, object]]) -> None:
        row = rows[0]
        row["translation"] = [row["translation"][0] + 2e-6, *row["translation"][1:]]  # type: ignore[index]

    for table, needle in (
        ("ego_pose", "ego_pose off by"),
        ("calibrated_sensor", "calibrated_sensor off by"),
    ):
        bad = _tampered(dataroot, tmp_path / table, table, nudge)
        result = compare_dataroot(
            bad, rec, world_frame="map", vehicle_frame="base_link", channels=CHANNELS
        )
        assert result.mismatches and all(needle in m for m in result.mismatches), table

    def shift(rows: list[dict[str, object]]) -> None:
        rows[0]["timestamp"] = rows[0]["timestamp"] + 1  # type: ignore[operator]

    bad = _tampered(dataroot, tmp_path / "timestamp", "sample_data", shift)
    result = compare_dataroot(
        bad, rec, world_frame="map", vehicle_frame="base_link", channels=CHANNELS
    )
    assert len(result.mismatches) == 1 and "not the header stamp" in result.mismatches[0]

    result = compare_dataroot(
        dataroot,
        rec,
        world_frame="map",
        vehicle_frame="base_link",
        channels={"oakd_rgb": "CAM_BACK"},
    )
    assert result.mismatches == ["CAM_BACK: no sample_data in the dataroot"]
