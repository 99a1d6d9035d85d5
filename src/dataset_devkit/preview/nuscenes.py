"""A nuScenes dataroot, read through our SDK: camera grids, ego paths per log, table counts."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image as PILImage

from dataset_devkit.errors import NotFoundError
from dataset_devkit.nuscenes import Dataset
from dataset_devkit.nuscenes.spec import TABLE_NAMES
from dataset_devkit.preview.figures import figure, save
from dataset_devkit.preview.page import Image, Section, Table, Text

__all__ = ["render_nuscenes"]

#: Pixel width of one camera thumbnail (height follows the image's aspect).
THUMB_WIDTH = 192


def _thumbnail(path: Path) -> np.ndarray[Any, np.dtype[np.uint8]]:
    with PILImage.open(path) as image:
        image.draft("RGB", (THUMB_WIDTH, THUMB_WIDTH))  # JPEG decodes at 1/2..1/8 scale
        small = image.convert("RGB")
        small.thumbnail((THUMB_WIDTH, THUMB_WIDTH * 4), PILImage.Resampling.BILINEAR)
        return np.asarray(small)


def _evenly(items: list[Any], limit: int) -> list[Any]:
    if len(items) <= limit:
        return items
    picks = np.linspace(0, len(items) - 1, limit).round().astype(int)
    return [items[i] for i in picks]


def render_nuscenes(
    root: Path, out: Path, *, scenes: int, samples: int, seed: int
) -> list[Section]:
    """Overview tables, an ego path per log, and a camera grid for *scenes* sampled scenes."""
    ds = Dataset(root)
    all_scenes = ds.table("scene")
    overview = Section("Tables and splits")
    overview.items.append(
        Table(("table", "rows"), tuple((t, str(len(ds.table(t)))) for t in sorted(TABLE_NAMES)))
    )
    splits = ds.split_scene_names()
    overview.items.append(
        Table(("split", "scenes"), tuple((k, str(len(v))) for k, v in sorted(splits.items())))
    )
    overview.items.append(_scene_table(ds, all_scenes))
    sections = [overview, _trajectories(ds, all_scenes, out)]
    count = min(scenes, len(all_scenes))
    picked = sorted(np.random.default_rng(seed).choice(len(all_scenes), count, replace=False))
    sections[0].items.append(
        Text(f"camera grids for {count} of {len(all_scenes)} scenes (fixed seed {seed})")
    )
    for n, index in enumerate(picked):
        sections.append(_scene_grid(ds, all_scenes[int(index)], out, n, samples))
    return sections


#: Scenes listed in the per-scene table; more are counted, not listed.
TABLE_SCENES = 200


def _scene_table(ds: Dataset, scenes: list[dict[str, Any]]) -> Table:
    """Per scene: split, tags (duration, distance, speed, time of day), validity, annotations."""
    rows = []
    for scene in scenes[:TABLE_SCENES]:
        token = scene["token"]
        tags, validity = ds.tags(token), ds.validity(token)
        rows.append(
            (
                scene["name"],
                ds.split(token),
                f"{tags.get('duration_s', 0):.1f}",
                f"{tags.get('distance_m', 0):.1f}",
                f"{tags.get('mean_speed_mps', 0):.1f}",
                str(tags.get("time_of_day", "-")),
                "valid" if validity.get("valid") else "; ".join(map(str, validity["reasons"])),
                str(len(ds.annotations(token))),
            )
        )
    more = len(scenes) - len(rows)
    return Table(
        (
            "scene",
            "split",
            "duration s",
            "distance m",
            "mean m/s",
            "time of day",
            "validity",
            "annotations",
        ),
        tuple(rows),
        f"scenes (first {len(rows)}; {more} more not listed)" if more > 0 else "scenes",
    )


def _trajectories(ds: Dataset, scenes: list[dict[str, Any]], out: Path) -> Section:
    section = Section("Ego trajectories per log")
    channel = ds.channels[0] if ds.channels else None
    by_log: dict[str, list[tuple[str, np.ndarray[Any, np.dtype[np.float64]]]]] = defaultdict(list)
    for scene in scenes:
        points = []
        for sample in ds.scene_samples(scene["token"]):
            try:
                sd = ds.camera(sample["token"], channel) if channel else None
            except NotFoundError:
                continue
            if sd is not None:
                points.append(ds.ego_pose(sd["token"])["translation"][:2])
        if points:
            by_log[scene["log_token"]].append((scene["name"], np.asarray(points, np.float64)))
    for n, log_token in enumerate(sorted(by_log)):
        log = ds.get("log", log_token)
        # Metres from the log's first pose: raw UTM-like coordinates would hide in an offset.
        origin = by_log[log_token][0][1][0]
        with figure(6, 6) as fig:
            ax = fig.add_subplot(1, 1, 1)
            for name, raw in by_log[log_token]:
                xy = raw - origin
                (line,) = ax.plot(xy[:, 0], xy[:, 1], marker=".", markersize=3, label=name)
                ax.plot(*xy[0], "o", color=line.get_color(), markersize=7)
                ax.plot(*xy[-1], "X", color=line.get_color(), markersize=8)
            ax.set_aspect("equal", adjustable="datalim")
            ax.set_xlabel(f"x (m) from {origin[0]:.1f}")
            ax.set_ylabel(f"y (m) from {origin[1]:.1f}")
            ax.set_title(f"log {log.get('logfile') or log_token} (o start, X end)")
            ax.legend(fontsize=7, loc="best")
            fig.tight_layout()
            section.items.append(
                save(fig, out, f"nuscenes_log{n:03d}_ego.png", f"ego poses, log {log_token}")
            )
    if not by_log:
        section.items.append(Text("no ego poses"))
    return section


def _scene_grid(ds: Dataset, scene: dict[str, Any], out: Path, n: int, limit: int) -> Section:
    section = Section(f"Scene {scene['name']}")
    chain = ds.scene_samples(scene["token"])
    rows = _evenly(chain, limit)
    channels = ds.channels
    section.items.append(
        Text(
            f"{scene.get('description', '')} — {len(rows)} of {len(chain)} key-frame samples, "
            f"cameras {', '.join(channels)}"
        )
    )
    cell = 2.0
    with figure(cell * max(len(channels), 1) + 0.4, cell * 0.62 * max(len(rows), 1) + 0.6) as fig:
        for r, sample in enumerate(rows):
            for c, channel in enumerate(channels):
                ax = fig.add_subplot(len(rows), len(channels), r * len(channels) + c + 1)
                ax.set_xticks([])
                ax.set_yticks([])
                try:
                    sd = ds.camera(sample["token"], channel)
                except NotFoundError:
                    ax.set_facecolor("#dddddd")
                    ax.set_title(f"{channel} missing", fontsize=6)
                    continue
                ax.imshow(_thumbnail(ds.image_path(sd["token"])))
                ax.set_title(f"{channel} · {sd['timestamp']}", fontsize=6)
        fig.suptitle(f"{scene['name']}: rows = key-frame samples, columns = cameras", fontsize=8)
        fig.tight_layout()
        item: Image = save(fig, out, f"nuscenes_scene{n:03d}.png", f"scene {scene['name']}")
    section.items.append(item)
    return section
