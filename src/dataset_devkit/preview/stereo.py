"""A stereo (GenVR-duo) dataset: left | right | depth per pair, camera path and heading,
depth histogram.

Depth uses one scale in metres for every pair and frame (0 .. a rounded high percentile of
all drawn depth), so rows can be compared; invalid depth (0) is drawn in magenta. The
camera path seen from above shows where the camera looks (arrows of its optical axis) and
a plot of its heading over the frames: a pan in place moves no position at all.
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
from dataset_devkit.stereo import DepthNotInstalledError, StereoDataset, StereoSample

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
    """The with-depth index when depth is installed, else the default one (a release
    restored without its depth family still shows its frames)."""
    if (root / "genvr_i2s_with_depth.jsonl").is_file():
        try:
            return StereoDataset(root, index="genvr_i2s_with_depth.jsonl", use_depth=True)
        except DepthNotInstalledError:
            pass
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


#: Heading arrows drawn along a camera path, at most.
HEADING_ARROWS = 12


def heading_degrees(poses: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The heading of each ``camera_to_world`` pose seen from above, in degrees: the angle of
    its optical axis (OpenCV +z) in the ground plane, from world +z towards +x, unwrapped
    so that a pan through 180° does not jump."""
    forward = poses[:, :3, 2]
    return np.degrees(np.unwrap(np.arctan2(forward[:, 0], forward[:, 2])))


def _stats(root: Path, row: Any, sample: StereoSample, out: Path, n: int, vmax: float) -> Any:
    with figure(13.5, 3.4) as fig:
        ax = fig.add_subplot(1, 3, 1)
        headings = {}
        for eye, camera in (("left", row.left_camera), ("right", row.right_camera)):
            poses = _poses(root, camera)
            t = poses[:, :3, 3]
            # OpenCV world: y points down, so x (right) and z (forward) span the ground plane.
            (line,) = ax.plot(t[:, 0], t[:, 2], marker=".", label=f"{eye} eye")
            ax.plot(t[0, 0], t[0, 2], "o", color="black")
            ax.plot(t[-1, 0], t[-1, 2], "x", color="black")
            headings[eye] = heading_degrees(poses)
            if eye == "left":
                _heading_arrows(ax, poses, line.get_color())
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("z (m)")
        ax.set_title("camera_to_world from above (o start, x end)", fontsize=8)
        ax.legend(fontsize=7)
        turn = fig.add_subplot(1, 3, 2)
        for eye, degrees in headings.items():
            turn.plot(np.arange(len(degrees)), degrees, label=f"{eye} eye")
        left = headings["left"]
        turn.set_title(f"heading turns {left[-1] - left[0]:+.0f}° over the clip", fontsize=8)
        turn.set_xlabel("frame")
        turn.set_ylabel("heading (°, from +z towards +x)")
        turn.legend(fontsize=7)
        hist = fig.add_subplot(1, 3, 3)
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
        return save(
            fig, out, f"stereo_pair{n:03d}_stats.png", f"{sample.id}: path, heading and depth"
        )


def _heading_arrows(ax: Any, poses: npt.NDArray[np.float64], colour: Any) -> None:
    """Arrows of the optical axis along the path, long enough to see on its scale (a pan
    in place gets arrows of 1 m around its one point)."""
    t = poses[:, [0, 2], 3]
    extent = float(np.ptp(t, axis=0).max()) if len(t) else 0.0
    length = 0.15 * extent if extent > 1e-6 else 1.0
    picks = np.unique(np.linspace(0, len(poses) - 1, min(HEADING_ARROWS, len(poses))).round())
    at = picks.astype(int)
    forward = poses[at][:, [0, 2], 2]
    norm = np.linalg.norm(forward, axis=1, keepdims=True)
    forward = forward / np.where(norm > 0, norm, 1.0) * length
    ax.quiver(
        t[at, 0],
        t[at, 1],
        forward[:, 0],
        forward[:, 1],
        angles="xy",
        scale_units="xy",
        scale=1,
        color=colour,
        width=0.006,
        label="optical axis",
    )
