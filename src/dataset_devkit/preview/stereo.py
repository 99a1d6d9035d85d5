"""A stereo (GenVR-duo) dataset: left | right | depth per pair, camera path, depth histogram.

Depth uses one scale in metres for every pair and frame (0 .. a rounded high percentile of
all drawn depth), so rows can be compared; invalid depth (0) is drawn in magenta.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib import colormaps

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.preview.figures import figure, save
from dataset_devkit.preview.page import Section, Text
from dataset_devkit.stereo import StereoDataset, StereoSample

__all__ = ["render_stereo"]

INVALID_COLOUR = "magenta"


def _poses(root: Path, camera: str) -> npt.NDArray[np.float64]:
    path = root / camera
    try:
        poses = np.asarray(json.loads(path.read_text("utf-8"))["camera_to_world"], np.float64)
    except (OSError, ValueError, KeyError) as exc:
        raise FormatError(f"expected camera_to_world ({exc})", path=path) from None
    return poses[None] if poses.ndim == 2 else poses


def _depth_scale(samples: list[StereoSample]) -> float:
    valid = [d[d > 0] for s in samples if s.depth for d in s.depth.values()]
    values = np.concatenate(valid) if valid else np.zeros(0, np.float32)
    if values.size == 0:
        return 1.0
    high = float(np.percentile(values, 99))
    step = 10 ** math.floor(math.log10(high)) if high > 0 else 1.0
    return max(step, math.ceil(high / step) * step)


def _frames(num_frames: int) -> list[int]:
    return sorted({0, num_frames // 2, num_frames - 1})


def _open(root: Path) -> StereoDataset:
    if (root / "genvr_i2s_with_depth.jsonl").is_file():
        return StereoDataset(root, index="genvr_i2s_with_depth.jsonl", use_depth=True)
    return StereoDataset(root)


def render_stereo(
    root: Path, out: Path, *, pairs: int, seed: int, progress: OnProgress | None = None
) -> list[Section]:
    """One section per sampled pair (*pairs* of them, fixed seed).

    The sampled pairs are all read before any is drawn: the depth scale is one for all.
    """
    ds = _open(root)
    try:
        total = len(ds)
        picked = sorted(
            int(i)
            for i in np.random.default_rng(seed).choice(total, min(pairs, total), replace=False)
        )
        samples = []
        for i in picked:
            samples.append(ds.read(i, _frames(ds.rows[i].num_frames)))
            update = ProgressUpdate("read pairs", items=1, total_items=len(picked), unit="pairs")
            report(progress, update)
        vmax = _depth_scale(samples)
        intro = Section("Stereo pairs")
        intro.items.append(
            Text(
                f"{len(picked)} of {total} pairs (fixed seed {seed}); depth in metres on one "
                f"scale 0–{vmax:g} m, invalid (0) in {INVALID_COLOUR}"
                + ("" if ds.use_depth else "; this index has no depth")
            )
        )
        sections = [intro]
        for n, (i, sample) in enumerate(zip(picked, samples, strict=True)):
            section = Section(f"Pair {i}: {sample.id}")
            section.items.append(_views(sample, out, n, vmax))
            section.items.append(_stats(root, ds.rows[i], sample, out, n, vmax))
            sections.append(section)
            update = ProgressUpdate("pairs", items=1, total_items=len(picked), unit="pairs")
            report(progress, update)
        return sections
    finally:
        ds.close()


def _views(sample: StereoSample, out: Path, n: int, vmax: float) -> Any:
    cmap = colormaps["viridis"].with_extremes(bad=INVALID_COLOUR)
    cols = 3 if sample.depth else 2
    rows = len(sample.frames)
    height, width = sample.left.shape[1:3]
    panel = 3.2
    with figure(panel * cols + 0.8, panel * height / width * rows + 0.6) as fig:
        grid = fig.add_gridspec(rows, cols + 1, width_ratios=[1] * cols + [0.05])
        image = None
        for r, frame in enumerate(sample.frames):
            views: list[tuple[str, Any]] = [("left", sample.left[r]), ("right", sample.right[r])]
            if sample.depth:
                views.append(("depth (left)", sample.depth["left"][r]))
            for c, (label, data) in enumerate(views):
                ax = fig.add_subplot(grid[r, c])
                if label.startswith("depth"):
                    masked = np.where(data == 0, np.nan, data)  # NaN is drawn as 'bad'
                    image = ax.imshow(masked, cmap=cmap, vmin=0, vmax=vmax)
                else:
                    ax.imshow(data)
                ax.set_xticks([])
                ax.set_yticks([])
                ax.set_title(f"{label} · frame {frame}", fontsize=8)
        if image is not None:
            bar = fig.colorbar(image, cax=fig.add_subplot(grid[:, cols]))
            bar.set_label("depth (m)")
        fig.suptitle(sample.id, fontsize=9)
        return save(fig, out, f"stereo_pair{n:03d}_views.png", f"{sample.id}: left | right | depth")


def _stats(root: Path, row: Any, sample: StereoSample, out: Path, n: int, vmax: float) -> Any:
    with figure(9, 3.4) as fig:
        ax = fig.add_subplot(1, 2, 1)
        for eye, camera in (("left", row.left_camera), ("right", row.right_camera)):
            t = _poses(root, camera)[:, :3, 3]
            # OpenCV world: y points down, so x (right) and z (forward) span the ground plane.
            ax.plot(t[:, 0], t[:, 2], marker=".", label=f"{eye} eye")
            ax.plot(t[0, 0], t[0, 2], "o", color="black")
            ax.plot(t[-1, 0], t[-1, 2], "x", color="black")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("z (m)")
        ax.set_title("camera_to_world from above (o start, x end)")
        ax.legend(fontsize=7)
        hist = fig.add_subplot(1, 2, 2)
        if sample.depth:
            values = np.concatenate([d.ravel() for d in sample.depth.values()])
            invalid = int((values == 0).sum())
            hist.hist(values[values > 0], bins=50, range=(0, vmax), color="#1f77b4")
            hist.set_title(f"depth at frames {list(sample.frames)} ({invalid} invalid px)")
        else:
            hist.set_title("no depth in this index")
        hist.set_xlabel("depth (m)")
        hist.set_ylabel("pixels")
        fig.tight_layout()
        return save(fig, out, f"stereo_pair{n:03d}_stats.png", f"{sample.id}: path and depth")
