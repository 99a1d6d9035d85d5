"""Helpers for stereo tests that change copies of a built dataset."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import av
import av.video.reformatter
import numpy as np


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


def decode_all(path: Path) -> np.ndarray[Any, Any]:
    """Every frame of a video as ``uint8 [T, H, W, 3]``, decoded front to back by plain PyAV.

    Through a scaler of this call, not ``frame.to_ndarray(format=...)``: PyAV 19 keeps that
    one per thread for the life of the thread, and a test process that forks from another
    thread afterwards would hang freeing it in the child.
    """
    scaler = av.video.reformatter.VideoReformatter()
    with av.open(str(path)) as container:
        return np.stack(
            [scaler.reformat(f, format="rgb24").to_ndarray() for f in container.decode(video=0)]
        )
