"""The one JSON report schema of every command, and the run's global output state.

Every command with ``--json`` prints exactly one object on stdout::

    {"ok": bool, "kind": str | null, "root": str | null, "root_sha256": str | null,
     "issues": [{"path": str, "kind": str, "detail": str}], ...command-specific keys}

and a failure prints the same object with ``"ok": false``, ``"exit_code"`` and ``"error"``
(the one line stderr also shows). ``docs/cli.md`` documents it; the CLI tests check every
command's output against :data:`REPORT_SCHEMA`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_devkit.integrity import IssueKind

__all__ = [
    "REPORT_SCHEMA",
    "RunState",
    "emit_report",
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
                    "kind": {"type": "string"},
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


def issue_record(issue: object, default_kind: str = "invalid") -> dict[str, str]:
    """One ``{"path", "kind", "detail"}`` from a structured issue or a ``path: detail`` line.

    Systems report issues as :class:`~dataset_devkit.integrity.Issue` values or as lines
    that start with the path they are about; a line whose head is not one word has no path.
    """
    to_json = getattr(issue, "to_json", None)
    if callable(to_json):
        data = to_json()
        if isinstance(data, Mapping) and {"path", "kind", "detail"} <= set(data):
            return {k: str(data[k]) for k in ("path", "kind", "detail")}
    text = str(issue)
    path, sep, detail = text.partition(": ")
    if not sep or not path or any(ch.isspace() for ch in path):
        return {"path": "", "kind": default_kind, "detail": text}
    kind, sep, rest = detail.partition(": ")
    if sep and kind in _ISSUE_KINDS:  # an integrity Issue's line: "path: kind: detail"
        return {"path": path, "kind": kind, "detail": rest}
    return {"path": path, "kind": default_kind, "detail": detail}


def emit_report(
    *,
    ok: bool,
    root: Path | str | None = None,
    root_sha256: str | None = None,
    issues: Iterable[object] = (),
    kind: str | None = None,
    issue_kind: str = "invalid",
    exit_code: int | None = None,
    **extra: Any,
) -> None:
    """Print the report of a finished command as one JSON object on stdout.

    A command that reports failures itself (``verify --json`` with differences) passes
    ``ok=False`` and the *exit_code* it is about to exit with.
    """
    report: dict[str, Any] = {
        "ok": ok,
        "kind": kind if kind is not None else state.kind,
        "root": str(root) if root is not None else state.root,
        "root_sha256": root_sha256,
        "issues": [issue_record(issue, issue_kind) for issue in issues],
    }
    if exit_code is not None:
        report["exit_code"] = exit_code
    report.update(extra)
    _write(report)


def failure_report(message: str, exit_code: int, issues: Iterable[object] = ()) -> None:
    """Print the JSON object of a failed command (stderr keeps its one line)."""
    _write(
        {
            "ok": False,
            "kind": state.kind,
            "root": state.root,
            "root_sha256": None,
            "issues": [issue_record(issue, "error") for issue in issues],
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
