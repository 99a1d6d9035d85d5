"""What the English and the Chinese release README share: languages, sizes, unpack flags."""

from __future__ import annotations

from typing import Final, Literal

from rich.filesize import decimal

__all__ = ["README_LANGS", "ReadmeLang", "approx", "flag"]

ReadmeLang = Literal["en", "zh"]
README_LANGS: Final = ("en", "zh")


def approx(size: int) -> str:
    """A decimal size a person reads at a glance: ``146.3 GB``, ``5.0 kB``, ``12 bytes``."""
    return decimal(size)


def flag(family: str) -> str:
    """The ``unpack.py`` option that selects *family*."""
    return f"--{family}" if family in ("base", "depth") else f"--family {family}"
