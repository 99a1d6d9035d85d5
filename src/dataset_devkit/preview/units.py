"""Human-readable numbers for captions and tables."""

from __future__ import annotations

__all__ = ["human_bytes"]


def human_bytes(size: float) -> str:
    """``1536`` → ``"1.5 KiB"``; binary units, as the release limit (4 GiB) is stated."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # unreachable; keeps mypy sure of the return
