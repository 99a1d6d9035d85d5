"""Shared helpers of CLI commands: consoles, path parsing, renamed flags."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity.numbers import count, format_size, parse_size

__all__ = [
    "READABLE_BY_HELP",
    "ReadableByChoice",
    "byte_size_parser",
    "count",
    "format_size",
    "hidden_alias",
    "path_parser",
    "print_table",
    "renamed",
    "size_option",
    "stderr_console",
    "stdout_console",
    "table",
    "text_parser",
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


def text_parser(value: str) -> str:
    """A name or path argument kept as text, refusing ``""`` as :func:`path_parser` does."""
    if not value:
        raise typer.BadParameter("must not be empty (an unset shell variable?)")
    return value


def byte_size_parser(text: str | int) -> int:
    """``134217728``, ``128MiB`` or ``100MB`` as bytes: the parser of every size option
    (``--shard-bytes``, ``--package-limit``, ``--part-size``); a default is already bytes."""
    if isinstance(text, int):
        return text
    try:
        return parse_size(text)
    except ConfigError:
        raise typer.BadParameter(
            f"expected a size such as 134217728, 128MiB or 100MB, found {text!r}"
        ) from None


def size_option(flag: str, help: str, *, minimum: int = 1, default: str | bool = True) -> Any:
    """A Typer option taking a size in bytes with an optional unit (``64KiB``, ``1MB``);
    *default* is how ``--help`` shows the default (a size, not a raw byte count)."""

    def parse(text: str | int) -> int:
        size = byte_size_parser(text)
        if size < minimum:
            raise typer.BadParameter(f"{text} is below the smallest size, {format_size(minimum)}")
        return size

    return typer.Option(flag, parser=parse, metavar="SIZE", help=help, show_default=default)


def table(*columns: str, **options: Any) -> Table:
    """A rich table whose cells never lose characters: long ones wrap (``fold``), never
    end in "…" (a cut pair id or path cannot be copied back). See :func:`print_table`."""
    made = Table(**options)
    for name in columns:
        made.add_column(name, overflow="fold")
    return made


def print_table(console: Console, shown: Table) -> None:
    """Print *shown*; off a terminal (a pipe, a log) at its full width, one row a line,
    so ``grep`` and ``awk`` see whole rows whatever ``COLUMNS`` says."""
    if console.is_terminal:
        console.print(shown)
        return
    widest = console.measure(shown, options=console.options.update(width=1 << 16)).maximum
    # A console is never printed wider than it is: a second one, as wide as the table.
    wide = Console(file=console.file, width=max(widest, console.width), highlight=False)
    wide.print(shown)


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
