"""Checks of library arguments, so a caller's mistake is a ConfigError naming the argument.

The library entry points (``build_evidence``, ``export_dataset``, ``Dataset``...) are called
from user code; a wrong type must not surface as a ``TypeError`` or ``AttributeError`` from
deep inside, possibly after output was started.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dataset_devkit.errors import (
    ConfigError,
    DestinationExistsError,
    MissingPathError,
    UnsafePathError,
)

__all__ = ["check_instance", "check_output_location", "check_workers"]


def check_workers(value: object, key: str = "workers") -> None:
    """``None`` or a positive int (a bool is not a count)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return
    raise ConfigError(f"{key} must be a positive int or None, found {value!r}", key=key)


def check_instance(value: object, kind: type[Any], key: str) -> None:
    """Refuse a *value* that is not a *kind* (a dict where a config record is expected)."""
    if not isinstance(value, kind):
        raise ConfigError(
            f"{key} must be a {kind.__name__}, found {type(value).__name__} {value!r}"[:300],
            key=key,
        )


def check_output_location(
    path: Path,
    key: str,
    *,
    allow_empty_dir: bool = False,
    apart_from: Iterable[Path] = (),
) -> None:
    """Refuse, before any work starts, an output that could only fail at the end.

    *path* must be absent (or, with *allow_empty_dir*, an empty directory), its parent an
    existing writable directory, and it must neither be nor contain nor sit inside any of
    *apart_from* (inputs that are read while the output is written).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not allow_empty_dir:
            raise DestinationExistsError(
                f"{path}: {key} already exists; it is written once and never overwritten"
            )
        if not stat.S_ISDIR(st.st_mode):  # a symlink too: never followed
            raise UnsafePathError(f"{key} must be absent or an empty real directory", path=path)
        with os.scandir(path) as entries:
            if any(entries):
                raise DestinationExistsError(f"{path}: {key} is not empty; nothing is overwritten")
    parent = path.parent
    if not parent.is_dir():
        raise MissingPathError(
            f"the folder that would hold {key} does not exist; create it first", path=parent
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{key}: cannot create {path}: {parent} is not writable", key=key)
    real = Path(os.path.realpath(path))
    for other in apart_from:
        real_other = Path(os.path.realpath(other))
        if real == real_other or real_other in real.parents or real in real_other.parents:
            raise ConfigError(
                f"{key} {path} overlaps the input {other}; write it to a separate folder",
                key=key,
            )
