"""Root Typer app, global options and the mapping of errors to exit codes.

Exit codes: 0 success, 1 a :class:`~dataset_devkit.errors.DevkitError` or an error of the
environment such as a full disk (one clear line on stderr, the traceback only with
``--debug``), 2 a usage error (Typer/Click's own), 130 an interruption (Ctrl-C).
Each system contributes its commands through a ``register(app)`` function in its own
``cli/<system>.py`` module, listed in :data:`COMMAND_MODULES`.
"""

from __future__ import annotations

import errno
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

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
    "preview",
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
    debug = "--debug" in args
    try:
        app(args=args, prog_name="dataset-devkit")
    except DevkitError as exc:
        _fail(str(exc), debug)
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            raise
        # A full disk, a read-only filesystem or a permission the user lacks is a fact
        # about the machine, not a bug: one line naming the file, like any devkit error.
        where = f": {exc.filename}" if exc.filename else ""
        _fail(f"{exc.strerror or exc}{where}", debug)
    except KeyboardInterrupt:
        Console(stderr=True, highlight=False).print("interrupted", style="bold red")
        sys.exit(130)


#: Errors of the environment (space, quota, permissions, I/O, descriptors) rather than of
#: the code: reported in one line, the traceback only with ``--debug``.
_ENVIRONMENT_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.EROFS,
        errno.EIO,
        errno.EACCES,
        errno.EPERM,
        errno.EMFILE,
        errno.ENFILE,
    }
)


def _fail(message: str, debug: bool) -> NoReturn:
    if _state["debug"] or debug:
        traceback.print_exc()
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    err.print(Text.assemble(("error: ", "bold red"), message))
    sys.exit(1)
