"""``dataset-devkit demo [OUT]``: run every system on embedded sample data."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from dataset_devkit.cli.render import path_parser, stdout_console
from dataset_devkit.demo import DEMO_STEPS, run_demo
from dataset_devkit.errors import ConfigError, DestinationExistsError

__all__ = ["register"]


def demo(
    out: Annotated[
        Path | None,
        typer.Argument(
            help="An absent or empty directory for the results (default: a temp dir).",
            parser=path_parser,
        ),
    ] = None,
) -> None:
    """Build, publish, verify and read small datasets with every system, and show them."""
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="dataset-devkit-demo-"))
    elif out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise DestinationExistsError(f"{out}: demo output must be absent or an empty directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, a read-only parent
        raise ConfigError(
            f"{out}: cannot create the demo output directory ({exc.strerror})", key="out"
        ) from None
    console = stdout_console()
    console.print(Text.assemble(("dataset-devkit demo", "bold"), f" → {out}"))
    for report in run_demo(out, DEMO_STEPS):
        table = Table(title=report.title, show_header=False, title_justify="left", expand=False)
        table.add_column("what", style="cyan", no_wrap=True)
        table.add_column("value", overflow="fold")
        for label, value in report.lines:
            table.add_row(Text(label), Text(value))
        for name, digest in report.root_sha256.items():
            table.add_row(Text(f"root_sha256 ({name})"), Text(digest))
        console.print(table)
    console.print(
        Text.assemble(("demo complete", "green"), f": everything above is on disk under {out}")
    )


def register(app: typer.Typer) -> None:
    """Add the ``demo`` command to the root app."""
    app.command("demo")(demo)
