"""A nuScenes dataroot, read through our SDK: camera grids, ego paths per log, table counts."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image as PILImage
from PIL import ImageDraw, ImageOps

from dataset_devkit.errors import NotFoundError
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.nuscenes import Dataset
from dataset_devkit.nuscenes.spec import TABLE_NAMES
from dataset_devkit.preview.figures import figure, font, save, save_image
from dataset_devkit.preview.nuscenes_ego import render_ego_poses
from dataset_devkit.preview.nuscenes_validity import render_validity
from dataset_devkit.preview.page import Section, Table, Text

__all__ = ["render_nuscenes"]

#: One cell of a scene grid in pixels: the thumbnail area and the label band above it;
#: and the title band of the grid.
CELL_W, CELL_H, LABEL_H, TITLE_H = 200, 120, 16, 30


def _thumbnail(path: Path) -> PILImage.Image:
    """The image at *path* scaled to fill a grid cell; a large JPEG decodes at 1/2..1/8
    scale (draft), so a 1600 x 900 frame never sits in memory whole."""
    box = (CELL_W - 8, CELL_H - 4)
    with PILImage.open(path) as image:
        image.draft("RGB", box)
        return ImageOps.contain(image.convert("RGB"), box, PILImage.Resampling.BILINEAR)


def _evenly(items: list[Any], limit: int) -> list[Any]:
    if len(items) <= limit:
        return items
    picks = np.linspace(0, len(items) - 1, limit).round().astype(int)
    return [items[i] for i in picks]


def render_nuscenes(
    root: Path,
    out: Path,
    *,
    scenes: int,
    samples: int,
    seed: int,
    progress: OnProgress | None = None,
) -> list[Section]:
    """Overview tables, then per log of *scenes* sampled scenes its ego path and camera
    validity timeline, then a camera grid per sampled scene.

    Only the sampled scenes' logs are drawn, so a fleet of thousands of logs costs as much
    as the few the user asked to see; the overview tables still count everything.
    """
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
    count = min(scenes, len(all_scenes))
    picked = [
        all_scenes[int(i)]
        for i in sorted(np.random.default_rng(seed).choice(len(all_scenes), count, replace=False))
    ]
    logs = sorted({s["log_token"] for s in picked})
    overview.items.append(
        Text(
            f"camera grids for {count} of {len(all_scenes)} scenes (fixed seed {seed}); "
            f"ego paths and validity timelines for their {len(logs)} of "
            f"{len(ds.table('log'))} logs"
        )
    )
    sections = [overview, _trajectories(ds, all_scenes, logs, out, progress)]
    sections.append(render_validity(ds, logs, out, limit=scenes))
    sections.append(render_ego_poses(ds, picked, out))
    for n, scene in enumerate(picked):
        sections.append(_scene_grid(ds, scene, out, n, samples))
        report(progress, ProgressUpdate("scenes", items=1, total_items=count, unit="scenes"))
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


def _trajectories(
    ds: Dataset,
    scenes: list[dict[str, Any]],
    logs: list[str],
    out: Path,
    progress: OnProgress | None,
) -> Section:
    section = Section("Ego trajectories per log")
    channel = ds.channels[0] if ds.channels else None
    by_log: dict[str, list[tuple[str, np.ndarray[Any, np.dtype[np.float64]]]]] = defaultdict(list)
    wanted = set(logs)
    for scene in scenes:
        if scene["log_token"] not in wanted:
            continue
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
        report(progress, ProgressUpdate("logs", items=1, total_items=len(by_log), unit="logs"))
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


def scene_clock(timestamp_us: int, start_us: int) -> str:
    """A frame's time as a reader follows a scene: seconds from its first sample
    (``+3.50 s``), not the raw microseconds since 1970 the tables hold."""
    return f"{(timestamp_us - start_us) / 1e6:+.2f} s"


def _scene_grid(ds: Dataset, scene: dict[str, Any], out: Path, n: int, limit: int) -> Section:
    """Rows = key-frame samples, columns = cameras, pasted into one mosaic with Pillow.

    No matplotlib here: a 20 x 6 grid of axes took seconds to lay out, and one axes showing
    the whole mosaic made float RGBA copies of it (400 MB for 20 x 6 cells); Pillow pastes
    and labels the cells in the mosaic's own 3 bytes per pixel. Each cell is labelled with
    its camera and the frame's time from the scene's first sample.
    """
    section = Section(f"Scene {scene['name']}")
    chain = ds.scene_samples(scene["token"])
    start = int(chain[0]["timestamp"]) if chain else 0
    rows = _evenly(chain, limit)
    channels = ds.channels
    section.items.append(
        Text(
            f"{scene.get('description', '')} — {len(rows)} of {len(chain)} key-frame samples, "
            f"cameras {', '.join(channels)}; each frame is labelled with its time from the "
            "scene's first sample"
        )
    )
    pitch = CELL_H + LABEL_H
    size = (CELL_W * max(len(channels), 1), TITLE_H + pitch * max(len(rows), 1))
    mosaic = PILImage.new("RGB", size, "white")
    draw = ImageDraw.Draw(mosaic)
    small, large = font(11), font(13)
    title = f"{scene['name']}: rows = key-frame samples, columns = cameras"
    for smaller in (12, 11, 10, 9):  # a long scene name on a narrow grid: a smaller title
        if draw.textlength(title, font=large) <= size[0] - 8:
            break
        large = font(smaller)
    draw.text((size[0] // 2, TITLE_H // 2), title, fill="black", font=large, anchor="mm")
    for r, sample in enumerate(rows):
        for c, channel in enumerate(channels):
            x, y = c * CELL_W, TITLE_H + r * pitch
            try:
                sd = ds.camera(sample["token"], channel)
            except NotFoundError:
                mosaic.paste((221, 221, 221), (x + 4, y + LABEL_H, x + CELL_W - 4, y + pitch - 4))
                label = f"{channel} missing"
            else:
                thumb = _thumbnail(ds.image_path(sd["token"]))
                mosaic.paste(thumb, (x + (CELL_W - thumb.width) // 2, y + LABEL_H))
                label = f"{channel} · {scene_clock(int(sd['timestamp']), start)}"
            draw.text(
                (x + CELL_W // 2, y + LABEL_H - 3), label, fill="black", font=small, anchor="ms"
            )
    item = save_image(mosaic, out, f"nuscenes_scene{n:03d}.png", f"scene {scene['name']}")
    section.items.append(item)
    return section
