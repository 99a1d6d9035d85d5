"""The two edge stores of :class:`~dataset_devkit.nuscenes.common.tf_tree.TransformTree`.

A static edge holds one transform (the latest insert wins); a dynamic edge holds its samples as
one ``array('q')`` of times and one ``array('d')`` of 7 values a sample (x y z, w x y z): 64
bytes a sample instead of about 400 for a tuple of Python floats, so an hour at 100 Hz on
several edges stays a few tens of megabytes. Samples arriving in time order are checked for a
repeated time as they come; any out-of-order sample defers that to one stable sort on the first
lookup (or ``freeze``). Lookups bisect the time array and rebuild only the one or two samples
they read, as Python floats: bit for bit the values that were added.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.nuscenes.common.geometry import Transform, interpolate_transform

__all__ = ["DynamicEdge", "Fixed", "StaticEdge", "Step", "bits", "packed", "seconds"]

_WIDTH = 7
_PACK = struct.Struct("<7d")


def bits(t: Transform) -> bytes:
    """The 56 bytes of *t*'s values: equal bytes, equal transforms (signed zeros included)."""
    (x, y, z), (qw, qx, qy, qz) = t
    return _PACK.pack(x, y, z, qw, qx, qy, qz)


def packed(typecode: str, values: npt.NDArray[Any]) -> array[Any]:
    """A compact ``array`` holding a copy of a numpy array's items (one copy, no Python objects)."""
    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values).data.cast("B"))
    return out


def seconds(t_ns: int) -> str:
    """``12.300 s``: nanoseconds as seconds, exact, at least three decimals."""
    whole, part = divmod(abs(t_ns), 1_000_000_000)
    digits = f"{part:09d}".rstrip("0").ljust(3, "0")
    return f"{'-' if t_ns < 0 else ''}{whole}.{digits} s"


class StaticEdge:
    """One transform valid at every time; each insert replaces it (tf2's static cache)."""

    __slots__ = ("changes", "child", "inserts", "parent", "value")
    static = True

    def __init__(self, parent: str, child: str, value: Transform) -> None:
        self.parent = parent
        self.child = child
        self.value = value
        self.inserts = 1
        self.changes = 0

    def add(self, value: Transform) -> bool:
        """Store *value*; True when its bytes differ from the value it replaces."""
        self.inserts += 1
        if value != self.value:
            self.changes += 1
        changed = bits(value) != bits(self.value)
        self.value = value
        return changed


class DynamicEdge:
    """Timed samples of one edge, interpolated inside their range, never outside it."""

    __slots__ = (
        "_bracket",
        "_constant",
        "_ordered",
        "_pair",
        "child",
        "conflicts",
        "duplicates",
        "parent",
        "times",
        "values",
    )
    static = False

    def __init__(self, parent: str, child: str) -> None:
        self.parent = parent
        self.child = child
        self.times = array("q")
        self.values = array("d")
        self.duplicates = 0
        self.conflicts = 0
        self._ordered = True
        self._constant: bool | None = None
        self._bracket = 1  # index of the later sample of the last bracket looked up
        self._pair: tuple[int, Transform, Transform] | None = None

    def add(self, t_ns: int, value: Transform) -> None:
        """Append a sample; a time already held keeps its first value (settled lazily)."""
        (x, y, z), (qw, qx, qy, qz) = value
        times = self.times
        if self._ordered and times:
            last = times[-1]
            if t_ns == last:  # in order, the last sample is the first one at this time
                held = self.values[-_WIDTH:].tolist()
                if held == [x, y, z, qw, qx, qy, qz]:
                    self.duplicates += 1
                else:
                    self.conflicts += 1
                return
            if t_ns < last:
                self._ordered = False
        times.append(t_ns)
        self.values.extend((x, y, z, qw, qx, qy, qz))
        self._constant = None

    def settle(self) -> None:
        """Sort the samples by time (stable) and keep the first value at each time."""
        if self._ordered:
            return
        n = len(self.times)
        order = np.argsort(np.frombuffer(self.times, dtype=np.int64), kind="stable")
        times = np.frombuffer(self.times, dtype=np.int64)[order]
        values = np.frombuffer(self.values, dtype=np.float64).reshape(n, _WIDTH)[order]
        del order
        first = np.empty(n, dtype=bool)
        first[0] = True
        np.not_equal(times[1:], times[:-1], out=first[1:])
        if not first.all():
            repeats = np.flatnonzero(~first)
            held = np.flatnonzero(first)[np.cumsum(first)[repeats] - 1]
            same = (values[repeats] == values[held]).all(axis=1)
            self.duplicates += int(same.sum())
            self.conflicts += int(same.size - same.sum())
            times, values = times[first], values[first]
        self.times = packed("q", times)
        self.values = packed("d", values)
        self._ordered = True
        self._bracket = 1
        self._pair = None

    def sample(self, i: int) -> Transform:
        """Sample *i* (of the settled samples) as Python floats."""
        v = self.values
        k = _WIDTH * i
        return ((v[k], v[k + 1], v[k + 2]), (v[k + 3], v[k + 4], v[k + 5], v[k + 6]))

    def at(self, t_ns: int, max_gap_ns: int) -> Transform | None:
        """The edge at *t_ns*, or None outside the samples or across a gap (see ``why_not``).

        Lookups come in time order (camera frames), so the last bracket is tried before a
        bisection, and its two samples are kept: several cameras' frames fall between the
        same two samples. Both are hints only, checked before use (safe if threads race).
        """
        if not self._ordered:
            self.settle()
        times = self.times
        j = self._bracket
        if j >= len(times) or not times[j - 1] < t_ns <= times[j]:
            j = bisect.bisect_left(times, t_ns)
            if j == len(times):
                return None
            if times[j] == t_ns:
                return self.sample(j)
            if j == 0:
                return None
            self._bracket = j
        elif times[j] == t_ns:
            return self.sample(j)
        t0 = times[j - 1]
        t1 = times[j]
        if t1 - t0 > max_gap_ns:
            return None
        pair = self._pair
        if pair is None or pair[0] != j:
            pair = (j, self.sample(j - 1), self.sample(j))
            self._pair = pair
        return interpolate_transform(pair[1], pair[2], (t_ns - t0) / (t1 - t0))

    def why_not(self, t_ns: int, max_gap_ns: int) -> tuple[str, str, int, int]:
        """Why :meth:`at` gave None: ``(kind, text, t0, t1)``, kind ``extrapolation`` or ``gap``."""
        self.settle()
        times = self.times
        name = f"edge {self.parent}->{self.child}"
        j = bisect.bisect_left(times, t_ns)
        if 0 < j < len(times):
            t0, t1 = times[j - 1], times[j]
            return (
                "gap",
                f"{name} has no sample between {seconds(t0)} and {seconds(t1)}, a gap of "
                f"{seconds(t1 - t0)} (more than the {seconds(max_gap_ns)} allowed)",
                t0,
                t1,
            )
        first, last = times[0], times[-1]
        if first == last:
            held = f"has one sample only, at {seconds(first)}"
        else:
            held = f"has samples only from {seconds(first)} to {seconds(last)}"
        return ("extrapolation", f"{name} {held} (extrapolation)", first, last)

    def constant(self) -> bool:
        """Whether every sample holds the same value (a fixed joint republished on /tf)."""
        self.settle()
        if self._constant is None:
            values = np.frombuffer(self.values, dtype=np.float64).reshape(-1, _WIDTH)
            self._constant = bool((values == values[0]).all())
        return self._constant


class Fixed:
    """A run of static edges of a path, composed once: the same value at every time."""

    __slots__ = ("value",)

    def __init__(self, value: Transform) -> None:
        self.value = value

    def at(self, t_ns: int, max_gap_ns: int) -> Transform:
        """The run's value (valid at every time)."""
        return self.value


Step = Fixed | DynamicEdge
