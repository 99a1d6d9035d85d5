"""Demo step: build a tiny stereo set from generated renders, read it, draw a contact sheet."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from dataset_devkit.demo.report import DemoReport
from dataset_devkit.stereo import (
    StereoDataset,
    build_stereo_dataset,
    make_sample_source,
    validate_stereo,
)

__all__ = ["run"]

# Anchor colours of a perceptual ramp (dark blue -> teal -> yellow), near is dark.
_RAMP = np.array([[48, 18, 59], [40, 120, 190], [30, 190, 150], [160, 220, 60], [250, 240, 30]])


def depth_colormap(depth: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
    """Colour valid depth by its rank within the frame's range; invalid (0) pixels are black."""
    valid = depth > 0
    out = np.zeros((*depth.shape, 3), dtype=np.uint8)
    if not valid.any():
        return out
    low, high = float(depth[valid].min()), float(depth[valid].max())
    scaled = (depth[valid] - low) / max(high - low, 1e-6) * (len(_RAMP) - 1)
    for channel in range(3):
        out[..., channel][valid] = np.interp(
            scaled, np.arange(len(_RAMP)), _RAMP[:, channel]
        ).astype(np.uint8)
    return out


def contact_sheet(dataset: StereoDataset, sample: int, path: Path) -> list[int]:
    """Write a PNG: one row per frame (0, middle, last), columns left, right, depth."""
    from PIL import Image

    total = dataset.rows[sample].num_frames
    frames = [0, (total - 1) // 2, total - 1]
    item = dataset.read(sample, frames)
    if item.depth is None:  # the demo builds its set with depth
        raise RuntimeError("the demo dataset has no depth")
    rows = [
        np.concatenate([item.left[k], item.right[k], depth_colormap(item.depth["left"][k])], 1)
        for k in range(len(frames))
    ]
    Image.fromarray(np.concatenate(rows, 0)).save(path, format="PNG", optimize=False)
    return frames


def run(out: Path) -> DemoReport:
    """Build, validate and read a two-pair stereo dataset under *out*."""
    out.mkdir(parents=True, exist_ok=True)
    source = make_sample_source(out / "render-export", pairs=2, frames=13, width=128, height=72)
    result = build_stereo_dataset(source, out / "GenVR-duo-20261023")
    report = validate_stereo(result.root, with_depth=True)
    report.raise_for_issues()
    dataset = StereoDataset(result.root, use_depth=True)
    sheet = out / "contact_sheet.png"
    frames = contact_sheet(dataset, 0, sheet)
    dataset.close()
    base_only = StereoDataset(result.root)  # the default index never needs depth
    return DemoReport(
        title="stereo video dataset (GenVR-duo layout)",
        lines=[
            ("source", f"{source} (generated H.264 renders, UE cameras, float depth)"),
            ("built", f"{result.root}: {result.pairs} pairs, {result.files} files"),
            ("validated", f"{report.pairs} pairs, depth checked, 0 issues"),
            ("default index", f"{base_only.index}: {len(base_only)} samples, use_depth=false"),
            ("contact sheet", f"{sheet} (frames {frames}: left, right, depth)"),
        ],
        root_sha256={"stereo": result.root_sha256},
        try_next=[
            ("validate", str(result.root)),
            ("stereo", "validate", str(result.root), "--full"),
        ],
    )
