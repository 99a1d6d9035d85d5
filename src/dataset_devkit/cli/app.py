"""Root Typer app, global options and the mapping of errors to exit codes.

Exit codes: 0 success, 1 a :class:`~dataset_devkit.errors.DevkitError` or an error of the
environment such as a full disk (one clear line on stderr, the traceback only with
``--debug``), 2 a usage error (Typer/Click's own), 130 an interruption (Ctrl-C). With
``--json`` a failure also prints the JSON report (``"ok": false`` and ``"exit_code"``) on
stdout. Each system contributes its commands through a ``register(app)`` function in its
own ``cli/<system>.py`` module, listed in :data:`COMMAND_MODULES`; a run imports only the
module of the command it names.
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from dataset_devkit import __version__
from dataset_devkit.cli.help import tidy_help
from dataset_devkit.cli.output import state, write_failure_safely
from dataset_devkit.errors import DevkitError

#: ``dataset_devkit.cli.<module>`` modules whose ``register(app)`` adds commands, with the
#: top-level commands each one adds (``tests/cli`` checks the two agree). A run that names
#: one of them imports only its module: importing them all (the nuScenes pipeline, numpy,
#: the store, the object store clients) was about 0.45 s of every command's start.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "integrity": ("manifest", "publish", "verify"),
    "demo": ("demo",),
    "release": ("release",),
    "vin_store": ("store",),
    "cache": ("cache",),
    "nuscenes": ("build",),
    "recording": ("recording",),
    "stereo": ("stereo",),
    "kinds": ("inspect", "validate"),
    "preview": ("preview",),
    "croissant": ("croissant",),
}
_MODULE_OF = {name: module for module, names in COMMAND_MODULES.items() for name in names}

# Typer >= 0.2x vendors Click: its exception classes are found from Typer's public ones.
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)

#: Options of the whole run, accepted before or after the subcommand.
GLOBAL_FLAGS = ("--debug", "--quiet")
#: Set by the shell while it asks for completions (Click's ``_{PROG_NAME}_COMPLETE``).
COMPLETION_VARIABLE = "_DATASET_DEVKIT_COMPLETE"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"dataset-devkit {__version__}")
        raise typer.Exit()


def _root(
    debug: bool = typer.Option(
        False, "--debug", help="Show the traceback of a failure (also after the command)."
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bars (also after the command)."),
    _version: bool = typer.Option(
        False,
        "--version",
        callback=_show_version,
        is_eager=True,
        help="Print the dataset-devkit version and exit.",
    ),
) -> None:
    """Build, verify, publish, ship and read immutable ML datasets."""
    state.debug = state.debug or debug
    state.quiet = state.quiet or quiet


def new_app(modules: Iterable[str] = COMMAND_MODULES) -> typer.Typer:
    """The root Typer app with the commands of *modules* (keys of :data:`COMMAND_MODULES`);
    by default every command."""
    app = typer.Typer(
        name="dataset-devkit",
        help="Build, verify, publish, ship and read immutable ML datasets.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=True,
    )
    app.callback()(_root)
    for name in modules:
        importlib.import_module(f"dataset_devkit.cli.{name}").register(app)
    return app


@functools.cache
def full_command() -> Any:
    """The Click command tree of every command, built once, with help metavars made
    readable (what ``dataset-devkit --help`` shows). Typed ``Any``: Typer vendors Click,
    and its command classes are not public."""
    return tidy_help(typer.main.get_command(new_app()))


def command_for(args: Sequence[str]) -> Any:
    """The command tree a run with *args* needs: only the module of the command named
    first, no command module for ``--version`` alone, or every command (no command named,
    an unknown one, shell completion)."""
    named = next((arg for arg in args if not arg.startswith("-")), None)
    if COMPLETION_VARIABLE in os.environ:
        return full_command()
    if named is None and "--version" in args and "--help" not in args:
        modules: list[str] = []
    elif named in _MODULE_OF:
        modules = [_MODULE_OF[named]]
    else:
        return full_command()
    return tidy_help(typer.main.get_command(new_app(modules)))


def _global_flags_first(args: list[str]) -> list[str]:
    """Move ``--debug``/``--quiet`` written after the subcommand to the front.

    Users add ``--debug`` to the end of a failing command line; Click only knows root
    options before the subcommand. Arguments after ``--`` are left alone.
    """
    end = args.index("--") if "--" in args else len(args)
    flags = [a for a in args[:end] if a in GLOBAL_FLAGS]
    rest = [a for a in args[:end] if a not in GLOBAL_FLAGS]
    return [*flags, *rest, *args[end:]]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI and map devkit errors to exit code 1 with one clear message."""
    args = _global_flags_first(list(sys.argv[1:] if argv is None else argv))
    end = args.index("--") if "--" in args else len(args)
    state.debug = "--debug" in args[:end]
    state.quiet = "--quiet" in args[:end]
    state.json = "--json" in args[:end]
    state.kind = state.root = None
    command = command_for(args)
    try:
        code = command.main(args=args, prog_name="dataset-devkit", standalone_mode=False)
    except _ClickException as exc:  # usage errors: Click's own message, one line, exit 2
        exit_code = int(getattr(exc, "exit_code", 2))
        message = _usage_line(exc, args, command)
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        err.print(Text.assemble(("error: ", "bold red"), message))
        if state.json:
            write_failure_safely(message, exit_code)
        sys.exit(exit_code)
    except DevkitError as exc:
        _fail(str(exc), getattr(exc, "issues", ()))
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            raise
        # A full disk, a read-only filesystem or a permission the user lacks is a fact
        # about the machine, not a bug: one line naming the file, like any devkit error.
        where = f": {exc.filename}" if exc.filename else ""
        _fail(f"{exc.strerror or exc}{where}", ())
    except KeyboardInterrupt:
        _interrupted()
    if code == 130:  # typer turns Ctrl-C inside a command into Exit(130)
        _interrupted()
    sys.exit(code if isinstance(code, int) else 0)


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


def _command_path(args: list[str], command: Any) -> str:
    """``dataset-devkit store sample``: the program and the command words *args* start with."""
    words, node = ["dataset-devkit"], command
    for arg in args:
        sub = (getattr(node, "commands", None) or {}).get(arg)
        if sub is None:
            if arg.startswith("-"):
                continue  # a root option before the command (--debug)
            break
        words.append(arg)
        node = sub
    return " ".join(words)


def _usage_line(exc: Exception, args: list[str], command: Any) -> str:
    """Click's message for a usage error on one line, with the help to read."""
    text = getattr(exc, "format_message", exc.__str__)()
    text = " ".join(str(text).split())  # Click wraps some messages over lines
    return f"{text} (see: {_command_path(args, command)} --help)"


def _interrupted() -> NoReturn:
    Console(stderr=True, highlight=False).print("interrupted", style="bold red")
    if state.json:
        write_failure_safely("interrupted", 130)
    sys.exit(130)


def _fail(message: str, issues: Sequence[object]) -> NoReturn:
    if state.debug:
        traceback.print_exc()
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    summary = message.split("\n", 1)[0]
    # With --json the issues are in the report: stderr keeps the one summary line.
    err.print(Text.assemble(("error: ", "bold red"), summary if state.json else message))
    if state.json:
        write_failure_safely(summary, 1, issues)
    sys.exit(1)
