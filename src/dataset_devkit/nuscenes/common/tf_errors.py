"""The errors of a transform-tree lookup: what was asked, and the edge or frames at fault.

::

    FormatError
    └── TransformLookupError            no transform for this lookup; names target, source,
        │                               time and the edge at fault
        ├── NotConnectedError           the two frames are in different trees
        │   └── UnknownFrameError       a frame the tree has never seen ("did you mean")
        ├── ExtrapolationError          the time is outside a dynamic edge's samples
        └── GapError                    the samples around the time are too far apart

Each message starts ``no transform from 'SOURCE' to 'TARGET'`` (tf2's wording) and says why;
the same facts are attributes, so a caller can record a rejection without parsing text.
"""

from __future__ import annotations

from dataset_devkit.errors import FormatError

__all__ = [
    "ExtrapolationError",
    "GapError",
    "NotConnectedError",
    "TransformLookupError",
    "UnknownFrameError",
]


class TransformLookupError(FormatError):
    """No transform for a lookup; the message starts ``no transform from 'S' to 'T'``.

    Attributes: ``target``, ``source`` (frame ids), ``time_ns`` (None for a lookup that does
    not depend on time) and ``edge`` (``(parent, child)`` at fault, or None).
    """

    def __init__(
        self,
        message: str,
        *,
        target: str,
        source: str,
        time_ns: int | None = None,
        edge: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.target = target
        self.source = source
        self.time_ns = time_ns
        self.edge = edge


class NotConnectedError(TransformLookupError):
    """The frames are in two different trees (``roots`` holds the source's and target's)."""

    def __init__(
        self, message: str, *, target: str, source: str, roots: tuple[str, str] | None = None
    ) -> None:
        super().__init__(message, target=target, source=source)
        self.roots = roots


class UnknownFrameError(NotConnectedError):
    """A frame id no transform of the tree mentions (``frame``)."""

    def __init__(self, message: str, *, target: str, source: str, frame: str) -> None:
        super().__init__(message, target=target, source=source)
        self.frame = frame


class ExtrapolationError(TransformLookupError):
    """The time is outside the samples of ``edge`` (``earliest_ns`` to ``latest_ns``)."""

    def __init__(
        self,
        message: str,
        *,
        target: str,
        source: str,
        time_ns: int,
        edge: tuple[str, str],
        earliest_ns: int,
        latest_ns: int,
    ) -> None:
        super().__init__(message, target=target, source=source, time_ns=time_ns, edge=edge)
        self.earliest_ns = earliest_ns
        self.latest_ns = latest_ns


class GapError(TransformLookupError):
    """The samples of ``edge`` around the time (``before_ns``, ``after_ns``) are too far apart."""

    def __init__(
        self,
        message: str,
        *,
        target: str,
        source: str,
        time_ns: int,
        edge: tuple[str, str],
        before_ns: int,
        after_ns: int,
    ) -> None:
        super().__init__(message, target=target, source=source, time_ns=time_ns, edge=edge)
        self.before_ns = before_ns
        self.after_ns = after_ns
