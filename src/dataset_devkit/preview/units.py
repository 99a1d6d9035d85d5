"""Human-readable numbers for captions and tables: the toolkit's one size formatter."""

from __future__ import annotations

from dataset_devkit.integrity.numbers import format_size as human_bytes

__all__ = ["byte_unit", "human_bytes"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def byte_unit(largest: float) -> tuple[str, int]:
    """The binary unit an axis of byte sizes up to *largest* reads best in, and its size:
    ``4 GiB`` -> ``("GiB", 1 << 30)``, so ticks read 1, 2, 3, 4 and not 4294967296."""
    power = 0
    while power < len(_UNITS) - 1 and largest >= 1024 ** (power + 1):
        power += 1
    return _UNITS[power], 1024**power
