"""Sizes a user types (``200GB``, ``128MiB``, ``134217728``) as bytes: one parser for all.

Options such as ``--part-size`` and settings such as a cache limit take the same spelling,
in decimal (``kb``, ``mb``, ``gb``, ``tb``: powers of 1000, as disks and clouds count) or
binary units (``kib`` ... ``tib``: powers of 1024), case-insensitive.
"""

from __future__ import annotations

import re
from typing import Final

from dataset_devkit.errors import ConfigError

__all__ = ["BYTE_SIZE_EXAMPLES", "format_byte_size", "parse_byte_size"]

#: How the error messages show what is accepted.
BYTE_SIZE_EXAMPLES: Final = "bytes such as 134217728, 128MiB or 200GB"

_SIZE = re.compile(r"(\d+)\s*(|b|kb|mb|gb|tb|kib|mib|gib|tib)", re.IGNORECASE)
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


def parse_byte_size(value: object, name: str) -> int:
    """*value* (an int, or a str such as ``"200GB"``) as a number of bytes.

    Raises :class:`ConfigError` naming *name* for anything else (a bool, a negative
    number, an unknown unit).
    """
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        found = _SIZE.fullmatch(value.strip())
        if found is not None:
            return int(found.group(1)) * _UNITS[found.group(2).lower()]
    raise ConfigError(f"{name}: expected {BYTE_SIZE_EXAMPLES}, found {value!r}", key=name)


def format_byte_size(size: int) -> str:
    """A short human spelling of *size* (``1.5 GB``), for messages and tables."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
