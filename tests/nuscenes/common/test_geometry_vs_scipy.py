"""The hand-written geometry against SciPy's ``Rotation`` and ``Slerp``: the same rotations.

``common.geometry`` stays scalar Python arithmetic so that dataroot bytes do not move with
SciPy or numpy releases; these properties check on hypothesis-generated inputs that it computes
what the field's reference library computes, to 1e-12 (quaternions compared up to sign).
:func:`slerp` takes a normalized linear shortcut for rotations under 3.6 degrees apart; there it
is checked against its documented bound instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation, Slerp

from dataset_devkit.nuscenes.common import geometry as g
from dataset_devkit.nuscenes.spec import Quat, Vec3

_TOL = 1e-12
#: The shortcut's measured worst case is 0.00401 * angle**3 (see ``geometry.slerp``).
_SHORTCUT_COEFF = 0.0041

coords = st.floats(min_value=-100.0, max_value=100.0, allow_nan=False)
vectors = st.tuples(coords, coords, coords)
fractions = st.floats(min_value=0.0, max_value=1.0)
components = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


@st.composite
def unit_quats(draw: st.DrawFn) -> Quat:
    q = draw(st.tuples(components, components, components, components))
    assume(math.hypot(*q) > 0.1)
    return g.quat_normalize(q)


transforms = st.tuples(vectors, unit_quats())
rvec_coords = st.floats(min_value=-10.0, max_value=10.0, allow_nan=False)
small_coords = st.floats(min_value=-0.05, max_value=0.05, allow_nan=False)


def _rot(q: Quat) -> Any:
    w, x, y, z = q
    return Rotation.from_quat([x, y, z, w])  # scalar-last: the order every SciPy >= 1.11 takes


def _wxyz(r: Any) -> Quat:
    x, y, z, w = (float(c) for c in r.as_quat())
    return (w, x, y, z)


def _close_vec(ours: Vec3, theirs: Any) -> bool:
    return all(
        abs(a - float(b)) <= _TOL * max(1.0, abs(float(b)))
        for a, b in zip(ours, theirs, strict=True)
    )


def _close_quat(ours: Quat, theirs: Quat) -> bool:
    same = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
    flipped = max(abs(a + b) for a, b in zip(ours, theirs, strict=True))
    return min(same, flipped) <= _TOL


def _angle_between(a: Quat, b: Quat) -> float:
    """Rotation angle (rad) from *a* to *b*, by SciPy."""
    return float((_rot(a).inv() * _rot(b)).magnitude())


@given(parent=transforms, child=transforms)
def test_compose_is_scipy_product_and_apply(parent: g.Transform, child: g.Transform) -> None:
    (pt, pq), (ct, cq) = parent, child
    t, q = g.compose(parent, child)
    assert _close_vec(t, np.asarray(pt) + _rot(pq).apply(ct))
    assert _close_quat(q, _wxyz(_rot(pq) * _rot(cq)))


@given(transform=transforms)
def test_invert_is_scipy_inverse(transform: g.Transform) -> None:
    translation, rotation = transform
    t, q = g.invert(transform)
    inverse = _rot(rotation).inv()
    assert _close_vec(t, -inverse.apply(translation))
    assert _close_quat(q, _wxyz(inverse))


@given(q=unit_quats(), v=vectors)
def test_quat_rotate_is_scipy_apply(q: Quat, v: Vec3) -> None:
    assert _close_vec(g.quat_rotate(q, v), _rot(q).apply(v))


@given(rvec=st.tuples(rvec_coords, rvec_coords, rvec_coords))
def test_rvec_to_quat_is_scipy_from_rotvec(rvec: Vec3) -> None:
    assert _close_quat(g.rvec_to_quat(rvec), _wxyz(Rotation.from_rotvec(rvec)))


def _scipy_slerp(a: Quat, b: Quat, frac: float) -> Quat:
    both = Rotation.from_quat([[*a[1:], a[0]], [*b[1:], b[0]]])
    return _wxyz(Slerp([0.0, 1.0], both)([frac])[0])


def _on_the_arc(a: Quat, b: Quat) -> bool:
    """Whether :func:`g.slerp` takes the sine formula (not its short-arc shortcut)."""
    dot = abs(sum(x * y for x, y in zip(a, b, strict=True)))
    assume(dot > 1e-9)  # half a turn apart: either way round is the shorter arc
    return dot <= 0.9995


def _check_slerp(ours: Quat, a: Quat, b: Quat, frac: float) -> None:
    theirs = _scipy_slerp(a, b, frac)
    if _on_the_arc(a, b):
        assert _close_quat(ours, theirs)
    else:
        bound = _SHORTCUT_COEFF * _angle_between(a, b) ** 3 + _TOL
        assert _angle_between(ours, theirs) <= bound


@given(a=unit_quats(), b=unit_quats(), frac=fractions)
def test_slerp_is_scipy_slerp(a: Quat, b: Quat, frac: float) -> None:
    _check_slerp(g.slerp(a, b, frac), a, b, frac)


@given(
    a=unit_quats(),
    step=st.tuples(small_coords, small_coords, small_coords),
    frac=fractions,
)
def test_slerp_of_close_rotations_stays_within_its_bound_of_scipy(
    a: Quat, step: Vec3, frac: float
) -> None:
    """Samples of a tf edge are this close: up to 0.087 rad apart, on both sides of 3.6 degrees."""
    b = g.quat_normalize(g.quat_mul(a, g.rvec_to_quat(step)))
    _check_slerp(g.slerp(a, b, frac), a, b, frac)


@given(a=transforms, b=transforms, frac=fractions)
def test_interpolate_transform_is_lerp_and_scipy_slerp(
    a: g.Transform, b: g.Transform, frac: float
) -> None:
    t, q = g.interpolate_transform(a, b, frac)
    expected = np.asarray(a[0]) + (np.asarray(b[0]) - np.asarray(a[0])) * frac
    assert _close_vec(t, expected)
    dot = abs(sum(x * y for x, y in zip(a[1], b[1], strict=True)))
    assume(dot > 1e-9)  # half a turn apart: either way round is the shorter arc
    assert _close_quat(q, _scipy_slerp(a[1], b[1], frac))


@given(
    a=unit_quats(),
    step=st.tuples(small_coords, small_coords, small_coords),
    frac=fractions,
)
def test_slerp_arc_of_close_rotations_is_scipy_slerp(a: Quat, step: Vec3, frac: float) -> None:
    """Where :func:`g.slerp` takes its shortcut (under 3.6 degrees), the arc one does not."""
    b = g.quat_normalize(g.quat_mul(a, g.rvec_to_quat(step)))
    assert _close_quat(g.slerp_arc(a, b, frac), _scipy_slerp(a, b, frac))
