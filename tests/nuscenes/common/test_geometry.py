"""Rotations: rotation vectors to wxyz quaternions, composition, slerp."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.geometry import (
    compose,
    quat_mul,
    quat_rotate,
    rvec_to_quat,
    slerp,
    xyzw_to_wxyz,
)

angles = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False)


def test_rotation_vector_about_z_gives_the_expected_quaternion() -> None:
    q = rvec_to_quat([0.0, 0.0, math.pi / 2])
    assert q == pytest.approx((math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)))
    assert quat_rotate(q, (1.0, 0.0, 0.0)) == pytest.approx((0.0, 1.0, 0.0))
    assert rvec_to_quat([0.0, 0.0, 0.0]) == (1.0, 0.0, 0.0, 0.0)


@given(x=angles, y=angles, z=angles)
def test_rotation_vectors_become_unit_quaternions_with_the_same_angle(
    x: float, y: float, z: float
) -> None:
    q = rvec_to_quat([x, y, z])
    assert sum(c * c for c in q) == pytest.approx(1.0)
    assert q[0] >= 0
    angle = math.sqrt(x * x + y * y + z * z)
    expected = angle if angle <= math.pi else 2 * math.pi - angle
    assert 2 * math.acos(min(1.0, q[0])) == pytest.approx(expected, abs=1e-6)


@given(x=angles, y=angles, z=angles)
def test_inverse_rotation_undoes_the_rotation(x: float, y: float, z: float) -> None:
    q = rvec_to_quat([x, y, z])
    back = quat_mul((q[0], -q[1], -q[2], -q[3]), q)
    assert back == pytest.approx((1.0, 0.0, 0.0, 0.0), abs=1e-9)


def test_xyzw_order_is_converted_to_wxyz() -> None:
    assert xyzw_to_wxyz(0.0, 0.0, 1.0, 0.0) == (0.0, 0.0, 0.0, 1.0)
    assert xyzw_to_wxyz(0.0, 0.0, 0.0, -2.0) == (1.0, 0.0, 0.0, 0.0)


def test_non_finite_or_zero_rotations_are_refused() -> None:
    with pytest.raises(FormatError, match="finite"):
        rvec_to_quat([math.nan, 0.0, 0.0])
    with pytest.raises(FormatError, match="zero length"):
        xyzw_to_wxyz(0.0, 0.0, 0.0, 0.0)


def test_compose_chains_translation_and_rotation() -> None:
    turn = ((1.0, 0.0, 0.0), rvec_to_quat([0.0, 0.0, math.pi / 2]))
    step = ((1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    (t, q) = compose(turn, step)
    assert t == pytest.approx((1.0, 1.0, 0.0))
    assert q == pytest.approx(turn[1])


def test_slerp_hits_its_endpoints_and_the_midpoint() -> None:
    a = rvec_to_quat([0.0, 0.0, 0.0])
    b = rvec_to_quat([0.0, 0.0, 1.0])
    assert slerp(a, b, 0.0) == pytest.approx(a)
    assert slerp(a, b, 1.0) == pytest.approx(b)
    assert slerp(a, b, 0.5) == pytest.approx(rvec_to_quat([0.0, 0.0, 0.5]))
