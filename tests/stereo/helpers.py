"""Helpers for stereo tests that change copies of a built dataset."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def writable_copy(tree: Path, target: Path) -> Path:
    """Copy a (read-only, published) tree and make the copy writable."""
    shutil.copytree(tree, target)
    for dirpath, _dirs, files in os.walk(target):
        Path(dirpath).chmod(0o755)
        for name in files:
            (Path(dirpath) / name).chmod(0o644)
    return target


def remove_depth(root: Path) -> None:
    """Delete every depth-* directory, as a base-only install would lack them."""
    for path in sorted(root.rglob("depth-*")):
        shutil.rmtree(path)
