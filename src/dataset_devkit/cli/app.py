"""Root Typer app, global options and the mapping of errors to exit codes.

Exit codes: 0 success, 1 a :class:`~dataset_devkit.errors.DevkitError` (one clear line on
stderr, the traceback only with ``--debug``), 2 a usage error (Typer/Click's own).
Each system contributes its commands through a ``register(app)`` function in its own
``cli/<system>.py`` module, listed in :data:`COMMAND_MODULES`.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Sequence

import typer
from rich.console import Console
from rich.text import Text

from dataset_devkit.errors import DevkitError

app = typer.Typer(
    name="dataset-devkit",
    help="Build, verify, publish, ship and read immutable ML datasets.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

#: ``dataset_devkit.cli.<name>`` modules whose ``register(app)`` adds commands.
COMMAND_MODULES: tuple[str, ...] = (
    "integrity",
    "demo",
    "release",
    "vin_store",
    "nuscenes",
    "stereo",
)

_state = {"debug": False}


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of a failure."),
) -> None:
    """Build, verify, publish, ship and read immutable ML datasets."""
    _state["debug"] = debug


for _name in COMMAND_MODULES:
    importlib.import_module(f"dataset_devkit.cli.{_name}").register(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI and map devkit errors to exit code 1 with one clear message."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        app(args=args, prog_name="dataset-devkit")
    except DevkitError as exc:
        if _state["debug"] or "--debug" in args:
            traceback.print_exc()
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        err.print(Text.assemble(("error: ", "bold red"), str(exc)))
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
