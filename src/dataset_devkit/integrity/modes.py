"""Who may read a published tree: the owner (default), the owner's group, or everyone.

A published tree is read-only for everyone who can read it. Owner-only (files 0400,
directories 0500) is the default because a dataset is often built under a service account
and exposing it is a decision; ``group`` or ``all`` opens it to a teammate or a training job
running under another UID without anyone running ``chmod`` by hand on a sealed tree.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

from dataset_devkit.errors import ConfigError

__all__ = [
    "READABLE_BY",
    "ReadableBy",
    "check_readable_by",
    "folder_mode",
    "sealed_modes",
]

ReadableBy: TypeAlias = Literal["owner", "group", "all"]

#: The choices, in order of who may read.
READABLE_BY: Final[tuple[str, ...]] = get_args(ReadableBy)

_SEALED: Final = {"owner": (0o400, 0o500), "group": (0o440, 0o550), "all": (0o444, 0o555)}
_FOLDER: Final = {"owner": 0o700, "group": 0o750, "all": 0o755}


def check_readable_by(value: object) -> ReadableBy:
    """*value* if it is one of :data:`READABLE_BY`, else a :class:`ConfigError` naming it."""
    if not isinstance(value, str) or value not in _SEALED:
        raise ConfigError(
            f"readable_by must be one of {', '.join(READABLE_BY)}, found {value!r}",
            key="readable_by",
        )
    return value  # type: ignore[return-value]  # checked against the literal's values


def sealed_modes(readable_by: ReadableBy) -> tuple[int, int]:
    """``(file mode, directory mode)`` of a sealed, read-only published tree."""
    return _SEALED[readable_by]


def folder_mode(readable_by: ReadableBy) -> int:
    """Mode of a writable folder that holds published output (a release directory)."""
    return _FOLDER[readable_by]
