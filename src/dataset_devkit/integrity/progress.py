"""The one progress protocol of long library operations; the CLI renders it, nothing prints.

A long entry point (verify, build, pack, restore, validate) takes
``progress: OnProgress | None = None`` and calls it with :class:`ProgressUpdate` values
saying what was done *since the last call* (increments, so worker threads can report
without sharing a counter) and, once known, the totals of the current stage. Callbacks may
be called from worker threads; renderers must be thread-safe (``rich.progress`` is).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["OnProgress", "ProgressUpdate", "byte_reporter", "report"]


@dataclass(frozen=True, slots=True)
class ProgressUpdate:
    """Work done since the previous update of *stage*, and the stage's totals when known.

    ``items`` counts the stage's natural unit, named by ``unit`` (files, samples, pairs,
    packages); ``nbytes`` counts payload bytes. A ``None`` total is unknown (a streaming
    input), a renderer then shows counts and rate without an ETA.
    """

    stage: str
    nbytes: int = 0
    items: int = 0
    total_bytes: int | None = None
    total_items: int | None = None
    unit: str = "files"


#: The callback type of every long entry point.
OnProgress = Callable[[ProgressUpdate], None]


def report(progress: OnProgress | None, update: ProgressUpdate) -> None:
    """Send *update* to *progress* when there is a listener (the library's one call site)."""
    if progress is not None:
        progress(update)


def byte_reporter(
    progress: OnProgress | None, stage: str, *, unit: str = "files"
) -> Callable[[int], None] | None:
    """Adapt *progress* to the byte counters of the hashing loops (``advance(nbytes)``)."""
    if progress is None:
        return None
    sink = progress

    def advance(nbytes: int) -> None:
        sink(ProgressUpdate(stage, nbytes=nbytes, unit=unit))

    return advance
