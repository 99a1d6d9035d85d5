"""The geometry's bits: the formulas the published root hashes were made with, on any Python.

``common.geometry`` was rewritten for speed (no generators, no nested calls); these are the
formulas it had before, kept as the reference, and every function must give the same bits
for the same inputs (signed zeros included). The reference dot product adds left to right from
0.0, which is what ``sum()`` did up to Python 3.11; 3.12 made ``sum()`` of floats compensated.
"""

from __future__ import annotations

import builtins
import math
import struct
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common import geometry as g
from dataset_devkit.nuscenes.spec import Quat, Vec3


def _ref_normalize(q: Sequence[float]) -> Quat:
    if not all(math.isfinite(v) for v in q):
        raise FormatError("must be finite")
    norm = math.hypot(*q)
    if not math.isfinite(norm):
        raise FormatError("too large")
    if not norm > 1e-12:
        raise FormatError("zero length")
    w, x, y, z = (c / norm for c in q)
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    return (w, x, y, z)


def _ref_mul(a: Quat, b: Quat) -> Quat:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def _ref_rotate(q: Quat, v: Vec3) -> Vec3:
    w, x, y, z = q
    _, rx, ry, rz = _ref_mul(_ref_mul(q, (0.0, v[0], v[1], v[2])), (w, -x, -y, -z))
    return (rx, ry, rz)


def _ref_compose(parent: g.Transform, child: g.Transform) -> g.Transform:
    (pt, pq), (ct, cq) = parent, child
    rt = _ref_rotate(pq, ct)
    return ((pt[0] + rt[0], pt[1] + rt[1], pt[2] + rt[2]), _ref_normalize(_ref_mul(pq, cq)))


def _plain_sum(values: Iterable[float]) -> float:
    total: Any = 0  # sum()'s start; the first float makes it 0.0 + x
    for v in values:
        total = total + v
    return float(total)


def _ref_slerp(a: Quat, b: Quat, t: float) -> Quat:
    dot = _plain_sum(x * y for x, y in zip(a, b, strict=True))
    if dot < 0:
        b = (-b[0], -b[1], -b[2], -b[3])
        dot = -dot
    if dot > 0.9995:
        return _ref_normalize(tuple(x + (y - x) * t for x, y in zip(a, b, strict=True)))
    theta = math.acos(min(1.0, dot))
    sa = math.sin((1 - t) * theta) / math.sin(theta)
    sb = math.sin(t * theta) / math.sin(theta)
    return _ref_normalize(tuple(sa * x + sb * y for x, y in zip(a, b, strict=True)))


def _bits(values: Iterable[float]) -> bytes:
    flat = list(values)
    return struct.pack(f"<{len(flat)}d", *flat)


# Signed zeros and axis-aligned values are where a reordered formula shows first.
specials = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, -0.5])
reals = st.floats(min_value=-100.0, max_value=100.0, allow_nan=False) | specials
components = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False) | specials
vectors = st.tuples(reals, reals, reals)
raw_quats = st.tuples(components, components, components, components)


@st.composite
def unit_quats(draw: st.DrawFn) -> Quat:
    q = draw(raw_quats)
    assume(math.hypot(*q) > 1e-6)
    return _ref_normalize(q)


@st.composite
def close_pairs(draw: st.DrawFn) -> tuple[Quat, Quat]:
    """Pairs a tf edge's neighbouring samples make: both slerp branches, near the threshold."""
    a = draw(unit_quats())
    step = draw(st.tuples(*[st.floats(min_value=-0.05, max_value=0.05)] * 3))
    return a, _ref_normalize(_ref_mul(a, g.rvec_to_quat(step)))


fractions = st.floats(min_value=0.0, max_value=1.0) | st.sampled_from([0.0, 1.0, 0.5])


@given(q=raw_quats)
def test_quat_normalize_has_the_reference_bits(q: Quat) -> None:
    assume(math.hypot(*q) > 1e-12)
    assert _bits(g.quat_normalize(q)) == _bits(_ref_normalize(q))


@given(a=unit_quats(), b=unit_quats())
def test_quat_mul_has_the_reference_bits(a: Quat, b: Quat) -> None:
    assert _bits(g.quat_mul(a, b)) == _bits(_ref_mul(a, b))


@given(q=unit_quats(), v=vectors)
def test_quat_rotate_has_the_reference_bits(q: Quat, v: Vec3) -> None:
    assert _bits(g.quat_rotate(q, v)) == _bits(_ref_rotate(q, v))


@given(pt=vectors, pq=unit_quats(), ct=vectors, cq=unit_quats())
def test_compose_has_the_reference_bits(pt: Vec3, pq: Quat, ct: Vec3, cq: Quat) -> None:
    ours = g.compose((pt, pq), (ct, cq))
    theirs = _ref_compose((pt, pq), (ct, cq))
    assert _bits((*ours[0], *ours[1])) == _bits((*theirs[0], *theirs[1]))


@given(a=unit_quats(), b=unit_quats(), t=fractions)
def test_slerp_has_the_reference_bits(a: Quat, b: Quat, t: float) -> None:
    assert _bits(g.slerp(a, b, t)) == _bits(_ref_slerp(a, b, t))


@given(pair=close_pairs(), t=fractions)
def test_slerp_of_neighbouring_samples_has_the_reference_bits(
    pair: tuple[Quat, Quat], t: float
) -> None:
    a, b = pair
    assert _bits(g.slerp(a, b, t)) == _bits(_ref_slerp(a, b, t))


def _compensated_sum(values: Iterable[float], start: float = 0) -> float:
    """A stand-in for Python 3.12's ``sum()`` of floats (compensated), via ``math.fsum``."""
    return math.fsum([start, *values])


def test_slerp_does_not_depend_on_how_the_interpreter_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a compensated ``sum()`` (Python >= 3.12) the bits stay those of the plain sum."""
    a = g.quat_normalize((0.1, 0.2, 0.3, 0.4))
    cases = [(a, g.quat_normalize((0.7, 0.3, 0.9, 0.11))), (a, g.quat_normalize((1e-8, 1, 1, 1)))]
    cases += [(g.quat_normalize((1.0, 1e-3 * k, 2e-3, 0.3)), a) for k in range(1, 200)]
    before = [_bits(g.slerp(p, q, 0.3)) for p, q in cases]
    monkeypatch.setattr(builtins, "sum", _compensated_sum)
    assert _plain_sum([1e16, 1.0, -1e16]) != sum([1e16, 1.0, -1e16])  # the stand-in differs
    after = [_bits(g.slerp(p, q, 0.3)) for p, q in cases]
    assert after == before


@pytest.mark.parametrize(
    ("q", "message"),
    [
        ((math.nan, 0.0, 0.0, 1.0), "must be finite"),
        ((math.inf, math.nan, 0.0, 1.0), "must be finite"),
        ((math.inf, 0.0, 0.0, 1.0), "must be finite"),
        ((1.7e308, 1.7e308, 0.0, 0.0), "too large to normalize"),
        ((0.0, 0.0, 0.0, 1e-13), "zero length"),
    ],
)
def test_quat_normalize_refusals_keep_their_order(q: Quat, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        g.quat_normalize(q)
