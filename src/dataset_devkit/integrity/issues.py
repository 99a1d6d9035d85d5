"""One verification finding: which path, what kind of problem, and the detail."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Issue", "IssueKind"]


class IssueKind(enum.StrEnum):
    """The kinds of difference a verification can report."""

    MISSING = "missing"
    EXTRA = "extra"
    CHANGED = "changed"
    LINKED = "linked"
    NOT_REGULAR = "not-regular"
    RACED = "raced"
    UNSAFE = "unsafe"
    MANIFEST = "manifest"


@dataclass(frozen=True, slots=True, order=True)
class Issue:
    """A single finding; sorts by path, then kind, so reports are deterministic."""

    path: str
    kind: IssueKind
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.kind.value}: {self.detail}"

    def to_json(self) -> dict[str, str]:
        """A plain mapping for ``--json`` output."""
        return {"path": self.path, "kind": self.kind.value, "detail": self.detail}
