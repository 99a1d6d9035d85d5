"""The per-scene ego pose figure: heading from the quaternion, speed from the poses, drawn
for every sampled scene of a camera-only dataroot (nuscenes-devkit needs a map and LIDAR)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from dataset_devkit.nuscenes import Dataset
from dataset_devkit.preview import Kind
from dataset_devkit.preview.nuscenes_ego import ego_track, render_ego_poses, yaw_of


def _quaternion(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


@given(st.floats(-math.pi + 1e-6, math.pi - 1e-6))
def test_yaw_of_recovers_the_heading_of_a_rotation_about_z(yaw: float) -> None:
    assert math.isclose(yaw_of(_quaternion(yaw)), yaw, abs_tol=1e-9)


def test_the_track_is_in_time_order_from_the_first_pose_with_speed_and_unwrapped_heading():
    # Driving a quarter circle of radius 10 m at 5 m/s, heading through +-180 degrees.
    poses = []
    for i in range(9):
        angle = math.pi / 2 + i * math.pi / 16  # position angle; heading = angle + 90 deg
        poses.append({
            "timestamp": 1_000_000 + i * 314_159,
            "translation": [100 + 10 * math.cos(angle), 200 + 10 * math.sin(angle), 0.0],
            "rotation": _quaternion(math.atan2(math.sin(angle + math.pi / 2),
                                               math.cos(angle + math.pi / 2))),
        })  # fmt: skip
    track = ego_track(list(reversed(poses)))  # order comes from the timestamps
    assert track.seconds[0] == 0 and np.all(np.diff(track.seconds) > 0)
    np.testing.assert_allclose(track.xy[0], [0.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(track.origin, [100.0, 210.0], atol=1e-9)
    chord = 2 * 10 * math.sin(math.pi / 32)
    np.testing.assert_allclose(track.speed, chord / 0.314159, rtol=1e-9)
    assert np.all(np.diff(track.heading_deg) > 0)  # no jump where the heading passes 180
    assert math.isclose(track.heading_deg[-1] - track.heading_deg[0], 90.0, abs_tol=1e-6)


def test_each_sampled_scene_gets_a_figure_of_its_poses(pages: dict[Kind, Path]) -> None:
    page = pages[Kind.NUSCENES]
    html = page.read_text()
    assert "Ego poses over time per scene (no map needed)" in html
    for n in range(3):  # the default --scenes 3
        name = f"nuscenes_scene{n:03d}_ego.png"
        assert f'src="{name}"' in html
        with Image.open(page.parent / name) as image:
            assert image.size == (1000, 420)


def test_the_poses_are_every_frame_of_one_camera_in_the_scene(
    demo_root: Path, tmp_path: Path
) -> None:
    dataroot = demo_root / "nuscenes" / "staging-mcap"
    ds = Dataset(dataroot)
    scene = ds.table("scene")[0]
    rows = json.loads((dataroot / "v1.0-trainval" / "sample_data.json").read_bytes())
    members = {s["token"] for s in ds.scene_samples(scene["token"])}
    front = {
        c["token"]
        for c in ds.table("calibrated_sensor")
        if ds.get("sensor", c["sensor_token"])["channel"] == "CAM_FRONT"
    }
    expected = sorted(
        r["timestamp"] for r in rows
        if r["sample_token"] in members and r["calibrated_sensor_token"] in front
    )  # fmt: skip
    section = render_ego_poses(ds, [scene], tmp_path)
    assert len(section.items) == 1
    title = section.items[0].caption  # type: ignore[union-attr]
    assert f"{len(expected)} ego poses of CAM_FRONT frames" in title
