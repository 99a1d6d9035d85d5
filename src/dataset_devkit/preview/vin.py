"""A VIN offline store: block inventory, per-block value histograms, split sizes."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.preview.figures import figure, font, save, save_image
from dataset_devkit.preview.page import Image, Section, Table, Text
from dataset_devkit.preview.units import human_bytes
from dataset_devkit.vin_store import VinOfflineStoreReader, inspect_store

__all__ = ["render_vin_store"]


def _bytes_per_block(root: Path, blocks: dict[str, list[str]]) -> Counter[str]:
    """Bytes of each block summed over shards, from the content manifest's file sizes."""
    data = json.loads((root / "content_manifest.json").read_text("utf-8"))
    out: Counter[str] = Counter()
    for entry in data["files"]:
        parts = str(entry["path"]).split("/", 2)
        if len(parts) < 3 or parts[0] != "shards":
            continue
        for name, paths in blocks.items():
            if any(parts[2] == p or parts[2].startswith(p + "/") for p in paths):
                out[name] += int(entry["size"])
    return out


#: Sampled rows read per call (one progress update each).
READ_CHUNK = 64
#: Values of one block read for its histograms, at most (rows are dropped to stay below).
MAX_VALUES = 1 << 22
#: A block's last axis up to this length is drawn component by component; longer, pooled.
MAX_COMPONENTS = 16
#: Histogram panels per figure row.
PANELS_PER_ROW = 6
#: Rows of an image-shaped block drawn as thumbnails.
THUMBNAILS = 8
THUMB_H = 96


def image_shaped(dtype: str | None, row_shape: tuple[int, ...]) -> bool:
    """Whether a block's rows are images: ``uint8 [H, W]`` or ``[H, W, 1|3|4]``, each side
    at least 8 pixels (a camera frame, a depth preview), drawn as thumbnails."""
    if dtype != "uint8" or len(row_shape) not in (2, 3):
        return False
    if len(row_shape) == 3 and row_shape[2] not in (1, 3, 4):
        return False
    return row_shape[0] >= 8 and row_shape[1] >= 8


def _read_sample(
    reader: VinOfflineStoreReader,
    picked: npt.NDArray[np.int64],
    names: list[str],
    progress: OnProgress | None,
    limits: dict[str, int],
) -> dict[str, npt.NDArray[Any]]:
    """The *names* blocks of the *picked* rows, read a chunk at a time to report progress;
    block *name* only for its first ``limits[name]`` rows (bounded memory)."""
    parts: dict[str, list[npt.NDArray[Any]]] = {name: [] for name in names}
    for start in range(0, len(picked), READ_CHUNK):
        chunk = picked[start : start + READ_CHUNK]
        # Blocks read together as far as each one's row limit goes: a block of large rows
        # (frames, feature maps) is never read for more rows than its limit.
        for count in sorted({min(len(chunk), limits[n] - start) for n in names} - {0}):
            wanted = [n for n in names if min(len(chunk), limits[n] - start) == count]
            if count > 0:
                batch = reader.read_positions(chunk[:count], wanted)
                for name in wanted:
                    parts[name].append(np.asarray(batch[name]))
        report(
            progress, ProgressUpdate("rows", items=len(chunk), total_items=len(picked), unit="rows")
        )
    return {name: np.concatenate(arrays) for name, arrays in parts.items()}


def _panels(name: str, values: npt.NDArray[Any]) -> list[tuple[str, npt.NDArray[np.float64]]]:
    """One histogram panel per component of the block's last axis (pooled over its other
    axes: ``[..., 0]`` is x of every point), or one of every value when the last axis has
    one component or more than MAX_COMPONENTS (feature maps)."""
    row_shape = values.shape[1:]
    width = row_shape[-1] if row_shape else 1
    count = math.prod(row_shape)
    if width == 1 or width > MAX_COMPONENTS:
        note = f" (all {count} values)" if count > 1 else ""
        return [(name + note, values.astype(np.float64).ravel())]
    prefix = "..., " if len(row_shape) > 1 else ""
    return [
        (f"{name}[{prefix}{i}]", values[..., i].astype(np.float64).ravel()) for i in range(width)
    ]


def _histograms(
    blocks: list[str], batch: dict[str, npt.NDArray[Any]], out: Path, caption: str
) -> Image:
    """Every panel of every block on one figure, a block starting a new row."""
    layout: list[list[tuple[str, npt.NDArray[np.float64]]]] = []
    for name in blocks:
        panels = _panels(name, batch[name])
        layout += [panels[i : i + PANELS_PER_ROW] for i in range(0, len(panels), PANELS_PER_ROW)]
    cols = max(len(row) for row in layout)
    with figure(2.6 * cols + 0.4, 2.3 * len(layout) + 0.2) as fig:
        for r, row in enumerate(layout):
            for c, (title, values) in enumerate(row):
                ax = fig.add_subplot(len(layout), cols, r * cols + c + 1)
                values = values[np.isfinite(values)]
                ax.hist(values, bins=40, color="#1f77b4")
                ax.set_title(title, fontsize=8)
                ax.set_xlabel("value", fontsize=7)
                ax.set_ylabel("count", fontsize=7)
                ax.tick_params(labelsize=7)
        fig.tight_layout()
        return save(fig, out, "vin_histograms.png", caption)


def _thumbnails(name: str, images: npt.NDArray[np.uint8], out: Path, n: int, caption: str) -> Image:
    """The first rows of an image-shaped block side by side, and each channel's histogram."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    frames = images[:THUMBNAILS]
    if frames.ndim == 3:
        frames = frames[..., None]
    tiles = []
    for frame in frames:
        pixels = frame[..., 0] if frame.shape[-1] == 1 else frame[..., :3]
        tile = PILImage.fromarray(np.ascontiguousarray(pixels))
        width = max(1, round(tile.width * THUMB_H / tile.height))
        tiles.append(tile.convert("RGB").resize((width, THUMB_H), PILImage.Resampling.BILINEAR))
    strip = PILImage.new("RGB", (sum(t.width + 4 for t in tiles) + 4, THUMB_H + 22), "white")
    draw = ImageDraw.Draw(strip)
    x = 4
    for i, tile in enumerate(tiles):
        strip.paste(tile, (x, 18))
        draw.text((x, 2), f"row {i}", fill="black", font=font(11))
        x += tile.width + 4
    thumbs = save_image(strip, out, f"vin_images{n:02d}.png", f"{name}: {caption}")
    return thumbs


def _channel_histograms(name: str, images: npt.NDArray[np.uint8], out: Path, n: int) -> Image:
    """The value counts of each channel (0..255) of an image-shaped block."""
    channels = images[..., None] if images.ndim == 3 else images
    labels = {1: ["gray"], 3: ["R", "G", "B"], 4: ["R", "G", "B", "A"]}[channels.shape[-1]]
    colours = {"gray": "#444444", "R": "#d62728", "G": "#2ca02c", "B": "#1f77b4", "A": "#7f7f7f"}
    with figure(6, 2.6) as fig:
        ax = fig.add_subplot(1, 1, 1)
        for i, label in enumerate(labels):
            counts = np.bincount(channels[..., i].ravel(), minlength=256)
            ax.step(np.arange(256), counts, where="mid", color=colours[label], label=label)
        ax.set_xlim(0, 255)
        ax.set_title(f"{name}: values per channel", fontsize=8)
        ax.set_xlabel("value (uint8)")
        ax.set_ylabel("pixels")
        ax.legend(fontsize=7)
        fig.tight_layout()
        caption = f"{name}: values per channel of the {len(images)} rows shown"
        return save(fig, out, f"vin_channels{n:02d}.png", caption)


def render_vin_store(
    root: Path, out: Path, *, rows: int, seed: int, progress: OnProgress | None = None
) -> list[Section]:
    """Inventory table, split sizes and a histogram per numeric block over *rows* sampled rows."""
    summary = inspect_store(root)
    reader = VinOfflineStoreReader(root)
    shards = reader.manifest.shards
    paths = {name: list(spec.paths) for name, spec in shards[0].blocks.items()} if shards else {}
    sizes = _bytes_per_block(root, paths)
    n_shards = max(len(shards), 1)
    inventory = Section("Block inventory")
    inventory.items.append(
        Text(
            f"{summary.num_samples} samples in {summary.num_shards} shards, "
            f"{summary.num_files} files, {human_bytes(summary.total_bytes)}; "
            f"root_sha256 {summary.root_sha256}"
        )
    )
    # VIN families only for a store of the VIN layout: a store of camera frames has its own
    # blocks, and none of the VIN families is "absent" from it.
    vin = summary.vin_layout
    inventory.items.append(
        Table(
            (
                "block",
                *(("VIN family",) if vin else ()),
                "kind",
                "dtype",
                "row shape",
                "bytes per shard (mean)",
            ),
            tuple(
                (
                    b.name,
                    *((b.family or "-",) if vin else ()),
                    b.kind,
                    b.dtype or "-",
                    "×".join(map(str, b.row_shape)) or "scalar",
                    human_bytes(sizes[b.name] / n_shards),
                )
                for b in summary.blocks
            ),
        )
    )
    if vin:
        absent = sorted(summary.absent_families)
        inventory.items.append(Text("absent VIN families: " + (", ".join(absent) or "none")))
    splits = Section("Splits")
    splits.items.append(
        Table(("split", "samples"), tuple((k, str(v)) for k, v in summary.split_sizes.items()))
    )
    numeric = [b for b in summary.blocks if b.kind == "zarr_array" and b.dtype]
    images = [b.name for b in numeric if image_shaped(b.dtype, b.row_shape)]
    plain = [b.name for b in numeric if b.name not in images]
    section = Section("Value histograms")
    total = len(reader)
    if numeric and total:
        picked = np.sort(
            np.random.default_rng(seed).choice(total, size=min(rows, total), replace=False)
        )
        limits = {
            b.name: THUMBNAILS
            if b.name in images
            else max(1, MAX_VALUES // max(1, math.prod(b.row_shape)))
            for b in numeric
        }
        batch = _read_sample(reader, picked, [b.name for b in numeric], progress, limits)
        if plain:
            shown = min(len(picked), min(limits[name] for name in plain))
            caption = f"{shown} of {total} rows (fixed seed {seed}); one panel per component"
            section.items.append(_histograms(plain, batch, out, caption))
        for n, name in enumerate(images):
            seen = f"{len(batch[name])} of {total} rows (fixed seed {seed})"
            section.items.append(_thumbnails(name, batch[name], out, n, seen))
            section.items.append(_channel_histograms(name, batch[name], out, n))
    else:
        section.items.append(Text("no numeric blocks"))
    return [inventory, splits, section]
