"""Shared rendering helpers for CLI commands: consoles, progress bars, JSON output."""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

__all__ = [
    "READABLE_BY_HELP",
    "ReadableByChoice",
    "byte_progress",
    "path_parser",
    "print_json",
    "stderr_console",
    "stdout_console",
]


class ReadableByChoice(enum.StrEnum):
    """``--readable-by``: who may read what a command publishes."""

    owner = "owner"
    group = "group"
    all = "all"


READABLE_BY_HELP = (
    "Who may read the published output: owner (files 0400, folders 0500), group (0440/0550) "
    "or all (0444/0555)."
)


def path_parser(value: str) -> Path:
    """Parse a path argument, refusing ``""`` (``Path("")`` is the working directory).

    ``dataset-devkit manifest "$DIR"`` with ``DIR`` unset must be a usage error, not a
    manifest written into whatever directory the shell is in.
    """
    if not value:
        raise typer.BadParameter("must not be empty (an unset shell variable?)")
    return Path(value)


def stdout_console() -> Console:
    """A console for results (no markup surprises from user-provided names)."""
    return Console(highlight=False, soft_wrap=True)


def stderr_console() -> Console:
    """A console for progress and diagnostics, kept off stdout so ``--json`` stays clean."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(value: Any) -> None:
    """Write *value* as deterministic, indented JSON to stdout."""
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


@contextmanager
def byte_progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr for hashing; yields a thread-safe ``advance(nbytes)``."""
    console = stderr_console()
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    with progress:
        task = progress.add_task(description, total=total)

        def advance(nbytes: int) -> None:
            progress.update(task, advance=nbytes)

        yield advance
