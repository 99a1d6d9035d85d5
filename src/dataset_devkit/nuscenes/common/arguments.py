"""Checks of library arguments, so a caller's mistake is a ConfigError naming the argument.

The library entry points (``build_evidence``, ``export_dataset``, ``Dataset``...) are called
from user code; a wrong type must not surface as a ``TypeError`` or ``AttributeError`` from
deep inside, possibly after output was started.
"""

from __future__ import annotations

from typing import Any

from dataset_devkit.errors import ConfigError

__all__ = ["check_instance", "check_workers"]


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
