"""The one JSON report schema of every command, and the run's global output state.

Every command with ``--json`` prints exactly one object on stdout::

    {"ok": bool, "kind": str | null, "root": str | null, "root_sha256": str | null,
     "issues": [{"path": str, "kind": str, "detail": str}], ...command-specific keys}

and a failure prints the same object with ``"ok": false``, ``"exit_code"`` and ``"error"``
(the one line stderr also shows). ``docs/cli.md`` documents it; the CLI tests check every
command's failures against :data:`REPORT_SCHEMA`.

An issue's ``path`` is relative to the report's ``root`` (the file inside the tree), or
``""`` for a problem about no single file; its ``kind`` is one of the integrity core's
:class:`~dataset_devkit.integrity.IssueKind` values, or ``invalid`` for everything else
(a format, a count, a hash a system checks itself). Systems report issues as
:class:`~dataset_devkit.integrity.Issue` values or as lines that start with the file they are
about (``PATH: detail``, ``PATH at $.field: detail``, ``package PATH detail``);
:func:`issue_record` turns either into the one shape.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import typer

from dataset_devkit.integrity import IssueKind

__all__ = [
    "ISSUE_KINDS",
    "REPORT_SCHEMA",
    "RunState",
    "emit_report",
    "fail_with_report",
    "failure_report",
    "issue_record",
    "state",
    "target",
    "write_failure_safely",
]


@dataclass
class RunState:
    """Global options of this run, and what the running command works on (for errors)."""

    debug: bool = False
    quiet: bool = False
    json: bool = False
    kind: str | None = None
    root: str | None = None


_ISSUE_KINDS = frozenset(kind.value for kind in IssueKind)
#: Every ``kind`` an issue of a report may have.
ISSUE_KINDS: tuple[str, ...] = (*sorted(_ISSUE_KINDS), "invalid")
#: A line about a release package or member that names it after a noun.
_NAMED_AFTER = re.compile(r"(?:package|member) '?(?P<path>[^'\s:]+)'?:? (?P<detail>.+)", re.S)

#: The state of the one command a process runs.
state = RunState()

#: The report schema as JSON Schema (draft 2020-12), checked by the CLI tests.
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["ok", "kind", "root", "root_sha256", "issues"],
    "properties": {
        "ok": {"type": "boolean"},
        "kind": {"type": ["string", "null"]},
        "root": {"type": ["string", "null"]},
        "root_sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path", "kind", "detail"],
                "additionalProperties": False,
                "properties": {
                    "path": {"type": "string"},
                    "kind": {"enum": list(ISSUE_KINDS)},
                    "detail": {"type": "string"},
                },
            },
        },
        "exit_code": {"type": "integer"},
        "error": {"type": "string"},
    },
}


def target(kind: str | None, root: Path | str | None) -> None:
    """Record what the command works on, so a failure report can name it."""
    state.kind = kind
    state.root = None if root is None else str(root)


def _inside(path: str, root: str | None) -> str:
    """*path* relative to *root* when it lies inside it (as given, or absolute)."""
    if not root or not path:
        return path
    for base in dict.fromkeys([root.rstrip("/"), str(Path(root).absolute())]):
        if path == base:
            return ""
        if path.startswith(base + "/"):
            return path[len(base) + 1 :]
    return path


def _split(text: str) -> tuple[str, str, str]:
    """``(path, kind, detail)`` of one issue line (see the module docstring)."""
    head, sep, detail = text.partition(": ")
    path, at, field = head.partition(" at ")
    # A head is a path when it reads like one: one word with a folder or a file suffix
    # ("reader: ..." names a check, not a file).
    if sep and not any(ch.isspace() for ch in path) and ("/" in path or "." in path):
        if at:  # a format error's "PATH at $.field: detail"
            return path, "invalid", f"at {field}: {detail}"
        kind, sep, rest = detail.partition(": ")
        if sep and kind in _ISSUE_KINDS:  # an integrity Issue's line: "path: kind: detail"
            return path, kind, rest
        return path, "invalid", detail
    named = _NAMED_AFTER.fullmatch(text)
    if named:
        return named["path"], "invalid", named["detail"]
    return "", "invalid", text


def issue_record(issue: object, root: str | None = None) -> dict[str, str]:
    """One ``{"path", "kind", "detail"}`` from a structured issue or an issue line, its
    path relative to the report's *root*."""
    to_json = getattr(issue, "to_json", None)
    if callable(to_json):
        data = to_json()
        if isinstance(data, Mapping) and {"path", "kind", "detail"} <= set(data):
            kind = str(data["kind"])
            return {
                "path": _inside(str(data["path"]), root),
                "kind": kind if kind in _ISSUE_KINDS else "invalid",
                "detail": str(data["detail"]),
            }
    path, kind, detail = _split(str(issue))
    return {"path": _inside(path, root), "kind": kind, "detail": detail}


def emit_report(
    *,
    ok: bool,
    root: Path | str | None = None,
    root_sha256: str | None = None,
    issues: Iterable[object] = (),
    kind: str | None = None,
    exit_code: int | None = None,
    error: str | None = None,
    **extra: Any,
) -> None:
    """Print the report of a finished command as one JSON object on stdout.

    A failed check goes through :func:`fail_with_report` instead.
    """
    shown = str(root) if root is not None else state.root
    report: dict[str, Any] = {
        "ok": ok,
        "kind": kind if kind is not None else state.kind,
        "root": shown,
        "root_sha256": root_sha256,
        "issues": [issue_record(issue, shown) for issue in issues],
    }
    if exit_code is not None:
        report["exit_code"] = exit_code
    if error is not None:
        report["error"] = error
    report.update(extra)
    _write(report)


def fail_with_report(failure: Exception, **report: Any) -> NoReturn:
    """End a command whose check failed: the report (``ok`` false, its issues and counts)
    with ``exit_code`` 1 and ``error``, the summary line stderr shows too; exit 1.

    *failure* is the error the check raises (its first line is the summary; an
    :class:`~dataset_devkit.errors.IntegrityError` also carries the issues, which the
    report lists when *report* names none).
    """
    summary = str(getattr(failure, "summary", "") or str(failure).split("\n", 1)[0])
    report.setdefault("issues", getattr(failure, "issues", ()))
    emit_report(ok=False, exit_code=1, error=summary, **report)
    with contextlib.suppress(OSError, ValueError):  # stderr gone too: the exit code says it
        sys.stderr.write(f"error: {summary}\n")
    raise typer.Exit(1)


def failure_report(message: str, exit_code: int, issues: Iterable[object] = ()) -> None:
    """Print the JSON object of a failed command (stderr keeps its one line)."""
    _write(
        {
            "ok": False,
            "kind": state.kind,
            "root": state.root,
            "root_sha256": None,
            "issues": [issue_record(issue, state.root) for issue in issues],
            "exit_code": exit_code,
            "error": message,
        }
    )


def _write(report: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def write_failure_safely(message: str, exit_code: int, issues: Iterable[object] = ()) -> None:
    """:func:`failure_report`, unless stdout itself is what failed (a full disk, a closed pipe).

    The one line on stderr is then the whole report; a second failure must not turn it into
    a traceback.
    """
    with contextlib.suppress(OSError, ValueError):
        failure_report(message, exit_code, issues)
