"""Draw any dataset tree the devkit writes to PNGs and one self-contained ``index.html``.

``preview(path, out)`` detects the kind of tree from its marker files
(:func:`detect_kind`) and draws it with matplotlib and Pillow, deterministically: the same
tree gives the same PNG bytes. See ``docs/preview.md``.
"""

from __future__ import annotations

from dataset_devkit.preview.api import preview
from dataset_devkit.preview.kinds import Kind, detect_kind

__all__ = ["Kind", "detect_kind", "preview"]
