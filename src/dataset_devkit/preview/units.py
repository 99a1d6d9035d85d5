"""Human-readable numbers for captions and tables: the toolkit's one size formatter."""

from __future__ import annotations

from dataset_devkit.integrity.numbers import format_size as human_bytes

__all__ = ["human_bytes"]
