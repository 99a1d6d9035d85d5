"""TransformTree: tf2's lookups on a recording's transform tree, exact where a path allows."""

from __future__ import annotations

import math
import random
import struct
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation, Slerp

from dataset_devkit.errors import ConfigError, FormatError, NotFoundError
from dataset_devkit.nuscenes.common.geometry import (
    Transform,
    compose,
    interpolate_transform,
    invert,
    quat_mul,
    quat_normalize,
    rvec_to_quat,
    xyzw_to_wxyz,
)
from dataset_devkit.nuscenes.common.tf_tree import (
    EdgeSummary,
    ExtrapolationError,
    GapError,
    NotConnectedError,
    PathEdge,
    TransformLookupError,
    TransformTree,
    UnknownFrameError,
)

S = 1_000_000_000
IDENTITY_Q = (1.0, 0.0, 0.0, 0.0)


def _bits(t: Transform) -> bytes:
    return struct.pack("<7d", *t[0], *t[1])


def _tf(x: float, y: float, z: float, rvec: tuple[float, float, float]) -> Transform:
    return ((x, y, z), rvec_to_quat(rvec))


def _add(tree: TransformTree, parent: str, child: str, t: int, tf: Transform, static: bool) -> None:
    assert tree.add(parent, child, t, tf, static=static) is None


def _distance(a: Transform, b: Transform) -> tuple[float, float]:
    """Translation distance and rotation angle between two transforms (precise near 0)."""
    (ta, qa), (tb, qb) = a, b
    w, x, y, z = quat_mul((qa[0], -qa[1], -qa[2], -qa[3]), qb)
    return math.dist(ta, tb), 2 * math.atan2(math.hypot(x, y, z), abs(w))


# -- random trees for the properties -----------------------------------------------------------

coord = st.floats(min_value=-10.0, max_value=10.0, allow_nan=False)
angle = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False)
transforms = st.builds(lambda x, y, z, a, b, c: _tf(x, y, z, (a, b, c)), *[coord] * 3, *[angle] * 3)
SPAN = 10 * S


@st.composite
def trees(draw: st.DrawFn) -> tuple[TransformTree, list[str]]:
    """A random tree of 2-7 frames: static and dynamic edges, every dynamic edge covering
    0..SPAN with samples at least 0.1 s apart (so any time in the span has a value)."""
    count = draw(st.integers(min_value=2, max_value=7))
    frames = [f"f{i}" for i in range(count)]
    tree = TransformTree(max_gap_ns=SPAN)
    for i in range(1, count):
        parent = frames[draw(st.integers(min_value=0, max_value=i - 1))]
        if draw(st.booleans()):
            _add(tree, parent, frames[i], 0, draw(transforms), static=True)
            continue
        inner = draw(st.lists(st.integers(min_value=1, max_value=99), max_size=4, unique=True))
        for t in [0, SPAN, *(k * S // 10 for k in inner)]:
            _add(tree, parent, frames[i], t, draw(transforms), static=False)
    return tree, frames


times = st.integers(min_value=0, max_value=SPAN)


@given(data=trees(), pick=st.data(), t=times)
def test_a_lookup_composed_with_its_reverse_is_the_identity(
    data: tuple[TransformTree, list[str]], pick: st.DataObject, t: int
) -> None:
    tree, frames = data
    a, b = pick.draw(st.sampled_from(frames)), pick.draw(st.sampled_from(frames))
    there, back = tree.lookup(a, b, t), tree.lookup(b, a, t)
    moved, turned = _distance(compose(there, back), ((0.0, 0.0, 0.0), IDENTITY_Q))
    assert moved < 1e-12 and turned < 1e-12
    moved, turned = _distance(back, invert(there))
    assert moved < 1e-12 and turned < 1e-12


@given(data=trees(), pick=st.data(), t=times)
def test_a_lookup_through_a_third_frame_is_the_composition(
    data: tuple[TransformTree, list[str]], pick: st.DataObject, t: int
) -> None:
    tree, frames = data
    a, b, c = (pick.draw(st.sampled_from(frames)) for _ in range(3))
    direct = tree.lookup(a, c, t)
    via = compose(tree.lookup(a, b, t), tree.lookup(b, c, t))
    moved, turned = _distance(direct, via)
    assert moved < 1e-12 and turned < 1e-12


@given(data=trees(), pick=st.data(), t=times)
def test_an_edge_walked_backwards_is_the_inverse_of_the_edge_bit_for_bit(
    data: tuple[TransformTree, list[str]], pick: st.DataObject, t: int
) -> None:
    tree, frames = data
    child = pick.draw(st.sampled_from(frames[1:]))
    parent = tree.parent_of(child)
    assert parent is not None
    assert _bits(tree.lookup(child, parent, t)) == _bits(invert(tree.lookup(parent, child, t)))


stamps = st.integers(min_value=-(2**62), max_value=2**62)


@given(
    samples=st.lists(
        st.tuples(stamps, transforms), min_size=1, max_size=30, unique_by=lambda s: s[0]
    ),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_a_lookup_at_a_sample_time_is_that_sample_bit_for_bit(
    samples: list[tuple[int, Transform]], seed: int
) -> None:
    tree = TransformTree(max_gap_ns=0)
    random.Random(seed).shuffle(samples)
    for t, tf in samples:
        _add(tree, "/odom", "base_link", t, tf, static=False)
    for t, tf in samples:
        assert _bits(tree.lookup("odom", "base_link", t)) == _bits(tf)


xyzw = st.tuples(*[st.floats(min_value=-1.0, max_value=1.0)] * 4)


@given(raw=xyzw, t=stamps, static=st.booleans())
def test_a_normalized_rotation_is_stored_with_its_bits(
    raw: tuple[float, float, float, float], t: int, static: bool
) -> None:
    """A message's quaternion, normalized once by the caller, is the one exported: not again."""
    assume(math.hypot(*raw) > 1e-6)
    rotation = xyzw_to_wxyz(*raw)
    tree = TransformTree(max_gap_ns=0)
    _add(tree, "odom", "base_link", t, ((1.0, 2.0, 3.0), rotation), static=static)
    assert _bits(tree.lookup("odom", "base_link", t)) == _bits(((1.0, 2.0, 3.0), rotation))
    w, x, y, z = rotation  # the other sign: negated exactly, not renormalized
    _add(tree, "odom", "laser", t, ((1.0, 2.0, 3.0), (-w, -x, -y, -z)), static=static)
    flipped = tree.lookup("odom", "laser", t)[1]
    assert flipped == (rotation if w > 0 else (-w, -x, -y, -z))  # w = 0: as quat_normalize


@given(values=st.lists(transforms, min_size=1, max_size=6), t=st.integers())
def test_the_latest_static_transform_wins_at_every_time(values: list[Transform], t: int) -> None:
    tree = TransformTree(max_gap_ns=0)
    for k, value in enumerate(values):
        _add(tree, "base_link", "laser", k * S, value, static=True)
    assert _bits(tree.lookup("base_link", "laser", t)) == _bits(values[-1])


tenths = st.integers(min_value=0, max_value=100)


@given(
    samples=st.lists(
        st.tuples(tenths, transforms), min_size=2, max_size=40, unique_by=lambda s: s[0]
    ),
    repeats=st.lists(st.integers(min_value=0, max_value=39), max_size=10),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_out_of_order_insertion_gives_the_lookups_of_in_order_insertion(
    samples: list[tuple[int, Transform]], repeats: list[int], seed: int
) -> None:
    samples = [(t * S // 10, tf) for t, tf in samples]
    with_repeats = samples + [samples[i % len(samples)] for i in repeats]  # exact duplicates
    shuffled = list(with_repeats)
    random.Random(seed).shuffle(shuffled)
    in_order, out_of_order = TransformTree(max_gap_ns=SPAN), TransformTree(max_gap_ns=SPAN)
    for t, tf in sorted(with_repeats, key=lambda s: s[0]):
        _add(in_order, "map", "odom", t, tf, static=False)
    for t, tf in shuffled:
        _add(out_of_order, "map", "odom", t, tf, static=False)
    queries = sorted({t for t, _ in samples} | {t + S // 20 for t, _ in samples})
    lo, hi = min(t for t, _ in samples), max(t for t, _ in samples)
    for t in queries:
        if lo <= t <= hi:
            assert _bits(out_of_order.lookup("map", "odom", t)) == _bits(
                in_order.lookup("map", "odom", t)
            )
    assert out_of_order.edge_summary() == in_order.edge_summary()
    assert out_of_order.edge_summary()[0].duplicates == len(repeats)


# -- a REP-105 robot against an independent SciPy computation ---------------------------------

OPTICAL = (-0.5, 0.5, -0.5, 0.5)  # wxyz: z forward, x right, y down (REP-103 optical frame)
CAMERA_CHAIN = [
    ("base_link", "oakd_link", ((0.06, 0.0, 0.24), rvec_to_quat((0.0, 0.05, 0.0)))),
    ("oakd_link", "oakd_rgb_camera_frame", ((0.0, 0.0, 0.0), IDENTITY_Q)),
    ("oakd_rgb_camera_frame", "oakd_rgb_camera_mount", ((0.01, -0.0375, 0.0), IDENTITY_Q)),
    ("oakd_rgb_camera_mount", "oakd_rgb_lens", ((0.0, 0.0, 0.005), rvec_to_quat((0, 0, 0.01)))),
    ("oakd_rgb_lens", "camera_optical_frame", ((0.0, 0.0, 0.0), quat_normalize(OPTICAL))),
]
FOOTPRINT = ((0.0, 0.0, -0.0985), IDENTITY_Q)


def _odom_sample(k: int) -> tuple[int, Transform]:
    """odom -> base_link at 50 Hz: 0.5 m/s on a 0.25 rad/s curve with a little pitch noise.

    Samples 0.005 rad apart: where ``slerp``'s published shortcut would be 5e-10 rad off.
    """
    t = k * S // 50
    yaw = 0.25 * t / S
    x, y = 2.0 * math.sin(yaw), 2.0 * (1 - math.cos(yaw))
    return t + 1_234, ((x, y, 0.0), rvec_to_quat((0.0, 0.001 * math.sin(k), yaw)))


def _correction_sample(k: int) -> tuple[int, Transform]:
    """map -> odom at 2 Hz: amcl's correction drifting slowly (a moving correction)."""
    t = k * S // 2
    return t, ((10.0 + 0.01 * k, -3.0 + 0.004 * k, 0.0), rvec_to_quat((0.0, 0.0, 0.3 + 0.002 * k)))


@pytest.fixture(scope="module")
def robot() -> tuple[TransformTree, list[tuple[int, Transform]], list[tuple[int, Transform]]]:
    tree = TransformTree(max_gap_ns=S)
    odom = [_odom_sample(k) for k in range(0, 501)]  # 0 .. 10 s
    correction = [_correction_sample(k) for k in range(0, 21)]
    for t, tf in correction:
        _add(tree, "map", "odom", t, tf, static=False)
    for t, tf in odom:
        _add(tree, "odom", "base_link", t, tf, static=False)
    _add(tree, "base_link", "base_footprint", 0, FOOTPRINT, static=True)
    for parent, child, tf in CAMERA_CHAIN:
        _add(tree, parent, child, 0, tf, static=True)
    return tree, odom, correction


def _matrix(tf: Transform) -> np.ndarray[Any, Any]:
    (x, y, z), (w, qx, qy, qz) = tf
    out = np.eye(4)
    out[:3, :3] = Rotation.from_quat([qx, qy, qz, w]).as_matrix()
    out[:3, 3] = (x, y, z)
    return out


def _scipy_at(samples: list[tuple[int, Transform]], t: int) -> np.ndarray[Any, Any]:
    """Independent interpolation between the bracketing samples: numpy lerp, SciPy's Slerp
    (the true arc, as tf2 takes it, at every angle)."""
    stamps = [s for s, _ in samples]
    j = int(np.searchsorted(stamps, t))
    if stamps[j] == t:
        return _matrix(samples[j][1])
    (t0, a), (t1, b) = samples[j - 1], samples[j]
    frac = (t - t0) / (t1 - t0)
    out = np.eye(4)
    rotations = Rotation.from_quat([[*a[1][1:], a[1][0]], [*b[1][1:], b[1][0]]])
    out[:3, :3] = Slerp([0.0, 1.0], rotations)([frac])[0].as_matrix()
    out[:3, 3] = np.asarray(a[0]) + (np.asarray(b[0]) - np.asarray(a[0])) * frac
    return out


def _assert_matches(ours: Transform, expected: np.ndarray[Any, Any]) -> None:
    mine = _matrix(ours)
    assert np.linalg.norm(mine[:3, 3] - expected[:3, 3]) < 1e-9
    relative = Rotation.from_matrix(mine[:3, :3].T @ expected[:3, :3])
    assert relative.magnitude() < 1e-9


# odom->base_link has samples from 1_234 ns to 10 s + 1_234 ns, map->odom from 0 to 10 s.
ROBOT_TIMES = [1_234, 3 * S // 7, S + 1_234, 4 * S + 777_777, 9 * S + 1, 10 * S]


@pytest.mark.parametrize("t", ROBOT_TIMES)
def test_rep105_poses_match_a_scipy_matrix_computation(robot: Any, t: int) -> None:
    tree, odom, correction = robot
    camera = np.eye(4)
    for _, _, tf in CAMERA_CHAIN:
        camera = camera @ _matrix(tf)
    map_odom, odom_base = _scipy_at(correction, t), _scipy_at(odom, t)
    base_in_map = map_odom @ odom_base
    _assert_matches(tree.lookup("map", "base_link", t), base_in_map)
    _assert_matches(tree.lookup("map", "camera_optical_frame", t), base_in_map @ camera)
    camera_in_map = base_in_map @ camera
    _assert_matches(tree.lookup("camera_optical_frame", "map", t), np.linalg.inv(camera_in_map))
    footprint_in_odom = odom_base @ _matrix(FOOTPRINT)
    _assert_matches(tree.lookup("odom", "base_footprint", t), footprint_in_odom)
    camera_on_footprint = np.linalg.inv(_matrix(FOOTPRINT)) @ camera
    _assert_matches(tree.lookup("base_footprint", "camera_optical_frame", t), camera_on_footprint)
    _assert_matches(tree.lookup("odom", "map", t), np.linalg.inv(map_odom))


def test_rep105_paths_say_which_edges_are_walked_and_whether_they_are_static(robot: Any) -> None:
    tree, odom, correction = robot
    assert tree.path("base_footprint", "camera_optical_frame") == (
        *(PathEdge(p, c, True, inverted=False) for p, c, _ in reversed(CAMERA_CHAIN)),
        PathEdge("base_link", "base_footprint", True, inverted=True),
    )
    assert tree.is_static_path("base_footprint", "camera_optical_frame")
    assert tree.path("map", "base_footprint") == (
        PathEdge("base_link", "base_footprint", True, inverted=False),
        PathEdge("odom", "base_link", False, inverted=False),
        PathEdge("map", "odom", False, inverted=False),
    )
    assert not tree.is_static_path("map", "base_footprint")
    assert tree.path("map", "map") == () and tree.is_static_path("map", "map")
    union = sorted({t for t, _ in odom} | {t for t, _ in correction})
    assert list(tree.sample_times("base_footprint", "map")) == union
    assert list(tree.sample_times("odom", "base_link")) == [t for t, _ in odom]
    assert list(tree.sample_times("base_link", "camera_optical_frame")) == []
    assert tree.roots() == {"map"}
    assert tree.parent_of("/odom") == "map" and tree.parent_of("map") is None
    assert len(tree.frames()) == 9


def test_lookup_many_answers_each_time_in_order_with_its_error_in_place(robot: Any) -> None:
    tree, _, _ = robot
    asked: list[Any] = [S, S, -5, 2 * S + 1, 11 * S, 2 * S + 1, np.int64(3 * S)]
    answers = tree.lookup_many("map", "camera_optical_frame", asked)
    assert len(answers) == len(asked)
    for t, answer in zip(asked, answers, strict=True):
        if 0 <= t <= 10 * S:
            assert not isinstance(answer, TransformLookupError)
            assert answer == tree.lookup("map", "camera_optical_frame", t)
            assert all(type(v) is float for v in (*answer[0], *answer[1]))
        else:
            assert isinstance(answer, ExtrapolationError) and answer.time_ns == t
    fixed = tree.lookup_many("base_link", "camera_optical_frame", [0, 10**18])
    assert fixed[0] == fixed[1] == tree.lookup("base_link", "camera_optical_frame", 5)
    with pytest.raises(UnknownFrameError):
        tree.lookup_many("map", "camera", [0])


# -- exactness -------------------------------------------------------------------------------


def test_one_edge_in_its_stored_direction_is_the_stored_or_interpolated_tuple() -> None:
    tree = TransformTree(max_gap_ns=S)
    a, b = _tf(1.0, -0.0, 3.0, (0.1, 0.2, 0.3)), _tf(1.5, 0.0, 2.0, (0.1, 0.25, 0.3))
    fixed = _tf(0.1, -0.0, 0.3, (0.0, 0.0, 1.0))
    _add(tree, "odom", "base_link", 0, a, static=False)
    _add(tree, "odom", "base_link", S, b, static=False)
    _add(tree, "base_link", "laser", 0, fixed, static=True)
    assert _bits(tree.lookup("odom", "base_link", 0)) == _bits(a)  # -0.0 stays -0.0
    assert _bits(tree.lookup("odom", "base_link", S // 3)) == _bits(
        interpolate_transform(a, b, (S // 3) / S)
    )
    assert _bits(tree.lookup("base_link", "laser", 7)) == _bits(fixed)
    assert _bits(tree.lookup("laser", "base_link", 7)) == _bits(invert(fixed))
    # Two edges: one composition, no identity anywhere (an identity would renormalize).
    assert _bits(tree.lookup("odom", "laser", S // 3)) == _bits(
        compose(interpolate_transform(a, b, (S // 3) / S), fixed)
    )
    assert _bits(tree.lookup("laser", "odom", 0)) == _bits(invert(compose(a, fixed)))
    assert tree.lookup("odom", "odom", 0) == ((0.0, 0.0, 0.0), IDENTITY_Q)


def test_a_static_run_is_composed_the_way_the_walk_composes_it() -> None:
    tree = TransformTree(max_gap_ns=S)
    e1, e2, e3 = (_tf(0.1 * k, 0.2, 0.3, (0.1 * k, 0.2, -0.3)) for k in (1, 2, 3))
    d = _tf(5.0, 1.0, 0.0, (0.0, 0.0, 0.7))
    _add(tree, "map", "odom", 0, d, static=False)
    _add(tree, "odom", "a", 0, e1, static=True)
    _add(tree, "a", "b", 0, e2, static=True)
    _add(tree, "b", "c", 0, e3, static=True)
    assert _bits(tree.lookup("map", "c", 0)) == _bits(compose(d, compose(e1, compose(e2, e3))))
    changed = _tf(9.0, 9.0, 9.0, (0.0, 0.0, 0.0))
    _add(tree, "a", "b", 0, changed, static=True)  # a cached run must not keep the old value
    assert _bits(tree.lookup("map", "c", 0)) == _bits(compose(d, compose(e1, compose(changed, e3))))


# -- errors ----------------------------------------------------------------------------------


def _chain_tree() -> TransformTree:
    tree = TransformTree(max_gap_ns=S // 2)
    for k in range(0, 21):
        _add(tree, "map", "odom", k * S, _tf(float(k), 0.0, 0.0, (0.0, 0.0, 0.01 * k)), False)
    for k in range(0, 13):
        t = k * S // 2 if k < 12 else 12 * S
        _add(tree, "odom", "base_link", t, _tf(0.1 * k, 0.0, 0.0, (0.0, 0.0, 0.0)), False)
    _add(tree, "base_link", "camera", 0, _tf(0.2, 0.0, 0.3, (0.0, 0.0, 0.0)), True)
    _add(tree, "world", "gps", 0, _tf(1.0, 2.0, 3.0, (0.0, 0.0, 0.0)), True)
    return tree


def test_extrapolation_names_target_source_time_and_the_edge() -> None:
    tree = _chain_tree()
    with pytest.raises(ExtrapolationError) as caught:
        tree.lookup("map", "camera", 12_300_000_000)
    assert str(caught.value) == (
        "no transform from 'camera' to 'map' at 12.300 s: edge odom->base_link has samples "
        "only from 0.000 s to 12.000 s (extrapolation)"
    )
    err = caught.value
    assert (err.target, err.source, err.time_ns) == ("map", "camera", 12_300_000_000)
    assert (err.edge, err.earliest_ns, err.latest_ns) == (("odom", "base_link"), 0, 12 * S)
    assert isinstance(err, TransformLookupError) and isinstance(err, FormatError)
    with pytest.raises(ExtrapolationError) as caught:
        tree.lookup("odom", "map", -1)
    assert str(caught.value) == (
        "no transform from 'map' to 'odom' at -0.000000001 s: edge map->odom has samples only "
        "from 0.000 s to 20.000 s (extrapolation)"
    )


def test_an_edge_with_one_sample_answers_only_at_its_time() -> None:
    tree = TransformTree(max_gap_ns=S)
    _add(tree, "odom", "base_link", 3 * S, _tf(1.0, 0.0, 0.0, (0.0, 0.0, 0.0)), False)
    assert tree.lookup("odom", "base_link", 3 * S)[0] == (1.0, 0.0, 0.0)
    with pytest.raises(ExtrapolationError, match=r"has one sample only, at 3\.000 s \(extra"):
        tree.lookup("odom", "base_link", 3 * S + 1)


def test_a_gap_wider_than_max_gap_is_refused_and_named() -> None:
    tree = _chain_tree()  # odom->base_link: samples every 0.5 s up to 5.5 s, then 12 s
    assert tree.lookup("odom", "base_link", 5 * S + 1)  # 0.5 s apart: allowed
    with pytest.raises(GapError) as caught:
        tree.lookup("map", "camera", 7 * S)
    assert str(caught.value) == (
        "no transform from 'camera' to 'map' at 7.000 s: edge odom->base_link has no sample "
        "between 5.500 s and 12.000 s, a gap of 6.500 s (more than the 0.500 s allowed)"
    )
    assert (caught.value.before_ns, caught.value.after_ns) == (5_500_000_000, 12 * S)
    assert tree.lookup("map", "camera", 12 * S)  # an exact sample answers across any gap


def test_frames_of_two_trees_are_not_connected() -> None:
    tree = _chain_tree()
    with pytest.raises(NotConnectedError) as caught:
        tree.lookup("gps", "camera", 0)
    assert str(caught.value) == (
        "no transform from 'camera' to 'gps': frames 'camera' and 'gps' are not connected "
        "(trees rooted at 'map' and 'world')"
    )
    assert caught.value.roots == ("map", "world")
    assert not isinstance(caught.value, UnknownFrameError)
    assert tree.roots() == {"map", "world"}
    with pytest.raises(NotConnectedError):
        tree.path("world", "odom")


def test_an_unknown_frame_says_did_you_mean() -> None:
    tree = _chain_tree()
    with pytest.raises(UnknownFrameError) as caught:
        tree.lookup("map", "base_lnk", 0)
    assert str(caught.value) == (
        "no transform from 'base_lnk' to 'map': unknown frame 'base_lnk'; did you mean "
        "'base_link'? (frames: base_link, camera, gps, map, odom, world)"
    )
    assert caught.value.frame == "base_lnk" and isinstance(caught.value, NotConnectedError)
    for call in (
        lambda: tree.path("mapp", "odom"),
        lambda: tree.is_static_path("map", "camra"),
        lambda: tree.sample_times("map", "x"),
        lambda: tree.parent_of("odm"),
    ):
        with pytest.raises(UnknownFrameError, match="unknown frame"):
            call()


def test_max_gap_must_be_a_non_negative_int() -> None:
    for bad in (-1, 0.5, True, None):
        with pytest.raises(ConfigError, match="max_gap_ns must be a non-negative int"):
            TransformTree(max_gap_ns=bad)  # type: ignore[arg-type]


# -- refusals at insert ----------------------------------------------------------------------

GOOD = _tf(1.0, 2.0, 3.0, (0.0, 0.0, 0.5))


@pytest.mark.parametrize(
    ("parent", "child", "t", "tf", "reason"),
    [
        ("", "base_link", 0, GOOD, "empty parent frame id (transform from '' to 'base_link')"),
        ("odom", "/", 0, GOOD, "empty child frame id (transform from 'odom' to '')"),
        ("/odom", "odom", 0, GOOD, "self-transform: parent and child are both 'odom'"),
        (
            "odom",
            "laser",
            0,
            ((math.nan, 0.0, 0.0), IDENTITY_Q),
            "transform from 'odom' to 'laser' has a non-finite value: translation (nan, 0.0, "
            "0.0), rotation (1.0, 0.0, 0.0, 0.0)",
        ),
        (
            "odom",
            "laser",
            0,
            ((0.0, 0.0, 0.0), (1.0, math.inf, 0.0, 0.0)),
            "transform from 'odom' to 'laser' has a non-finite value: translation (0.0, 0.0, "
            "0.0), rotation (1.0, inf, 0.0, 0.0)",
        ),
        (
            "odom",
            "laser",
            0,
            ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0)),
            "transform from 'odom' to 'laser' has a rotation of squared norm 0, not 1 "
            "(wxyz (0.0, 0.0, 0.0, 0.0))",
        ),
        (
            "odom",
            "laser",
            0,
            ((0.0, 0.0, 0.0), (1.0, 0.1, 0.0, 0.0)),
            "transform from 'odom' to 'laser' has a rotation of squared norm 1.01, not 1 "
            "(wxyz (1.0, 0.1, 0.0, 0.0))",
        ),
        (
            "odom",
            "laser",
            2**63,
            GOOD,
            "transform from 'odom' to 'laser': timestamp 9223372036854775808 is outside int64",
        ),
        (
            "map",
            "base_link",
            0,
            GOOD,
            "frame 'base_link' already has parent 'odom'; transform from 'map' refused",
        ),
        (
            "odom",
            "map",
            0,
            GOOD,
            "transform from 'odom' to 'map' would close a loop: map -> odom -> map",
        ),
        (
            "laser",
            "map",
            0,
            GOOD,
            "transform from 'laser' to 'map' would close a loop: "
            "map -> odom -> base_link -> laser -> map",
        ),
    ],
)
def test_bad_transforms_are_refused_with_a_reason_and_change_nothing(
    parent: str, child: str, t: int, tf: Transform, reason: str
) -> None:
    tree = TransformTree(max_gap_ns=S)
    _add(tree, "map", "odom", 0, GOOD, static=False)
    _add(tree, "odom", "base_link", 0, GOOD, static=True)
    _add(tree, "base_link", "laser", 0, GOOD, static=True)
    before = (tree.frames(), tree.edge_summary(), tree.lookup("map", "laser", 0))
    assert tree.add(parent, child, t, tf, static=False) == reason
    assert tree.add(parent, child, t, tf, static=True) == reason
    assert (tree.frames(), tree.edge_summary(), tree.lookup("map", "laser", 0)) == before


def test_a_nearly_unit_rotation_is_normalized_as_tf2_accepts_it() -> None:
    tree = TransformTree(max_gap_ns=S)
    _add(tree, "odom", "base_link", 0, ((0.0, 0.0, 0.0), (1.004, 0.0, 0.0, 0.0)), static=True)
    assert tree.lookup("odom", "base_link", 0)[1] == IDENTITY_Q


def test_a_leading_slash_is_the_same_frame() -> None:
    tree = TransformTree(max_gap_ns=S)
    _add(tree, "/map", "/odom", 0, GOOD, static=True)
    assert tree.add("map", "odom", 0, GOOD, static=True) is None  # same edge, not a 2nd parent
    assert tree.frames() == {"map", "odom"}
    assert tree.lookup("/map", "odom", 0) == tree.lookup("map", "/odom", 0)


# -- duplicates, conflicts, kinds, constants -------------------------------------------------


@pytest.mark.parametrize("shuffled", [False, True])
def test_a_time_held_twice_keeps_its_first_value_and_counts_a_conflict(shuffled: bool) -> None:
    first, other = _tf(1.0, 0.0, 0.0, (0.0, 0.0, 0.0)), _tf(2.0, 0.0, 0.0, (0.0, 0.0, 0.0))
    inserts = [(0, GOOD), (S, first), (S, first), (S, other), (2 * S, GOOD), (S, other)]
    if shuffled:
        inserts = [inserts[4], inserts[1], inserts[0], inserts[3], inserts[2], inserts[5]]
    tree = TransformTree(max_gap_ns=S)
    for t, tf in inserts:
        _add(tree, "map", "odom", t, tf, static=False)
    assert tree.lookup("map", "odom", S) == first
    assert tree.edge_summary() == (
        EdgeSummary(
            parent="map",
            child="odom",
            static=False,
            samples=3,
            first_ns=0,
            last_ns=2 * S,
            duplicates=1,
            conflicts=2,
            constant=False,
            restarts=0,
        ),
    )


def test_an_edge_changing_kind_starts_a_fresh_store_as_tf2_does() -> None:
    tree = TransformTree(max_gap_ns=S)
    for k in range(3):
        _add(tree, "base_link", "wheel", k * S, _tf(float(k), 0.0, 0.0, (0.0, 0.0, 0.0)), False)
    fixed = _tf(0.0, 0.3, 0.0, (0.0, 0.0, 0.0))
    _add(tree, "base_link", "wheel", 5 * S, fixed, static=True)  # dynamic -> static
    assert tree.lookup("base_link", "wheel", -(10**12)) == fixed  # every time, samples gone
    assert tree.path("base_link", "wheel") == (PathEdge("base_link", "wheel", True, False),)
    _add(tree, "base_link", "wheel", 7 * S, GOOD, static=False)  # static -> dynamic
    assert tree.lookup("base_link", "wheel", 7 * S) == GOOD
    with pytest.raises(ExtrapolationError, match=r"has one sample only, at 7\.000 s"):
        tree.lookup("base_link", "wheel", 0)  # the static value is gone too
    (summary,) = tree.edge_summary()
    assert (summary.static, summary.samples, summary.restarts) == (False, 1, 2)


def test_static_reinserts_are_counted_as_duplicates_or_changes() -> None:
    tree = TransformTree(max_gap_ns=S)
    for tf in (GOOD, GOOD, _tf(0.0, 0.0, 0.0, (0.0, 0.0, 0.0)), GOOD):
        _add(tree, "base_link", "laser", 0, tf, static=True)
    (summary,) = tree.edge_summary()
    assert (summary.static, summary.samples, summary.first_ns, summary.duplicates) == (
        True,
        1,
        None,
        1,
    )
    assert (summary.conflicts, summary.constant) == (2, True)


def test_a_republished_fixed_joint_is_reported_constant() -> None:
    tree = TransformTree(max_gap_ns=S)
    for k in range(5):  # robot_state_publisher republishing a fixed joint on /tf
        _add(tree, "base_link", "caster", k * S, GOOD, static=False)
        _add(tree, "base_link", "wheel", k * S, _tf(0.0, 0.1, 0.0, (0.0, 0.1 * k, 0.0)), False)
    _add(tree, "base_link", "laser", 0, GOOD, static=True)
    assert tree.is_constant("base_link", "caster")
    assert not tree.is_constant("/base_link", "wheel")
    assert tree.is_constant("base_link", "laser")
    assert not tree.is_static_path("base_link", "caster")  # the caller decides
    _add(tree, "base_link", "caster", 9 * S, _tf(0.0, 0.0, 0.0, (0.0, 0.0, 0.0)), False)
    assert not tree.is_constant("base_link", "caster")  # a later sample is seen
    with pytest.raises(NotFoundError, match="no edge laser->base_link: frame 'base_link' is a ro"):
        tree.is_constant("laser", "base_link")
    with pytest.raises(NotFoundError, match="no edge odom->laser: frame 'laser' has parent 'base"):
        tree.is_constant("odom", "laser")
    with pytest.raises(NotFoundError, match="frame 'lasr' is not in the tree; did you mean 'las"):
        tree.is_constant("base_link", "lasr")


def test_a_frozen_tree_refuses_adds_and_still_answers() -> None:
    tree = TransformTree(max_gap_ns=S)
    _add(tree, "map", "odom", S, GOOD, static=False)
    _add(tree, "map", "odom", 0, GOOD, static=False)  # out of order: sorted by freeze()
    tree.freeze()
    with pytest.raises(RuntimeError, match="frozen"):
        tree.add("map", "odom", 2 * S, GOOD, static=False)
    assert tree.lookup("map", "odom", S // 2) == interpolate_transform(GOOD, GOOD, 0.5)
    assert tree.sample_times("map", "odom").tolist() == [0, S]


def test_lookups_follow_samples_added_after_earlier_lookups() -> None:
    tree = TransformTree(max_gap_ns=10 * S)
    a, b, c = (_tf(float(k), 0.0, 0.0, (0.0, 0.0, 0.1 * k)) for k in range(3))
    _add(tree, "map", "odom", 0, a, static=False)
    _add(tree, "map", "odom", 2 * S, c, static=False)
    assert tree.lookup("map", "odom", S) == interpolate_transform(a, c, 0.5)
    _add(tree, "map", "odom", S, b, static=False)  # lands inside the bracket looked up
    assert tree.lookup("map", "odom", S) == b
    assert tree.lookup("map", "odom", S // 2) == interpolate_transform(a, b, 0.5)
    with pytest.raises(ExtrapolationError):
        tree.lookup("map", "odom", 3 * S)
    _add(tree, "map", "odom", 4 * S, a, static=False)
    assert tree.lookup("map", "odom", 3 * S) == interpolate_transform(c, a, 0.5)


@settings(max_examples=50)
@given(queries=st.lists(st.integers(min_value=-S, max_value=12 * S), min_size=1, max_size=60))
def test_lookups_in_any_order_give_what_a_fresh_tree_gives(queries: list[int]) -> None:
    """The bracket kept between lookups is a hint: any order of queries, the same answers."""

    def build() -> TransformTree:
        tree = TransformTree(max_gap_ns=S)
        for k in range(0, 22):
            value = _tf(0.1 * k, 0.0, 0.0, (0.0, 0.0, 0.05 * k))
            _add(tree, "map", "odom", k * S // 2, value, static=False)
        return tree

    warm = build()
    for t in queries:
        fresh = build()
        try:
            expected: Any = fresh.lookup("map", "odom", t)
        except TransformLookupError as exc:
            expected = str(exc)
        try:
            got: Any = warm.lookup("map", "odom", t)
        except TransformLookupError as exc:
            got = str(exc)
        assert got == expected


# -- memory ----------------------------------------------------------------------------------


@pytest.mark.parametrize("in_order", [True, False])
def test_a_dynamic_edge_costs_under_100_bytes_a_sample(in_order: bool) -> None:
    count = 100_000
    stamps = list(range(0, count * 10_000_000, 10_000_000))
    if not in_order:
        random.Random(0).shuffle(stamps)
    value = _tf(1.0, 2.0, 3.0, (0.1, 0.2, 0.3))
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        tree = TransformTree(max_gap_ns=S)
        for t in stamps:
            tree.add("odom", "base_link", t, value, static=False)
        tree.lookup("odom", "base_link", 5_000_000)  # sorts the out-of-order samples
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert tree.edge_summary()[0].samples == count
    assert held / count < 100, f"{held / count:.1f} bytes a sample"
