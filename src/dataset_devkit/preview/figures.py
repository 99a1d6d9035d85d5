"""Deterministic matplotlib figures: same data → same PNG bytes.

matplotlib stamps a ``Software`` version into PNG metadata and may pick a different font on
another machine; both would change bytes between runs or hosts. We draw with the Agg canvas
directly (no pyplot global state), force DejaVu Sans (shipped inside matplotlib), a fixed
DPI and hash salt, and drop the metadata.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib
from cycler import cycler
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage
from PIL import ImageFont

from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.preview.page import Image

__all__ = ["DPI", "RC", "figure", "font", "save", "save_image"]

#: Dots per inch of every PNG; sizes in inches times this give the pixel sizes tests expect.
DPI = 100

#: rcParams that make rendering independent of the user's matplotlibrc and the host's fonts.
RC: dict[Any, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "svg.hashsalt": "dataset-devkit-preview",
    "path.simplify": True,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "image.interpolation": "nearest",
    "image.resample": False,
    "axes.prop_cycle": cycler(
        color=["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
    ),
}


@contextmanager
def figure(width: float, height: float) -> Iterator[Figure]:
    """A fresh figure of ``width`` × ``height`` inches under the fixed rcParams."""
    with rc_context(RC):
        fig = Figure(figsize=(width, height), dpi=DPI)
        FigureCanvasAgg(fig)
        yield fig


def save(fig: Figure, out: Path, name: str, caption: str) -> Image:
    """Write *fig* as ``out/name`` with no metadata and return the page item for it."""
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with rc_context(RC), naming(path):
        fig.savefig(path, dpi=DPI, format="png", metadata={"Software": None})
    width, height = (round(v) for v in fig.get_size_inches() * DPI)
    return Image(src=name, caption=caption, width=width, height=height)


def font(size: int) -> ImageFont.FreeTypeFont:
    """DejaVu Sans at *size* pixels for Pillow drawings: the file inside matplotlib, so
    every host draws the same glyphs (as the figures do)."""
    path = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    return ImageFont.truetype(str(path), size)


def save_image(image: PILImage.Image, out: Path, name: str, caption: str) -> Image:
    """Write a Pillow drawing as ``out/name`` (Pillow writes no metadata unless asked)."""
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with naming(path):  # a full disk names the file
        image.save(path, format="PNG", compress_level=6)
    return Image(src=name, caption=caption, width=image.width, height=image.height)
