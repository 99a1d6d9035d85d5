"""Rotations and rigid transforms: rotation vectors, wxyz quaternions, slerp, composition.

Hand-written on purpose, in scalar IEEE double arithmetic: these values are written into the
exported tables, whose bytes feed the dataroot's root hash, so they must be a function of the
inputs alone. A library computes the same rotation with another summation order, formula or
vectorised kernel, and changes it between releases (measured: pyquaternion's product,
rotation, slerp and axis-angle agree to the last bit for only 14-26% of random inputs), so
calling SciPy's ``Rotation``/``Slerp`` or pyquaternion would tie every published root hash
to a SciPy or numpy release. A few dozen lines of plain float arithmetic, evaluated in a fixed
order by Python's own floats, keep the dataroot bytes identical across SciPy and numpy
releases. Sums are written out left to right rather than with ``sum()``, which Python 3.12
made compensated (the published bytes are those of the plain sum, as on 3.11); ``sin``,
``cos`` and ``acos`` come from the platform's C math library, as numpy's would. Products are
written out term by term instead of as nested calls: lookups in a transform tree make millions
of them, and ``tests/nuscenes/common/test_geometry_bytes.py`` keeps the bits those of the
nested formulas.

The functions are checked against the libraries of the field instead of calling them:
pyquaternion (the quaternion library nuscenes-devkit uses) in
``tests/nuscenes/common/test_library_equivalence.py`` and SciPy's
``scipy.spatial.transform.Rotation``/``Slerp`` in
``tests/nuscenes/common/test_geometry_vs_scipy.py``, both to 1e-12 (and :func:`slerp`'s
short-arc shortcut to its stated bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.spec import Quat, Vec3

__all__ = [
    "Transform",
    "compose",
    "identity",
    "interpolate_transform",
    "invert",
    "lerp",
    "quat_mul",
    "quat_normalize",
    "quat_rotate",
    "rvec_to_quat",
    "slerp",
    "slerp_arc",
    "xyzw_to_wxyz",
]

Transform = tuple[Vec3, Quat]
"""A rigid transform ``(translation, wxyz rotation)``: the child's pose in the parent frame."""


#: Far more turns than any real rotation vector; beyond it sin/cos lose all precision.
_MAX_ANGLE = 1e6


def _finite(values: Sequence[float], what: str) -> None:
    if not all(map(math.isfinite, values)):
        raise FormatError(f"{what} must be finite, found {list(values)}")


def quat_normalize(q: Sequence[float], what: str = "quaternion") -> Quat:
    """Return *q* (wxyz) scaled to unit length with a non-negative ``w`` (one canonical sign)."""
    norm = math.hypot(*q)  # no overflow of the squares for huge finite components
    if not math.isfinite(norm):  # a non-finite component, or finite ones too large
        _finite(q, what)
        raise FormatError(f"{what} is too large to normalize: {list(q)}")
    if not norm > 1e-12:
        raise FormatError(f"{what} has zero length: {list(q)}")
    w, x, y, z = q
    w, x, y, z = w / norm, x / norm, y / norm, z / norm
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    return (w, x, y, z)


def xyzw_to_wxyz(x: float, y: float, z: float, w: float, what: str = "quaternion") -> Quat:
    """Convert the ROS/Foxglove order ``xyzw`` to the nuScenes order ``wxyz``, normalized."""
    return quat_normalize((w, x, y, z), what)


def rvec_to_quat(rvec: Sequence[float], what: str = "rotation vector") -> Quat:
    """Convert an axis-angle rotation vector (radians) to a normalized wxyz quaternion."""
    if len(rvec) != 3:
        raise FormatError(f"{what} needs 3 values, found {len(rvec)}")
    _finite(rvec, what)
    angle = math.hypot(*rvec)
    if not angle <= _MAX_ANGLE:
        raise FormatError(f"{what} must be an angle of at most {_MAX_ANGLE:g} rad, found {angle}")
    if angle < 1e-12:
        return (1.0, 0.0, 0.0, 0.0)
    s = math.sin(angle / 2) / angle
    return quat_normalize((math.cos(angle / 2), rvec[0] * s, rvec[1] * s, rvec[2] * s), what)


def quat_mul(a: Quat, b: Quat) -> Quat:
    """Hamilton product ``a * b`` (apply ``b`` first, then ``a``)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def quat_rotate(q: Quat, v: Vec3) -> Vec3:
    """Rotate vector *v* by unit quaternion *q*: the vector part of ``q * (0, v) * q^-1``.

    Both Hamilton products written out with every term :func:`quat_mul` computes (the zero
    terms too, for the same signed zeros), in its order: the same bits, without the calls.
    """
    w, x, y, z = q
    vx, vy, vz = v
    # p = q * (0, v)
    pw = w * 0.0 - x * vx - y * vy - z * vz
    px = w * vx + x * 0.0 + y * vz - z * vy
    py = w * vy - x * vz + y * 0.0 + z * vx
    pz = w * vz + x * vy - y * vx + z * 0.0
    # p * (w, -x, -y, -z); the scalar part is not needed
    nx, ny, nz = -x, -y, -z
    return (
        pw * nx + px * w + py * nz - pz * ny,
        pw * ny - px * nz + py * w + pz * nx,
        pw * nz + px * ny - py * nx + pz * w,
    )


def identity() -> Transform:
    """The identity transform."""
    return ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))


def compose(parent: Transform, child: Transform) -> Transform:
    """Pose of *child*'s frame in *parent*'s parent: ``parent ∘ child``."""
    (pt, pq), (ct, cq) = parent, child
    rt = quat_rotate(pq, ct)
    return (
        (pt[0] + rt[0], pt[1] + rt[1], pt[2] + rt[2]),
        quat_normalize(quat_mul(pq, cq)),
    )


def invert(t: Transform) -> Transform:
    """The inverse of *t*: the parent's pose in the child frame.

    The rotation is the conjugate (exact: only signs change, so a canonical ``w >= 0`` stays
    canonical and ``invert(invert(t))`` has *t*'s rotation bit for bit); the translation is
    the child-to-parent offset rotated back, ``-(q* t q)``.
    """
    (x, y, z), (w, qx, qy, qz) = t
    conj = (w, -qx, -qy, -qz)
    rx, ry, rz = quat_rotate(conj, (x, y, z))
    return ((-rx, -ry, -rz), conj)


def lerp(a: Vec3, b: Vec3, t: float) -> Vec3:
    """Linear interpolation between two points, ``t`` in [0, 1]."""
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t)


def slerp(a: Quat, b: Quat, t: float) -> Quat:
    """Spherical linear interpolation between unit quaternions along the shorter arc.

    Above a cosine of 0.9995 between *a* and *b* (less than 3.6 degrees apart) it takes the
    normalized linear interpolation instead, where the sine ratio loses precision. That
    shortcut departs from the true arc by at most ``0.0041 * angle**3`` radians of rotation,
    ``angle`` being the rotation from *a* to *b*: 8.7e-10 rad for samples 0.006 rad apart,
    1.0e-6 rad at the threshold. The published bytes depend on it, so it stays.
    """
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    # Left to right from 0.0, as Python 3.11's sum() adds: 3.12 made sum() compensated, and
    # the published bytes are those of the plain sum.
    dot = 0.0 + aw * bw + ax * bx + ay * by + az * bz
    if dot < 0:
        bw, bx, by, bz = -bw, -bx, -by, -bz
        dot = -dot
    if dot > 0.9995:
        return quat_normalize(
            (aw + (bw - aw) * t, ax + (bx - ax) * t, ay + (by - ay) * t, az + (bz - az) * t)
        )
    theta = math.acos(min(1.0, dot))
    sa = math.sin((1 - t) * theta) / math.sin(theta)
    sb = math.sin(t * theta) / math.sin(theta)
    return quat_normalize(
        (sa * aw + sb * bw, sa * ax + sb * bx, sa * ay + sb * by, sa * az + sb * bz)
    )


def slerp_arc(a: Quat, b: Quat, t: float) -> Quat:
    """Spherical linear interpolation on the true arc at every angle (tf2's and SciPy's).

    :func:`slerp` keeps its published shortcut below 3.6 degrees, where it is off the arc by
    up to ``0.0041 * angle**3`` rad: 2e-7 rad for odometry of a robot turning at 2 rad/s
    sampled at 50 Hz. Poses composed from a transform tree or a pose topic have no published
    bytes to keep, and are compared with tf2's lookups, so they take this one. The angle
    between the quaternions is ``2 * atan2(|a - b|, |a + b|)``, accurate where ``acos`` of a
    dot product near 1 is not; below 1e-9 rad the shortcut's error (1e-27) is far under the
    rounding of the result.
    """
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    dot = 0.0 + aw * bw + ax * bx + ay * by + az * bz
    if dot < 0:
        bw, bx, by, bz = -bw, -bx, -by, -bz
    diff = math.hypot(aw - bw, ax - bx, ay - by, az - bz)
    total = math.hypot(aw + bw, ax + bx, ay + by, az + bz)
    theta = 2.0 * math.atan2(diff, total)
    if theta < 1e-9:
        return quat_normalize(
            (aw + (bw - aw) * t, ax + (bx - ax) * t, ay + (by - ay) * t, az + (bz - az) * t)
        )
    sin_theta = math.sin(theta)
    sa = math.sin((1 - t) * theta) / sin_theta
    sb = math.sin(t * theta) / sin_theta
    return quat_normalize(
        (sa * aw + sb * bw, sa * ax + sb * bx, sa * ay + sb * by, sa * az + sb * bz)
    )


def interpolate_transform(a: Transform, b: Transform, frac: float) -> Transform:
    """The transform *frac* of the way from *a* to *b*, ``frac`` in [0, 1].

    :func:`lerp` of the translations and :func:`slerp_arc` of the rotations, as tf2 does
    between two samples of a dynamic edge.
    """
    return (lerp(a[0], b[0], frac), slerp_arc(a[1], b[1], frac))
