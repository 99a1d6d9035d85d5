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
from dataset_devkit.preview.figures import figure, save
from dataset_devkit.preview.page import Section, Table, Text
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


def _read_sample(
    reader: VinOfflineStoreReader,
    picked: npt.NDArray[np.int64],
    names: list[str],
    progress: OnProgress | None,
) -> dict[str, npt.NDArray[Any]]:
    """The *names* blocks of the *picked* rows, read a chunk at a time to report progress."""
    parts: dict[str, list[npt.NDArray[Any]]] = {name: [] for name in names}
    for start in range(0, len(picked), READ_CHUNK):
        chunk = picked[start : start + READ_CHUNK]
        batch = reader.read_positions(chunk, names)
        for name in names:
            parts[name].append(np.asarray(batch[name]))
        report(
            progress, ProgressUpdate("rows", items=len(chunk), total_items=len(picked), unit="rows")
        )
    return {name: np.concatenate(arrays) for name, arrays in parts.items()}


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
    numeric = [b.name for b in summary.blocks if b.kind == "zarr_array" and b.dtype]
    section = Section("Value histograms")
    total = len(reader)
    if numeric and total:
        picked = np.sort(
            np.random.default_rng(seed).choice(total, size=min(rows, total), replace=False)
        )
        batch = _read_sample(reader, picked, numeric, progress)
        cols = min(3, len(numeric))
        nrows = math.ceil(len(numeric) / cols)
        with figure(4 * cols, 2.8 * nrows) as fig:
            for i, name in enumerate(numeric):
                ax = fig.add_subplot(nrows, cols, i + 1)
                values = np.asarray(batch[name], dtype=np.float64).ravel()
                values = values[np.isfinite(values)]
                ax.hist(values, bins=40, color="#1f77b4")
                ax.set_title(name)
                ax.set_xlabel("value")
                ax.set_ylabel("count")
            fig.tight_layout()
            section.items.append(
                save(
                    fig,
                    out,
                    "vin_histograms.png",
                    f"{len(picked)} of {total} rows (fixed seed {seed})",
                )
            )
    else:
        section.items.append(Text("no numeric blocks"))
    return [inventory, splits, section]
