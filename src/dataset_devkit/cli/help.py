"""Readable ``--help``: metavars like ``PATH``/``INTEGER`` instead of ``<Path>``/``<int>``.

Typer prints a parameter's Python type (``<bool>``, ``<list[str]>``) where Click tools
print a metavar; users read ``--family NAME``, and flags take no value to describe. Typer
also keeps the line breaks of a docstring's later paragraphs, so at 80 columns a help text
broke mid-sentence; paragraphs are joined into one line each and the terminal wraps them.
The walk runs once over the built Click tree, so no command has to remember it.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer

__all__ = ["tidy_help", "unwrap_paragraphs", "walk_commands"]

#: Typer's type labels and the metavar shown instead.
_METAVARS = {"Path": "PATH", "int": "INTEGER", "float": "NUMBER", "str": "TEXT"}


# Click objects are typed Any and matched by attributes: Typer >= 0.2x vendors its own
# Click, older Typer uses the click package, and this walk must serve both.


def walk_commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command of the tree with its path of names, groups included, sorted."""
    found = [(path, command)]
    commands = getattr(command, "commands", None) or {}
    for name in sorted(commands):
        found.extend(walk_commands(commands[name], (*path, name)))
    return found


def _metavar(param: Any, ctx: Any) -> str:
    display = getattr(param, "display_type", None)
    label = str(display(ctx) if callable(display) else param.type.name).strip("<>")
    if label.startswith("list[") and label.endswith("]"):
        label = label[5:-1]
    if "|" in label:  # choices are typed as they are: owner|group|all
        return label
    return _METAVARS.get(label, label.upper())


def unwrap_paragraphs(text: str) -> str:
    """Each paragraph of *text* on one line (list items and indented lines kept apart)."""
    paragraphs = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        lines = paragraph.split("\n")
        joined = [lines[0]]
        for line in lines[1:]:
            if line.startswith(("-", "*", " ", "\b")) or joined[-1].startswith("\b"):
                joined.append(line)
            else:
                joined[-1] += " " + line
        paragraphs.append("\n".join(joined))
    return "\n\n".join(paragraphs)


def tidy_help(root: Any) -> Any:
    """Give every parameter of the tree a readable metavar; return *root*."""
    for path, command in walk_commands(root):
        if command.help:
            command.help = unwrap_paragraphs(command.help)
        ctx = typer.Context(command, info_name=" ".join(path) or "dataset-devkit")
        for param in command.get_params(ctx):
            if param.param_type_name == "argument":
                label = _metavar(param, ctx)
                if param.metavar is None:
                    param.metavar = (param.name or "value").upper()
                if hasattr(param, "display_type_rich"):  # Typer's type column: PATH, not <Path>
                    param.display_type_rich = lambda ctx=None, label=label: label
                continue
            if param.metavar is not None:
                continue
            if getattr(param, "is_flag", False) or getattr(param, "count", False):
                param.metavar = ""  # a flag takes no value
            else:
                param.metavar = _metavar(param, ctx)
    return root
