"""Human-readable numbers for captions and tables."""

from __future__ import annotations

__all__ = ["byte_unit", "human_bytes"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(size: float) -> str:
    """``1536`` → ``"1.5 KiB"``; binary units, as the release limit (4 GiB) is stated."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # unreachable; keeps mypy sure of the return


def byte_unit(largest: float) -> tuple[str, int]:
    """The binary unit an axis of byte sizes up to *largest* reads best in, and its size:
    ``4 GiB`` -> ``("GiB", 1 << 30)``, so ticks read 1, 2, 3, 4 and not 4294967296."""
    power = 0
    while power < len(_UNITS) - 1 and largest >= 1024 ** (power + 1):
        power += 1
    return _UNITS[power], 1024**power
