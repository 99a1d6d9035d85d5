"""Rigid transforms as 4×4 matrices (numpy + SciPy), independent of the devkit's own geometry.

The ground truth of the robot recordings is computed here and only here, so a mistake in the
devkit's hand-written quaternion code cannot hide behind the same mistake in its tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation, Slerp

Matrix = NDArray[np.float64]


def matrix(translation: Sequence[float], rotation_xyzw: Sequence[float]) -> Matrix:
    """The 4×4 transform that maps child coordinates into parent coordinates."""
    out = np.eye(4)
    out[:3, :3] = Rotation.from_quat(np.asarray(rotation_xyzw, dtype=np.float64)).as_matrix()
    out[:3, 3] = np.asarray(translation, dtype=np.float64)
    return out


def inverse(transform: Matrix) -> Matrix:
    """The inverse of a rigid transform (transpose of the rotation, no general inversion)."""
    out = np.eye(4)
    rot = transform[:3, :3].T
    out[:3, :3] = rot
    out[:3, 3] = -rot @ transform[:3, 3]
    return out


def quaternion_xyzw(transform: Matrix) -> tuple[float, float, float, float]:
    """The rotation of *transform* as a unit quaternion, x y z w, with w >= 0."""
    q = Rotation.from_matrix(transform[:3, :3]).as_quat()
    if q[3] < 0:
        q = -q
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))


def quaternion_wxyz(transform: Matrix) -> tuple[float, float, float, float]:
    """The rotation of *transform* in nuScenes order (w x y z), with w >= 0."""
    x, y, z, w = quaternion_xyzw(transform)
    return (w, x, y, z)


def euler_xyzw(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """The quaternion of extrinsic roll, pitch, yaw (radians), as tf2's ``setRPY``."""
    q = Rotation.from_euler("xyz", [roll, pitch, yaw]).as_quat()
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))


def rpy_matrix(translation: Sequence[float], roll: float, pitch: float, yaw: float) -> Matrix:
    """As ``matrix(translation, euler_xyzw(roll, pitch, yaw))``, written out for speed.

    The generator evaluates the motion tens of thousands of times per recording; SciPy's
    per-call overhead would dominate. A test checks the two agree.
    """
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr, translation[0]],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr, translation[1]],
            [-sp, cp * sr, cp * cr, translation[2]],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def quaternions_xyzw(transforms: Sequence[Matrix]) -> list[tuple[float, float, float, float]]:
    """:func:`quaternion_xyzw` of many transforms in one SciPy call."""
    if not transforms:
        return []
    q = Rotation.from_matrix(np.stack([t[:3, :3] for t in transforms])).as_quat()
    q[q[:, 3] < 0] *= -1
    return [(float(a), float(b), float(c), float(d)) for a, b, c, d in q]


def interpolate(
    a_translation: Sequence[float],
    a_rotation: Sequence[float],
    b_translation: Sequence[float],
    b_rotation: Sequence[float],
    fraction: float,
) -> Matrix:
    """tf2's interpolation between two samples: lerp of the translation, slerp of the rotation.

    tf2 (``Cache::interpolate``) slerps along the shortest arc, as ``Slerp`` does.
    """
    ta, tb = np.asarray(a_translation, np.float64), np.asarray(b_translation, np.float64)
    slerp = Slerp([0.0, 1.0], Rotation.from_quat(np.array([a_rotation, b_rotation], np.float64)))
    out = np.eye(4)
    out[:3, :3] = slerp([fraction]).as_matrix()[0]
    out[:3, 3] = ta + (tb - ta) * fraction
    return out


def pose_error(a: Matrix, b: Matrix) -> tuple[float, float]:
    """Distance (metres) and rotation angle (radians) between two transforms."""
    distance = float(np.linalg.norm(a[:3, 3] - b[:3, 3]))
    angle = float(Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).magnitude())
    return distance, angle
