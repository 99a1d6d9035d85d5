"""Unreal Engine to OpenCV camera conversion and camera checks."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st

from dataset_devkit.stereo.cameras import (
    UE_TO_WORLD,
    camera_file,
    camera_problems,
    intrinsics_from_fov,
    rigid_inverse,
    rotation_problem,
    ue_pose_to_opencv,
    ue_rotator_matrix,
)

angles = st.floats(min_value=-360, max_value=360, allow_nan=False)
coords = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


def test_world_axes_follow_ue_y_minus_z_x_in_metres():
    pose = ue_pose_to_opencv((100.0, 200.0, 300.0), 0.0, 0.0, 0.0)
    assert pose[:3, 3].tolist() == [2.0, -3.0, 1.0]


def test_unrotated_ue_camera_looks_along_world_z_with_y_down():
    rotation = ue_pose_to_opencv((0.0, 0.0, 0.0), 0.0, 0.0, 0.0)[:3, :3]
    assert np.allclose(rotation, np.eye(3))


def test_yaw_turns_the_camera_toward_ue_y_which_is_world_x():
    forward = ue_pose_to_opencv((0.0, 0.0, 0.0), 0.0, 90.0, 0.0)[:3, 2]
    assert np.allclose(forward, [1.0, 0.0, 0.0])


def test_positive_pitch_looks_up_which_is_world_minus_y():
    forward = ue_pose_to_opencv((0.0, 0.0, 0.0), 90.0, 0.0, 0.0)[:3, 2]
    assert np.allclose(forward, [0.0, -1.0, 0.0])


def test_forward_axis_matches_the_ue_forward_vector_mapped_to_world():
    pitch, yaw, roll = 12.0, -40.0, 7.0
    ue_forward = ue_rotator_matrix(pitch, yaw, roll)[:, 0]
    pose = ue_pose_to_opencv((0.0, 0.0, 0.0), pitch, yaw, roll)
    assert np.allclose(pose[:3, 2], UE_TO_WORLD @ ue_forward)


@given(angles, angles, angles, coords, coords, coords)
def test_every_rotator_gives_a_proper_rotation_and_an_exact_inverse(p, y, r, x, yy, z):
    pose = ue_pose_to_opencv((x, yy, z), p, y, r)
    assert rotation_problem(pose[:3, :3]) is None
    assert np.abs(pose @ rigid_inverse(pose) - np.eye(4)).max() < 1e-9


def test_a_mirrored_camera_is_an_improper_rotation():
    pose = ue_pose_to_opencv((0.0, 0.0, 0.0), 0.0, 0.0, 0.0, scale=(1.0, -1.0, 1.0))
    problem = rotation_problem(pose[:3, :3])
    assert problem is not None and "det = -1" in problem


def test_intrinsics_use_the_horizontal_fov_and_the_recorded_principal_point():
    k = intrinsics_from_fov(90.0, 1280, 639.5, 359.5)
    assert np.allclose(k, [[640.0, 0.0, 639.5], [0.0, 640.0, 359.5], [0.0, 0.0, 1.0]])


def test_static_values_collapse_to_one_matrix_and_moving_poses_stay_per_frame():
    k = np.stack([intrinsics_from_fov(90.0, 64, 31.5, 23.5)] * 3)
    poses = np.stack([ue_pose_to_opencv((float(i), 0.0, 0.0), 0.0, 0.0, 0.0) for i in range(3)])
    camera = camera_file(k, poses, 48, 64)
    assert np.asarray(camera.K).shape == (3, 3)
    assert np.asarray(camera.camera_to_world).shape == (3, 4, 4)
    assert camera_problems(camera, 3, 64, 48) == []


def test_camera_problems_reports_a_broken_inverse_a_bad_principal_point_and_a_size():
    k = np.stack([intrinsics_from_fov(90.0, 64, 99.0, 23.5)] * 2)
    poses = np.stack([ue_pose_to_opencv((0.0, 0.0, 0.0), 0.0, float(i), 0.0) for i in range(2)])
    camera = camera_file(k, poses, 48, 64)
    w2c = np.asarray(camera.world_to_camera)
    w2c[1, 0, 3] += 1.0
    broken = type(camera)(
        K=camera.K,
        camera_to_world=camera.camera_to_world,
        world_to_camera=w2c.tolist(),
        height=48,
        width=64,
    )
    problems = camera_problems(broken, 2, 32, 48)
    assert any("size is 64x48, expected 32x48" in p for p in problems)
    assert any("frame 1: world_to_camera is not the inverse" in p for p in problems)
    assert sum("principal point" in p for p in problems) == 2


def test_a_yawed_ue_pose_gives_the_hand_derived_opencv_camera_to_world():
    # yaw 90: UE forward is +Y (world +x), UE right is -X (world -z), UE up stays +Z (world -y)
    pose = ue_pose_to_opencv((100.0, 200.0, 300.0), 0.0, 90.0, 0.0)
    expected = [[0, 0, 1, 2], [0, 1, 0, -3], [-1, 0, 0, 1], [0, 0, 0, 1]]
    assert np.allclose(pose, expected, atol=1e-12)


def test_a_positive_ue_roll_turns_the_image_x_axis_toward_world_down():
    # roll 90 (right wing down): UE right becomes -Z, i.e. world +y (down)
    pose = ue_pose_to_opencv((0.0, 0.0, 0.0), 0.0, 0.0, 90.0)
    expected = [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    assert np.allclose(pose, expected, atol=1e-12)


def test_a_pitched_and_yawed_pose_matches_the_closed_form_axes():
    # pitch -30 (looking down), yaw 45: columns are right, down, forward in world axes
    pose = ue_pose_to_opencv((0.0, 0.0, 0.0), -30.0, 45.0, 0.0)
    s2, s3 = np.sqrt(0.5), np.sqrt(3.0) / 2
    right = [s2, 0.0, -s2]
    down = [-0.5 * s2, s3, -0.5 * s2]
    forward = [s3 * s2, 0.5, s3 * s2]
    assert np.allclose(pose[:3, :3], np.array([right, down, forward]).T, atol=1e-12)


def test_points_ahead_right_and_above_project_where_a_pinhole_camera_sees_them():
    k = intrinsics_from_fov(90.0, 1280, 639.5, 359.5)
    location = np.array([500.0, -120.0, 250.0])  # UE centimetres
    pitch, yaw, roll = 10.0, -35.0, 0.0
    c2w = ue_pose_to_opencv(tuple(location), pitch, yaw, roll)
    w2c = rigid_inverse(c2w)
    axes = ue_rotator_matrix(pitch, yaw, roll)  # UE forward, right, up (columns)

    def project(offset_cm: npt.NDArray[np.float64]) -> list[float]:
        world = UE_TO_WORLD @ (location + offset_cm) / 100.0
        camera = w2c[:3, :3] @ world + w2c[:3, 3]
        assert camera[2] > 0  # in front of the camera
        pixel = k @ camera
        return [float(pixel[0] / pixel[2]), float(pixel[1] / pixel[2])]

    ahead = 1000.0 * axes[:, 0]
    assert np.allclose(project(ahead), [639.5, 359.5])
    # 45 degrees to the right at 90 degrees HFOV lands on the right edge: cx + fx
    assert np.allclose(project(ahead + 1000.0 * axes[:, 1]), [639.5 + 640.0, 359.5])
    above = project(ahead + 100.0 * axes[:, 2])
    assert np.isclose(above[0], 639.5) and above[1] < 359.5


def test_intrinsics_at_1280x720_for_a_60_degree_fov():
    k = intrinsics_from_fov(60.0, 1280, 639.5, 359.5)
    focal = 640.0 / np.tan(np.radians(30.0))
    assert np.allclose(k, [[focal, 0.0, 639.5], [0.0, focal, 359.5], [0.0, 0.0, 1.0]])
    assert np.isclose(focal, 1108.5125168440814)
