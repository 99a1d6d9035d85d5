"""Shared helpers of CLI commands: consoles, path parsing, renamed flags."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity.byte_size import BYTE_SIZE_EXAMPLES, parse_byte_size

__all__ = [
    "READABLE_BY_HELP",
    "ReadableByChoice",
    "byte_size_parser",
    "hidden_alias",
    "path_parser",
    "renamed",
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


def byte_size_parser(text: str) -> int:
    """``134217728``, ``128MiB`` or ``100MB`` as bytes (options such as ``--part-size``)."""
    try:
        return parse_byte_size(text, "size")
    except ConfigError:
        raise typer.BadParameter(f"expected {BYTE_SIZE_EXAMPLES}: {text!r}") from None


def stdout_console() -> Console:
    """A console for results (no markup surprises from user-provided names)."""
    return Console(highlight=False, soft_wrap=True)


def stderr_console() -> Console:
    """A console for progress and diagnostics, kept off stdout so ``--json`` stays clean."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


T = TypeVar("T")


def renamed(new: T | None, old: T | None, new_flag: str, old_flag: str) -> T | None:
    """Merge a flag with its old spelling, which keeps working with a warning on stderr.

    Scripts written against ``--to``/``--output``/``--location`` must not break the day the
    grammar became one word per concept; the old spellings are hidden from ``--help``.
    """
    if old is None:
        return new
    if new is not None:
        raise typer.BadParameter(f"give {new_flag} only ({old_flag} is its old spelling)")
    stderr_console().print(
        f"[yellow]warning:[/yellow] {old_flag} is deprecated; use {new_flag} (same meaning)"
    )
    return old


def hidden_alias(flag: str, replaced_by: str, *, path: bool = False) -> Any:
    """A hidden Typer option for the old spelling *flag* of *replaced_by*."""
    extra: dict[str, Any] = {"parser": path_parser} if path else {}
    return typer.Option(flag, hidden=True, help=f"Deprecated spelling of {replaced_by}.", **extra)
