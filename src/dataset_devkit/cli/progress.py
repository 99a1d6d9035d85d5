"""Rich progress bars for the library's :class:`ProgressUpdate` callbacks.

A bar is drawn on stderr only when stdout is a terminal, neither ``--quiet`` nor ``--json``
was given, and stderr is a terminal too: piped or scripted runs get clean output and
nothing else. One bar per stage, each showing bytes and items (files, pairs, packages,
samples), the rate and an ETA, from the totals and increments the library reports.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from dataset_devkit.cli.output import state
from dataset_devkit.cli.render import stderr_console
from dataset_devkit.integrity.numbers import format_size
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate

__all__ = ["bars_enabled", "progress_bar"]

#: The shortest interval between two updates of one bar, in seconds.
_MIN_UPDATE_S = 0.05


def bars_enabled() -> bool:
    """Whether this run draws progress bars (a terminal, and no ``--quiet``/``--json``)."""
    if state.quiet or state.json:
        return False
    return sys.stdout.isatty() and stderr_console().is_terminal


class _CountsColumn(ProgressColumn):
    """``1.2/3.4 GB · 12/40 files``: bytes when the stage moves bytes, items always."""

    def render(self, task: Task) -> Text:
        fields = task.fields
        parts = []
        if fields["bytes_done"] or fields["bytes_total"]:
            total = fields["bytes_total"]
            of = f"/{format_size(total)}" if total else ""
            parts.append(f"{format_size(fields['bytes_done'])}{of}")
        if fields["items_done"] or fields["items_total"]:
            total = fields["items_total"]
            of = f"/{total}" if total else ""
            parts.append(f"{fields['items_done']}{of} {fields['unit']}")
        return Text(" · ".join(parts), style="progress.download")


class _RateColumn(ProgressColumn):
    """Bytes per second when the stage moves bytes, else items per second.

    The bar's own speed is in the unit it follows; a stage that moves bytes but follows
    its items (pairs written, with the bytes of their videos) shows its average byte rate,
    and so does a stage too quick for rich's windowed speed.
    """

    def render(self, task: Task) -> Text:
        fields = task.fields
        speed = None
        if fields["follows_bytes"] or not fields["bytes_done"]:
            speed = task.finished_speed or task.speed
        if speed is None:  # too few or too quick updates for rich's windowed speed: average
            elapsed = task.finished_time or task.elapsed
            done = fields["bytes_done"] or fields["items_done"]
            speed = done / elapsed if elapsed and done else None
        if speed is None:
            return Text("", style="progress.data.speed")
        if fields["bytes_done"]:
            return Text(f"{format_size(int(speed))}/s", style="progress.data.speed")
        return Text(f"{speed:.1f} {fields['unit']}/s", style="progress.data.speed")


@contextmanager
def progress_bar() -> Iterator[OnProgress | None]:
    """Yield the thread-safe callback a long entry point takes, or ``None`` when no bar is
    drawn: then the library does no progress work at all (not even the stat walk that
    gives a tree's totals).

    Each stage the library reports gets its own bar, with the totals it announces.
    """
    if not bars_enabled():
        yield None
        return
    bars = Progress(
        TextColumn("{task.description:<16}"),
        BarColumn(),
        _CountsColumn(),
        _RateColumn(),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=stderr_console(),
        transient=True,
    )
    tasks: dict[str, tuple[TaskID, dict[str, Any]]] = {}
    lock = threading.Lock()  # library workers report from several threads
    shown_at: dict[str, float] = {}

    def advance(update: ProgressUpdate) -> None:
        with lock:
            if update.stage not in tasks:
                fields: dict[str, Any] = {
                    "bytes_done": 0,
                    "bytes_total": None,
                    "items_done": 0,
                    "items_total": None,
                    "unit": update.unit,
                    "follows_bytes": False,
                }
                tasks[update.stage] = (bars.add_task(update.stage, total=None, **fields), fields)
            task_id, fields = tasks[update.stage]
            if update.total_bytes is not None:
                fields["bytes_total"] = update.total_bytes
            if update.total_items is not None:
                fields["items_total"] = update.total_items
            fields["bytes_done"] += update.nbytes
            fields["items_done"] += update.items
            fields["unit"] = update.unit
            # Thousands of small files report thousands of times a second; the bar redraws
            # ten times a second, so the task is updated at most every 50 ms.
            # The first advance is always shown: with the last frame it gives the rate.
            now = time.monotonic()
            if update.total_bytes is None and update.total_items is None:
                if now - shown_at.get(update.stage, -_MIN_UPDATE_S) < _MIN_UPDATE_S:
                    return
                shown_at[update.stage] = now
            show(task_id, fields)

    def show(task_id: TaskID, fields: dict[str, Any]) -> None:
        # The bar follows bytes when the stage moves bytes, else its items.
        fields["follows_bytes"] = bool(
            fields["bytes_total"] or (fields["bytes_done"] and not fields["items_total"])
        )
        if fields["follows_bytes"]:
            total, done = fields["bytes_total"], fields["bytes_done"]
        else:
            total, done = fields["items_total"], fields["items_done"]
        bars.update(task_id, total=total, completed=done, **fields)

    with bars:
        yield advance
        with lock:  # the last frame shows where every stage ended, throttled or not
            for task_id, fields in tasks.values():
                show(task_id, fields)
