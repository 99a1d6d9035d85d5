"""Numbers as people write and read them: sizes in bytes, and counts of things.

Every size a user types (``--shard-bytes 128MiB``, ``--package-limit 64KiB``,
``--part-size 32MiB``) goes through :func:`parse_size`, and every size the toolkit prints
(counts after a build, progress bars, preview captions) through :func:`format_size`, so
the same number always reads the same way. Binary units, as the release limit (4 GiB) and
the shard sizes are stated. A count of things is :func:`count` (``1 package``,
``2 packages``).
"""

from __future__ import annotations

import re
from typing import Final

from dataset_devkit.errors import ConfigError

__all__ = ["count", "format_size", "parse_size"]

#: Plurals that are not the noun with an "s".
_PLURALS: Final = {"entry": "entries", "family": "families", "index": "indexes"}

_SIZE: Final = re.compile(r"(\d+)\s*(|b|kb|mb|gb|tb|kib|mib|gib|tib)", re.IGNORECASE)
_UNITS: Final = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}


def parse_size(text: object, *, key: str = "size") -> int:
    """``134217728``, ``128MiB`` or ``100MB`` as a number of bytes (an ``int`` is bytes; a
    setting may hold either).

    Raises
    ------
    ConfigError
        *text* is not a whole number with an optional unit; the error names *key*.
    """
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    found = _SIZE.fullmatch(text.strip()) if isinstance(text, str) else None
    if found is None:
        raise ConfigError(
            f"{key}: expected a size such as 134217728, 128MiB or 100MB, found {text!r}", key=key
        )
    return int(found.group(1)) * _UNITS[found.group(2).lower()]


def format_size(size: float) -> str:
    """``1536`` → ``"1.5 KiB"``; bytes below 1 KiB as a count (``"512 B"``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # unreachable; keeps mypy sure of the return


def count(number: int, noun: str) -> str:
    """``"1 package"``, ``"2 packages"``, ``"0 families"``: a number and its noun, agreeing."""
    if number == 1:
        return f"1 {noun}"
    return f"{number} {_PLURALS.get(noun, noun + 's')}"
