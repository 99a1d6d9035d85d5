"""Timed streams of the evidence (ego poses, GNSS fixes, the track) held as two arrays.

An hour-long drive has hundreds of thousands of pose, fix and track messages. As tuples of
Python ints and floats each costs about 240 bytes; here a stream is one ``int64`` array of
capture times and one ``float64`` array of values (8 bytes a number), so the decoded
evidence stays small while export re-derives scenes from it. The JSON form is unchanged:
``[t, [v, ...]]`` rows (``nested``) or ``[t, v, ...]`` rows, and :meth:`TimedRows.to_builtins`
gives back the exact ints and floats, so canonical bytes and root hashes do not move.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from dataset_devkit.nuscenes.spec import Quat, Vec3

__all__ = ["FixRows", "PoseRows", "QuatRows", "TimedRows", "decode_hook", "encode_hook"]

_INT64 = (-(2**63), 2**63 - 1)


class TimedRows:
    """Rows ``(time ns, values)`` of one stream, in recorded order; immutable.

    Subclasses fix the shape: ``WIDTH`` values per row, ``[t, [v1, ..., vk]]`` rows in JSON
    when ``NESTED`` (poses, track), else ``[t, v1, ..., vk]`` (GNSS fixes).
    """

    __slots__ = ("_times", "_values")
    WIDTH: ClassVar[int] = 0
    NESTED: ClassVar[bool] = True

    def __init__(self, times: npt.NDArray[np.int64], values: npt.NDArray[np.float64]) -> None:
        if times.shape != (len(values),) or values.shape != (len(times), self.WIDTH):
            raise ValueError(f"a timed stream needs one time per row of {self.WIDTH} values")
        times.setflags(write=False)
        values.setflags(write=False)
        self._times = times
        self._values = values

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[Any]]) -> Self:
        """Pack ``(t, (v, ...))`` rows (nested shapes) or ``(t, v, ...)`` rows into arrays."""
        times: list[int] = []
        flat: list[float] = []
        for row in rows:
            times.append(row[0])
            flat.extend(row[1] if cls.NESTED else row[1:])
        return cls(
            np.array(times, dtype=np.int64),
            np.array(flat, dtype=np.float64).reshape(len(times), cls.WIDTH),
        )

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        """A decoded JSON array of rows; ValueError naming the first malformed row."""
        if not isinstance(obj, list):
            raise ValueError(f"Expected `array`, got `{type(obj).__name__}`")
        for i, row in enumerate(obj):
            if not cls._well_formed(row):
                inner = ", ".join(["number"] * cls.WIDTH)
                shape = f"[int, [{inner}]]" if cls.NESTED else f"[int, {inner}]"
                raise ValueError(f"row {i} is not {shape}")
        return cls.from_rows(obj)

    @classmethod
    def _well_formed(cls, row: Any) -> bool:
        if not isinstance(row, list) or not row or type(row[0]) is not int:
            return False
        if not _INT64[0] <= row[0] <= _INT64[1]:
            return False
        values = row[1:] if not cls.NESTED else row[1] if len(row) == 2 else None
        if not isinstance(values, list) or len(values) != cls.WIDTH:
            return False
        return all(type(v) is float or type(v) is int for v in values)

    @property
    def times(self) -> npt.NDArray[np.int64]:
        """Capture times (ns), read-only."""
        return self._times

    @property
    def values(self) -> npt.NDArray[np.float64]:
        """One row of values per capture time, read-only."""
        return self._values

    def __len__(self) -> int:
        return len(self._times)

    def time(self, i: int) -> int:
        """The capture time of row *i* as a Python int."""
        return int(self._times[i])

    def value(self, i: int) -> tuple[float, ...]:
        """The values of row *i* as Python floats (the exact recorded numbers)."""
        return tuple(self._values[i].tolist())

    def to_builtins(self, start: int = 0, stop: int | None = None) -> list[Any]:
        """Rows *start*..*stop* in their JSON shape, as Python ints and floats."""
        times = self._times[start:stop].tolist()
        values = self._values[start:stop].tolist()
        if self.NESTED:
            return [[t, v] for t, v in zip(times, values, strict=True)]
        return [[t, *v] for t, v in zip(times, values, strict=True)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TimedRows):
            return NotImplemented
        return (
            type(self) is type(other)
            and np.array_equal(self._times, other._times)
            # bit patterns: -0.0 and 0.0 are different bytes in the evidence
            and np.array_equal(self._values.view(np.int64), other._values.view(np.int64))
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (np.array(self._times), np.array(self._values)))


class PoseRows(TimedRows):
    """``[t, [x, y, z]]`` rows: ego translations, the metric track."""

    __slots__ = ()
    WIDTH = 3

    def vec3(self, i: int) -> Vec3:
        x, y, z = self._values[i].tolist()
        return (x, y, z)


class QuatRows(TimedRows):
    """``[t, [w, x, y, z]]`` rows: ego rotations."""

    __slots__ = ()
    WIDTH = 4

    def quat(self, i: int) -> Quat:
        w, x, y, z = self._values[i].tolist()
        return (w, x, y, z)


class FixRows(TimedRows):
    """``[t, east, north]`` rows: GNSS fixes in metres."""

    __slots__ = ()
    WIDTH = 2
    NESTED = False

    def fix(self, i: int) -> tuple[float, float]:
        east, north = self._values[i].tolist()
        return (east, north)


def decode_hook(kind: type, obj: Any) -> Any:
    """msgspec ``dec_hook``: JSON rows into the stream type a record field declares."""
    if isinstance(kind, type) and issubclass(kind, TimedRows) and kind.WIDTH:
        return kind.from_json(obj)
    raise NotImplementedError(f"cannot decode {kind!r}")


def encode_hook(obj: Any) -> Any:
    """msgspec ``enc_hook``: a stream as its JSON rows."""
    if isinstance(obj, TimedRows):
        return obj.to_builtins()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")
