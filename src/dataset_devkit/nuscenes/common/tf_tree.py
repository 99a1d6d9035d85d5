"""A recording's transform tree with tf2's semantics: frames, timed edges, lookups both ways.

Robot recordings carry their geometry as ``/tf`` and ``/tf_static`` edges (REP-105:
``map -> odom -> base_link -> ... -> camera_optical_frame``). :class:`TransformTree` holds
them the way ROS 2's tf2 buffer does (geometry2 ``buffer_core.cpp``, ``cache.cpp``,
``static_cache.cpp``), so a pose computed here is the pose a ROS node saw:

- Each edge is stored once, keyed by its child, and answers lookups in both directions: a
  lookup walks from the source frame up to the root and from the target frame up, meets at
  the common ancestor, composes on the way up and inverts on the way down.
- A frame id loses one leading ``/``. Empty ids, self-transforms, non-finite values and
  rotations whose squared norm is 0.01 or more away from 1 are refused, as tf2 refuses them.
  A rotation already unit to rounding (squared norm within 1e-14 of 1, as
  :func:`~dataset_devkit.nuscenes.common.geometry.xyzw_to_wxyz` returns it) is stored bit for
  bit, its sign made canonical (``w >= 0``); any other is normalized with
  :func:`~dataset_devkit.nuscenes.common.geometry.quat_normalize`. Normalizing a unit
  quaternion again changes its last bits one time in five, and exported poses are those bits.
- A static edge holds one value, valid at every time; the latest insert wins. A dynamic edge
  returns a sample unchanged at its exact time, lerp + slerp
  (:func:`~dataset_devkit.nuscenes.common.geometry.interpolate_transform`) strictly between two
  samples, and an :class:`ExtrapolationError` outside its samples, never a clamp. An exact
  duplicate sample is dropped.
- An edge whose latest insert is of the other kind (static after dynamic or the reverse) starts
  a fresh store of that kind, as tf2 reallocates the frame's cache: what the earlier kind held
  is gone. "Latest" is the order of :meth:`TransformTree.add` calls, not of timestamps.

Where it departs from tf2, on purpose:

- One log has one tree: a child keeps the parent of its first transform, and a transform
  giving it another parent is refused (tf2 lets a frame change parent over time). A transform
  that would close a loop is refused the same way, so every walk ends at a root and tf2's depth
  cap (1000) is never needed.
- Interpolation stops at ``max_gap_ns`` (tf2 has no limit): across a wider gap a lookup raises
  :class:`GapError`, the ingest's gap tolerance for every other stream.
- Two samples at one time with different values keep the first and count a conflict (tf2 keeps
  both, and a lookup at that time returns the latest inserted); a lookup never depends on
  which message of a burst happened to be read last.
- There is no "time 0 means latest" and no cache duration: a recording is read whole.

Results are exact where the path allows it: a lookup along one edge in its stored direction
returns the stored (or interpolated) tuple itself, and no lookup composes with an identity.
Consecutive static edges of a path are composed once per path, so the camera chain of a REP-105
robot costs one composition at each lookup. Adding is not thread-safe; after :meth:`freeze`
the tree no longer changes and lookups may be shared between threads.

The errors (:mod:`dataset_devkit.nuscenes.common.tf_errors`, re-exported here) are all
:class:`TransformLookupError`, a ``FormatError``: :class:`NotConnectedError` (with
:class:`UnknownFrameError`), :class:`ExtrapolationError` and :class:`GapError`.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dataset_devkit.errors import ConfigError, NotFoundError
from dataset_devkit.integrity import did_you_mean
from dataset_devkit.nuscenes.common._tf_edges import (
    DynamicEdge,
    Fixed,
    StaticEdge,
    Step,
    packed,
    seconds,
)
from dataset_devkit.nuscenes.common.geometry import (
    Transform,
    compose,
    identity,
    invert,
    quat_normalize,
)
from dataset_devkit.nuscenes.common.tf_errors import (
    ExtrapolationError,
    GapError,
    NotConnectedError,
    TransformLookupError,
    UnknownFrameError,
)

__all__ = [
    "EdgeSummary",
    "ExtrapolationError",
    "GapError",
    "NotConnectedError",
    "PathEdge",
    "TransformLookupError",
    "TransformTree",
    "UnknownFrameError",
]

_INT64 = (-(2**63), 2**63 - 1)
#: tf2's ``QUATERNION_NORMALIZATION_TOLERANCE`` on the squared norm.
_NORM_TOLERANCE = 1e-2
#: A squared norm this close to 1 is unit to rounding: ``quat_normalize`` returns within 2 ulp.
_UNIT_ROUNDING = 1e-14


@dataclass(frozen=True, slots=True)
class PathEdge:
    """One edge a lookup walks, in walking order from the source frame to the target frame.

    ``parent`` and ``child`` are the edge as stored; ``inverted`` is True where the walk goes
    from parent to child (down from the common ancestor towards the target).
    """

    parent: str
    child: str
    static: bool
    inverted: bool


@dataclass(frozen=True, slots=True)
class EdgeSummary:
    """One edge of the tree, for reports.

    ``samples`` is 1 for a static edge, whose ``first_ns``/``last_ns`` are None. ``duplicates``
    counts inserts dropped as exact repeats (dynamic) or re-inserts of the same value (static);
    ``conflicts`` counts samples refused because their time already held another value
    (dynamic) or inserts that replaced the value with a different one (static). ``constant``
    is True for a static edge and for a dynamic edge whose samples all hold one value.
    ``restarts`` counts the fresh stores begun when an insert changed the edge's kind.
    """

    parent: str
    child: str
    static: bool
    samples: int
    first_ns: int | None
    last_ns: int | None
    duplicates: int
    conflicts: int
    constant: bool
    restarts: int


class _Plan:
    """A resolved lookup: the path, and the steps composed up from each end."""

    __slots__ = ("down", "edges", "fixed", "source", "target", "up")

    def __init__(
        self,
        target: str,
        source: str,
        edges: tuple[PathEdge, ...],
        up: tuple[Step, ...],
        down: tuple[Step, ...],
        fixed: Transform | None,
    ) -> None:
        self.target = target
        self.source = source
        self.edges = edges
        self.up = up
        self.down = down
        self.fixed = fixed


def _frame_id(name: str) -> str:
    return name[1:] if name.startswith("/") else name


class TransformTree:
    """The transform tree of one recording, with tf2's lookup semantics (see the module).

    Parameters
    ----------
    max_gap_ns
        The widest interval between two samples of a dynamic edge that a lookup interpolates
        across; a wider one is a :class:`GapError`. Exact sample times always answer.
    """

    def __init__(self, *, max_gap_ns: int) -> None:
        if isinstance(max_gap_ns, bool) or not isinstance(max_gap_ns, int) or max_gap_ns < 0:
            raise ConfigError(
                f"max_gap_ns must be a non-negative int, found {max_gap_ns!r}", key="max_gap_ns"
            )
        self._max_gap_ns = max_gap_ns
        self._edges: dict[str, StaticEdge | DynamicEdge] = {}
        self._parents: dict[str, str] = {}
        self._restarts: dict[str, int] = {}
        self._frames: set[str] = set()
        self._plans: dict[tuple[str, str], _Plan] = {}
        self._frozen = False

    @property
    def max_gap_ns(self) -> int:
        """The interpolation gap limit given at construction."""
        return self._max_gap_ns

    # -- building -------------------------------------------------------------------------

    def add(
        self,
        parent: str,
        child: str,
        timestamp_ns: int,
        transform: Transform,
        *,
        static: bool,
    ) -> str | None:
        """Store the pose of *child* in *parent* at *timestamp_ns* (ignored when *static*).

        Returns None when stored (exact duplicates included), else a one-line reason the
        transform was refused, for the caller to record: an empty frame id, a self-transform,
        a non-finite value, a rotation far from unit length, a timestamp outside int64, a
        second parent for *child*, or an edge that would close a loop.
        """
        if self._frozen:
            raise RuntimeError("the transform tree is frozen: add() after freeze()")
        parent, child = _frame_id(parent), _frame_id(child)
        if not parent or not child:
            which = "parent" if not parent else "child"
            return f"empty {which} frame id (transform from {parent!r} to {child!r})"
        if parent == child:
            return f"self-transform: parent and child are both {child!r}"
        (tx, ty, tz), (qw, qx, qy, qz) = transform
        translation = (float(tx), float(ty), float(tz))  # Python floats: numpy scalars too
        rotation = (float(qw), float(qx), float(qy), float(qz))
        if not all(map(math.isfinite, (*translation, *rotation))):
            return (
                f"transform from {parent!r} to {child!r} has a non-finite value: "
                f"translation {translation}, rotation {rotation}"
            )
        w, x, y, z = rotation
        norm2 = math.fsum((w * w, x * x, y * y, z * z))
        if not abs(norm2 - 1.0) < _NORM_TOLERANCE:
            return (
                f"transform from {parent!r} to {child!r} has a rotation of squared norm "
                f"{norm2:.6g}, not 1 (wxyz {rotation})"
            )
        t_ns = operator.index(timestamp_ns)
        if not _INT64[0] <= t_ns <= _INT64[1]:
            return f"transform from {parent!r} to {child!r}: timestamp {t_ns} is outside int64"
        if abs(norm2 - 1.0) <= _UNIT_ROUNDING:  # unit already: keep the caller's bits
            if w < 0:
                rotation = (-w, -x, -y, -z)
        else:
            rotation = quat_normalize(rotation)
        value: Transform = (translation, rotation)
        edge = self._edges.get(child)
        if edge is None:
            refused = self._refuse_new_edge(parent, child)
            if refused is not None:
                return refused
            self._store_new(parent, child, t_ns, value, static=static)
            return None
        if edge.parent != parent:
            return (
                f"frame {child!r} already has parent {edge.parent!r}; "
                f"transform from {parent!r} refused"
            )
        if edge.static != static:
            self._restarts[child] = self._restarts.get(child, 0) + 1
            self._store_new(parent, child, t_ns, value, static=static)
        elif isinstance(edge, StaticEdge):
            if edge.add(value):
                self._plans.clear()  # pre-composed static runs hold the old value
        else:
            edge.add(t_ns, value)
        return None

    def _refuse_new_edge(self, parent: str, child: str) -> str | None:
        chain = self._chain(parent)
        if child in chain:
            loop = " -> ".join([*reversed(chain[: chain.index(child) + 1]), child])
            return f"transform from {parent!r} to {child!r} would close a loop: {loop}"
        return None

    def _store_new(
        self, parent: str, child: str, t_ns: int, value: Transform, *, static: bool
    ) -> None:
        if static:
            self._edges[child] = StaticEdge(parent, child, value)
        else:
            edge = DynamicEdge(parent, child)
            edge.add(t_ns, value)
            self._edges[child] = edge
        self._parents[child] = parent
        self._frames.update((parent, child))
        self._plans.clear()

    def freeze(self) -> None:
        """Sort every dynamic edge now; afterwards :meth:`add` raises ``RuntimeError``.

        Optional: lookups sort an edge on first use. Freezing pays that once, up front, and
        makes the tree read-only, so lookups can run from several threads.
        """
        for edge in self._edges.values():
            if isinstance(edge, DynamicEdge):
                edge.settle()
        self._frozen = True

    # -- the shape of the tree ------------------------------------------------------------

    def frames(self) -> frozenset[str]:
        """Every frame id a stored transform names, as parent or child."""
        return frozenset(self._frames)

    def roots(self) -> frozenset[str]:
        """The frames without a parent: one per tree (``map``, or ``world`` beside it)."""
        return frozenset(self._frames - self._parents.keys())

    def parent_of(self, frame: str) -> str | None:
        """The parent of *frame*, None for a root; :class:`UnknownFrameError` if unknown."""
        frame = _frame_id(frame)
        self._known(frame, frame, frame, "no parent for")
        return self._parents.get(frame)

    def _chain(self, frame: str) -> list[str]:
        """*frame* and its ancestors up to its root (loops are refused at insert)."""
        chain = [frame]
        parent = self._parents.get(frame)
        while parent is not None:
            chain.append(parent)
            parent = self._parents.get(parent)
        return chain

    def _known(self, frame: str, target: str, source: str, what: str) -> None:
        if frame not in self._frames:
            raise UnknownFrameError(
                f"{what}: unknown frame {frame!r}"
                + did_you_mean(frame, self._frames, known="frames"),
                target=target,
                source=source,
                frame=frame,
            )

    def is_constant(self, parent: str, child: str) -> bool:
        """Whether the edge *parent* -> *child* holds one value at every sample.

        True for a static edge, and for a dynamic edge whose samples are all identical, as a
        fixed joint republished on ``/tf`` is; the caller decides whether that counts as
        static. ``NotFoundError`` when the tree has no such edge.
        """
        parent, child = _frame_id(parent), _frame_id(child)
        edge = self._edges.get(child)
        if edge is None or edge.parent != parent:
            found = "is a root" if edge is None else f"has parent {edge.parent!r}"
            if child not in self._frames:
                found = "is not in the tree" + did_you_mean(child, self._frames, known="frames")
            raise NotFoundError(f"no edge {parent}->{child}: frame {child!r} {found}")
        return True if isinstance(edge, StaticEdge) else edge.constant()

    def edge_summary(self) -> tuple[EdgeSummary, ...]:
        """Every edge with its kind, sample count, time range and counts, sorted by child."""
        out = []
        for child in sorted(self._edges):
            edge = self._edges[child]
            restarts = self._restarts.get(child, 0)
            if isinstance(edge, StaticEdge):
                out.append(
                    EdgeSummary(
                        parent=edge.parent,
                        child=child,
                        static=True,
                        samples=1,
                        first_ns=None,
                        last_ns=None,
                        duplicates=edge.inserts - 1 - edge.changes,
                        conflicts=edge.changes,
                        constant=True,
                        restarts=restarts,
                    )
                )
                continue
            edge.settle()
            out.append(
                EdgeSummary(
                    parent=edge.parent,
                    child=child,
                    static=False,
                    samples=len(edge.times),
                    first_ns=edge.times[0],
                    last_ns=edge.times[-1],
                    duplicates=edge.duplicates,
                    conflicts=edge.conflicts,
                    constant=edge.constant(),
                    restarts=restarts,
                )
            )
        return tuple(out)

    # -- paths ----------------------------------------------------------------------------

    def _plan(self, target: str, source: str) -> _Plan:
        """The resolved path, cached under the names as given (a lookup's hot path)."""
        key = (target, source)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._resolve(_frame_id(target), _frame_id(source))
            self._plans[key] = plan
        return plan

    def _resolve(self, target: str, source: str) -> _Plan:
        for frame in (source, target):
            self._known(frame, target, source, f"no transform from {source!r} to {target!r}")
        if target == source:
            return _Plan(target, source, (), (), (), identity())
        up_chain = self._chain(source)
        down_chain = self._chain(target)
        index = {frame: i for i, frame in enumerate(up_chain)}
        meet = next((j for j, frame in enumerate(down_chain) if frame in index), None)
        if meet is None:
            roots = (up_chain[-1], down_chain[-1])
            raise NotConnectedError(
                f"no transform from {source!r} to {target!r}: frames {source!r} and {target!r} "
                f"are not connected (trees rooted at {roots[0]!r} and {roots[1]!r})",
                target=target,
                source=source,
                roots=roots,
            )
        up = [self._edges[f] for f in up_chain[: index[down_chain[meet]]]]
        down = [self._edges[f] for f in down_chain[:meet]]
        edges = tuple(
            [PathEdge(e.parent, e.child, e.static, inverted=False) for e in up]
            + [PathEdge(e.parent, e.child, e.static, inverted=True) for e in reversed(down)]
        )
        up_steps, down_steps = _steps(up), _steps(down)
        fixed = None
        if all(isinstance(s, Fixed) for s in (*up_steps, *down_steps)):
            fixed = _combine(up_steps, down_steps, 0, self._max_gap_ns)
        return _Plan(target, source, edges, up_steps, down_steps, fixed)

    def path(self, target: str, source: str) -> tuple[PathEdge, ...]:
        """The edges a lookup from *source* to *target* walks, in order; () for one frame."""
        return self._plan(target, source).edges

    def is_static_path(self, target: str, source: str) -> bool:
        """Whether every edge between the two frames is static (True for one frame)."""
        return self._plan(target, source).fixed is not None

    def sample_times(self, target: str, source: str) -> array[int]:
        """The sorted union of the sample times of the dynamic edges between the frames."""
        plan = self._plan(target, source)
        dynamic = [s for s in (*plan.up, *plan.down) if isinstance(s, DynamicEdge)]
        for edge in dynamic:
            edge.settle()
        if len(dynamic) <= 1:
            return array("q", dynamic[0].times if dynamic else ())
        union = np.unique(np.concatenate([np.frombuffer(e.times, np.int64) for e in dynamic]))
        return packed("q", union)

    # -- lookups --------------------------------------------------------------------------

    def lookup(self, target: str, source: str, t_ns: int) -> Transform:
        """The pose of frame *source* in frame *target* at *t_ns* (tf2's ``lookupTransform``).

        Raises a :class:`TransformLookupError`: :class:`UnknownFrameError`,
        :class:`NotConnectedError`, :class:`ExtrapolationError` or :class:`GapError`.
        """
        t_ns = operator.index(t_ns)
        plan = self._plans.get((target, source)) or self._plan(target, source)
        if plan.fixed is not None:
            return plan.fixed
        result = _combine(plan.up, plan.down, t_ns, self._max_gap_ns)
        if result is None:
            raise self._failure(plan, t_ns)
        return result

    def lookup_many(
        self, target: str, source: str, times: Iterable[int]
    ) -> list[Transform | TransformLookupError]:
        """:meth:`lookup` at each of *times*, in order, with the time's error in its place.

        The path is resolved once (an unknown frame or two unconnected trees raise at once,
        as they hold at every time); only :class:`ExtrapolationError` and :class:`GapError`
        are returned in the list, for the caller to record per time.
        """
        plan = self._plan(target, source)
        if plan.fixed is not None:
            return [plan.fixed for _ in times]
        out: list[Transform | TransformLookupError] = []
        up, down, gap = plan.up, plan.down, self._max_gap_ns
        last_t: int | None = None
        for t in times:
            t_ns = operator.index(t)
            if t_ns == last_t:  # cameras triggered together share a stamp
                out.append(out[-1])
                continue
            result = _combine(up, down, t_ns, gap)
            out.append(self._failure(plan, t_ns) if result is None else result)
            last_t = t_ns
        return out

    def _failure(self, plan: _Plan, t_ns: int) -> TransformLookupError:
        target, source, gap = plan.target, plan.source, self._max_gap_ns
        for step in (*plan.up, *plan.down):
            if isinstance(step, DynamicEdge) and step.at(t_ns, gap) is None:
                kind, text, t0, t1 = step.why_not(t_ns, gap)
                message = f"no transform from {source!r} to {target!r} at {seconds(t_ns)}: {text}"
                edge = (step.parent, step.child)
                if kind == "gap":
                    return GapError(
                        message,
                        target=target,
                        source=source,
                        time_ns=t_ns,
                        edge=edge,
                        before_ns=t0,
                        after_ns=t1,
                    )
                return ExtrapolationError(
                    message,
                    target=target,
                    source=source,
                    time_ns=t_ns,
                    edge=edge,
                    earliest_ns=t0,
                    latest_ns=t1,
                )
        raise RuntimeError("a lookup failed on no edge")  # pragma: no cover - invariant


def _steps(edges: list[StaticEdge | DynamicEdge]) -> tuple[Step, ...]:
    """The edges of one side of a path, each run of static edges composed once."""
    steps: list[Step] = []
    run: Transform | None = None
    for edge in edges:
        if isinstance(edge, StaticEdge):
            run = edge.value if run is None else compose(edge.value, run)
            continue
        if run is not None:
            steps.append(Fixed(run))
            run = None
        steps.append(edge)
    if run is not None:
        steps.append(Fixed(run))
    return tuple(steps)


def _combine(
    up: tuple[Step, ...], down: tuple[Step, ...], t_ns: int, max_gap_ns: int
) -> Transform | None:
    """``invert(down) ∘ up`` at *t_ns*, each side folded from its end frame upward; None if
    a dynamic edge has no value then. No identity enters any composition."""
    source_in_top: Transform | None = None
    for step in up:
        value = step.at(t_ns, max_gap_ns)
        if value is None:
            return None
        source_in_top = value if source_in_top is None else compose(value, source_in_top)
    target_in_top: Transform | None = None
    for step in down:
        value = step.at(t_ns, max_gap_ns)
        if value is None:
            return None
        target_in_top = value if target_in_top is None else compose(value, target_in_top)
    if target_in_top is None:
        return source_in_top
    top_in_target = invert(target_in_top)
    return top_in_target if source_in_top is None else compose(top_in_target, source_in_top)
