"""Unreal Engine camera data to OpenCV pinhole cameras, and the checks that keep them honest.

Unreal Engine is left-handed (X forward, Y right, Z up, centimetres). The layout's world frame
is right-handed OpenCV-style, ``(UE_Y, -UE_Z, UE_X) / 100`` metres, and every camera uses
OpenCV axes (x right, y down, z forward), so a trainer can project points with ``K @ [R|t]``
without knowing anything about the engine.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.stereo.spec import CameraFile

F64 = npt.NDArray[np.float64]

#: Maps an Unreal vector (X, Y, Z) to the layout's world axes (x, y, z) = (Y, -Z, X).
UE_TO_WORLD: F64 = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])

#: Tolerance for "is a rotation" and "is the exact inverse" checks on stored float64 values.
TOLERANCE = 1e-6


def ue_rotator_matrix(pitch: float, yaw: float, roll: float) -> F64:
    """Return the 3x3 matrix whose columns are a UE actor's forward, right and up axes.

    This is Unreal's ``FRotationMatrix`` (rows = axes, row-vector convention) transposed to
    the column convention used everywhere else here. Angles are in degrees.
    """
    sp, cp = math.sin(math.radians(pitch)), math.cos(math.radians(pitch))
    sy, cy = math.sin(math.radians(yaw)), math.cos(math.radians(yaw))
    sr, cr = math.sin(math.radians(roll)), math.cos(math.radians(roll))
    rows = np.array(
        [
            [cp * cy, cp * sy, sp],
            [sr * sp * cy - cr * sy, sr * sp * sy + cr * cy, -sr * cp],
            [-(cr * sp * cy + sr * sy), cy * sr - cr * sp * sy, cr * cp],
        ]
    )
    return rows.T


def rotation_problem(rotation: F64) -> str | None:
    """Say why a 3x3 matrix is not a proper rotation (orthonormal, det +1), or ``None``."""
    det = float(np.linalg.det(rotation))
    if abs(det - 1.0) > TOLERANCE:
        return f"not a proper rotation: det = {det:.6g}, expected +1"
    error = float(np.abs(rotation.T @ rotation - np.eye(3)).max())
    if error > TOLERANCE:
        return f"not orthonormal: max |R^T R - I| = {error:.3g}"
    return None


def ue_pose_to_opencv(
    location_cm: tuple[float, float, float],
    pitch: float,
    yaw: float,
    roll: float,
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0),
) -> F64:
    """Return the 4x4 OpenCV ``camera_to_world`` for one Unreal camera transform.

    The OpenCV camera axes are the UE camera's (right, -up, forward), i.e. ``UE_TO_WORLD.T``
    in camera-local UE coordinates, so the rotation is ``M @ R_ue @ M.T``. A scale other than
    one (a mirrored or stretched camera actor) yields a matrix that ``rotation_problem``
    rejects, which is why it is applied here instead of being dropped.
    """
    r_ue = ue_rotator_matrix(pitch, yaw, roll) @ np.diag(np.asarray(scale, dtype=np.float64))
    pose = np.eye(4)
    pose[:3, :3] = UE_TO_WORLD @ r_ue @ UE_TO_WORLD.T
    pose[:3, 3] = UE_TO_WORLD @ np.asarray(location_cm, dtype=np.float64) / 100.0
    return pose


def rigid_inverse(pose: F64) -> F64:
    """Invert a rigid 4x4 transform as ``[R^T | -R^T t]`` (exact up to float rounding)."""
    inverse = np.eye(4)
    rotation_t = pose[:3, :3].T
    inverse[:3, :3] = rotation_t
    inverse[:3, 3] = -rotation_t @ pose[:3, 3]
    return inverse


def intrinsics_from_fov(hfov_deg: float, width: int, cx: float, cy: float) -> F64:
    """Pinhole ``K`` from Unreal's horizontal field of view, square pixels, recorded centre."""
    focal = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    return np.array([[focal, 0.0, cx], [0.0, focal, cy], [0.0, 0.0, 1.0]])


def _collapse(matrices: F64) -> list[Any]:
    """One matrix when every frame has the same one, else the per-frame list."""
    if bool(np.all(matrices == matrices[:1])):
        return matrices[0].tolist()  # type: ignore[no-any-return]
    return matrices.tolist()  # type: ignore[no-any-return]


def camera_file(intrinsics: F64, camera_to_world: F64, height: int, width: int) -> CameraFile:
    """Build the ``cameras/<eye>.json`` record from per-frame ``[T,3,3]`` and ``[T,4,4]``."""
    world_to_camera = np.stack([rigid_inverse(pose) for pose in camera_to_world])
    return CameraFile(
        K=_collapse(intrinsics),
        camera_to_world=_collapse(camera_to_world),
        world_to_camera=_collapse(world_to_camera),
        height=height,
        width=width,
    )


def _numbers_only(value: list[Any]) -> bool:
    """Whether nested lists hold only ints and floats (no bool, string, object or null)."""
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(item)
        elif type(item) not in (int, float):
            return False
    return True


def per_frame(value: list[Any], num_frames: int, size: int, name: str) -> F64:
    """Expand a stored matrix field to ``[num_frames, size, size]`` or raise ``ValueError``.

    A decoded document may hold anything where a number belongs (an object, a string, a
    ragged list); every such value is the same ``ValueError`` naming the field.
    """
    if not _numbers_only(value):  # NumPy would turn "1.0" and true into numbers
        raise ValueError(f"{name} must be a matrix of numbers")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # ragged
        raise ValueError(f"{name} must be a matrix of numbers") from None
    if not bool(np.all(np.isfinite(array))):
        raise ValueError(f"{name} holds a value that is not a finite number")
    if array.shape == (size, size):  # a read-only view: num_frames may be large
        return np.broadcast_to(array, (num_frames, size, size))
    if array.shape == (num_frames, size, size):
        return array
    raise ValueError(
        f"{name} has shape {list(array.shape)}, expected [{size}, {size}] "
        f"or [{num_frames}, {size}, {size}]"
    )


def camera_problems(camera: CameraFile, num_frames: int, width: int, height: int) -> list[str]:
    """Every inconsistency of a stored camera: shapes, size, inverse pair, rotations, K."""
    problems: list[str] = []
    if (camera.width, camera.height) != (width, height):
        problems.append(
            f"size is {camera.width}x{camera.height}, expected {width}x{height} from meta"
        )
    try:
        k = per_frame(camera.K, num_frames, 3, "K")
        c2w = per_frame(camera.camera_to_world, num_frames, 4, "camera_to_world")
        w2c = per_frame(camera.world_to_camera, num_frames, 4, "world_to_camera")
    except ValueError as exc:
        return [*problems, str(exc)]
    # One stored matrix stands for every frame: check it once, not num_frames times.
    shared = all(a.strides[0] == 0 for a in (k, c2w, w2c))
    for frame in range(1 if shared else num_frames):
        rotation = rotation_problem(c2w[frame, :3, :3])
        if rotation:
            problems.append(f"frame {frame}: camera_to_world {rotation}")
        gap = float(np.abs(c2w[frame] @ w2c[frame] - np.eye(4)).max())
        if gap > TOLERANCE:
            problems.append(
                f"frame {frame}: world_to_camera is not the inverse of camera_to_world "
                f"(max |c2w @ w2c - I| = {gap:.3g})"
            )
        if not np.array_equal(c2w[frame, 3], [0.0, 0.0, 0.0, 1.0]):
            problems.append(f"frame {frame}: camera_to_world last row is not [0, 0, 0, 1]")
        kf = k[frame]
        if kf[0, 0] <= 0 or kf[1, 1] <= 0 or kf[0, 1] != 0 or kf[1, 0] != 0:
            problems.append(f"frame {frame}: K is not a pinhole matrix with positive focals")
        if kf[2].tolist() != [0.0, 0.0, 1.0]:
            problems.append(f"frame {frame}: K last row is not [0, 0, 1]")
        if not (0 <= kf[0, 2] <= width - 1 and 0 <= kf[1, 2] <= height - 1):
            problems.append(
                f"frame {frame}: principal point ({kf[0, 2]}, {kf[1, 2]}) is outside the "
                f"{width}x{height} image (expected within [0, {width - 1}] x [0, {height - 1}])"
            )
    return problems
