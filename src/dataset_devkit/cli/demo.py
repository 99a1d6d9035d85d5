"""``dataset-devkit demo [OUT]``: run every system on embedded sample data."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from dataset_devkit.cli.needs import require_for
from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.render import path_parser, stdout_console
from dataset_devkit.demo import DEMO_EXTRAS, DEMO_STEPS, DemoReport, run_demo
from dataset_devkit.errors import ConfigError, DestinationExistsError

__all__ = ["register"]


def _show(report: DemoReport) -> None:
    """One step as ``label  value`` lines, never wrapped by us.

    A table would fold a 64-hex root hash over two lines at 80 columns, and a folded hash
    copies broken; plain soft-wrapped lines leave wrapping to the terminal, which copies
    a wrapped line back whole.
    """
    console = stdout_console()
    console.print(Text(report.title, style="bold"))
    rows = [*report.lines, *((f"root_sha256 ({n})", h) for n, h in report.root_sha256.items())]
    width = max((len(label) for label, _ in rows), default=0)
    for label, value in rows:
        console.print(Text.assemble("  ", (label.ljust(width), "cyan"), "  ", value))
    console.print()


def demo(
    out: Annotated[
        Path | None,
        typer.Argument(
            help="An absent or empty directory for the results (default: a temp dir).",
            parser=path_parser,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
) -> None:
    """Build, publish, verify and read small datasets with every system, and show them."""
    target("demo", out)
    require_for("demo")  # every extra the steps use, before any step writes
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="dataset-devkit-demo-"))
    elif out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise DestinationExistsError(f"{out}: demo output must be absent or an empty directory")
    target("demo", out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, a read-only parent
        raise ConfigError(
            f"{out}: cannot create the demo output directory ({exc.strerror})", key="out"
        ) from None
    console = stdout_console()
    if not as_json:
        console.print(Text.assemble(("dataset-devkit demo", "bold"), f" → {out}"), "")
    steps: list[dict[str, Any]] = []
    for report in run_demo(out, DEMO_STEPS, DEMO_EXTRAS):
        steps.append(
            {
                "title": report.title,
                "lines": [list(line) for line in report.lines],
                "root_sha256": dict(report.root_sha256),
                "try_next": [["dataset-devkit", *args] for args in report.try_next],
            }
        )
        if not as_json:
            _show(report)
    if as_json:
        emit_report(ok=True, steps=steps)
        return
    console.print(
        Text.assemble(("demo complete", "green"), f": everything above is on disk under {out}")
    )
    console.print(Text("next, try:", style="bold"))
    for step in steps:
        for command in step["try_next"]:
            console.print(f"  {shlex.join(command)}")


def register(app: typer.Typer) -> None:
    """Add the ``demo`` command to the root app."""
    app.command("demo")(demo)
