"""Unreal Engine to OpenCV camera conversion and camera checks."""

from __future__ import annotations

import numpy as np
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
