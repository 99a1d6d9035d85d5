"""The per-camera validity timeline of a nuScenes dataroot, and a 50-scene dataroot drawn
with the sampling flags."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

from dataset_devkit.nuscenes import spec
from dataset_devkit.preview import Kind
from dataset_devkit.preview import nuscenes_validity as nv
from dataset_devkit.preview.figures import save
from dataset_devkit.preview.nuscenes_validity import COLOURS, State, grid_states
from dataset_devkit.preview.page import Image as PageImage
from tests.preview.conftest import FLEET_SCENES

SECOND = 1_000_000_000


def _window(missing: dict[str, list[int]], points: int = 4) -> dict[str, Any]:
    return {
        "scene_index": 0,
        "start_timestamp_ns": 7 * SECOND,
        "end_timestamp_ns": 9 * SECOND,
        "valid": not any(missing.values()),
        "reasons": [],
        "cameras": [
            {"channel": ch, "grid_points": points, "missing_grid_indices": m}
            for ch, m in missing.items()
        ],
    }


def test_a_missed_grid_point_is_missing_and_the_rest_of_a_dropped_window_rejected() -> None:
    window = _window({"CAM_FRONT": [1], "CAM_BACK": []})
    kept = grid_states(window, selected=True)
    dropped = grid_states(window, selected=False)
    p, m, r = State.PRESENT, State.MISSING, State.REJECTED
    assert [s for _, s in kept["CAM_FRONT"]] == [p, m, p, p]
    assert [s for _, s in kept["CAM_BACK"]] == [p, p, p, p]
    assert [s for _, s in dropped["CAM_FRONT"]] == [r, m, r, r]
    assert [s for _, s in dropped["CAM_BACK"]] == [r, r, r, r]
    # grid times step by the 2 Hz sample interval from the window start
    assert [t for t, _ in kept["CAM_BACK"]] == [7 * SECOND + i * SECOND // 2 for i in range(4)]


def test_consecutive_points_merge_into_one_bar_per_run() -> None:
    states = grid_states(_window({"CAM_FRONT": [2, 3]}, points=6), selected=True)
    runs = nv._runs(states["CAM_FRONT"], origin=7 * SECOND)
    assert runs[State.PRESENT] == [(0.0, 1.0), (2.0, 1.0)]
    assert runs[State.MISSING] == [(1.0, 1.0)]
    assert runs[State.REJECTED] == []


def _pixels(path: Path) -> np.ndarray[Any, Any]:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB")).reshape(-1, 3)


def _count(pixels: np.ndarray[Any, Any], state: State) -> int:
    rgb = tuple(int(COLOURS[state][i : i + 2], 16) for i in (1, 3, 5))
    return int(np.all(pixels == rgb, axis=1).sum())


def test_each_state_is_drawn_in_its_colour(fleet_page: Path, pages: dict[Kind, Path]) -> None:
    exported = _pixels(fleet_page.parent / "nuscenes_log000_validity.png")
    assert all(_count(exported, s) > 200 for s in State)
    dropped = _pixels(fleet_page.parent / "nuscenes_dropped000_validity.png")
    assert _count(dropped, State.PRESENT) < 400  # only the legend swatch
    assert _count(dropped, State.MISSING) > 2000 and _count(dropped, State.REJECTED) > 2000
    # the demo's recording lost nothing: green bars, the other colours only in the legend
    demo = _pixels(pages[Kind.NUSCENES].parent / "nuscenes_log000_validity.png")
    assert _count(demo, State.PRESENT) > 20 * _count(demo, State.MISSING)
    assert _count(demo, State.MISSING) < 400 and _count(demo, State.REJECTED) < 400


def _table_rows(html: str, caption: str) -> list[list[str]]:
    table = html.split(f"<caption>{caption}", 1)[1].split("</table>", 1)[0]
    return [re.findall(r"<td>([^<]*)</td>", row) for row in table.split("<tr>")[2:]]


def _expected_counts(fleet: Path) -> dict[str, list[int]]:
    """Present/missing/rejected per camera of rec-0, counted from the extensions."""
    ext = fleet / spec.EXTENSIONS_DIR
    validity = json.loads((ext / spec.VALIDITY_FILE).read_text())["recordings"][0]
    audit = json.loads((ext / spec.PIPELINE_AUDIT_FILE).read_text())["chronology"][0]
    selected = {e["scene_index"]: e["selected"] for e in audit["entries"]}
    counts: dict[str, list[int]] = {}
    for window in validity["scene_windows"]:
        for cam in window["cameras"]:
            c = counts.setdefault(cam["channel"], [0, 0, 0])
            missing = len(cam["missing_grid_indices"])
            c[1] += missing
            c[0 if selected[window["scene_index"]] else 2] += cam["grid_points"] - missing
    return counts


def test_the_fifty_scene_page_counts_every_window_and_draws_only_the_sample(
    fleet: Path, fleet_page: Path
) -> None:
    html = fleet_page.read_text()
    drawn = sorted(p.name for p in fleet_page.parent.glob("*.png"))
    assert drawn == [
        "nuscenes_dropped000_validity.png",
        "nuscenes_log000_ego.png",
        "nuscenes_log000_validity.png",
        "nuscenes_scene000.png",
        "nuscenes_scene000_ego.png",
        "nuscenes_scene001.png",
        "nuscenes_scene001_ego.png",
    ]
    assert f"camera grids for 2 of {FLEET_SCENES} scenes" in html
    assert "2 of 3 key-frame samples" in html
    rows = _table_rows(html, "recording rec-0: grid points per camera")
    expected = _expected_counts(fleet)
    assert {r[0]: [int(v) for v in r[1:4]] for r in rows} == expected
    assert expected["CAM_BACK"] == [150, 26, 49]  # 50 kept scenes x 3, 13 windows lost 2
    rejected = _table_rows(html, "rejected windows of rec-0 (first 20; 5 more)")
    assert len(rejected) == 20
    assert rejected[0] == [
        "1",
        "10.0",
        "11.5",
        "rule 0 require_valid: CAM_BACK misses 2 of 3 grid points",
    ]
    dropped = _table_rows(html, "recording rec-dropped: grid points per camera")
    assert {r[0]: r[1:4] for r in dropped}["CAM_BACK"] == ["0", "8", "0"]


def test_the_figure_names_its_cameras_states_and_recording(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts: list[str] = []
    real_save = save

    def spy(fig: Figure, out: Path, name: str, caption: str) -> Any:
        texts.extend(t.get_text() for t in fig.findobj(Text))
        return real_save(fig, out, name, caption)

    monkeypatch.setattr(nv, "save", spy)
    from dataset_devkit.nuscenes import Dataset

    section = nv.render_validity(Dataset(fleet), [], tmp_path, limit=1)
    assert [i.src for i in section.items if isinstance(i, PageImage)] == [
        "nuscenes_dropped000_validity.png"
    ]
    joined = "\n".join(texts)
    for label in ("CAM_BACK", "CAM_FRONT", "present", "missing", "rejected", "rec-dropped"):
        assert label in joined, label
    assert "time from recording start (s)" in joined and " #0" in joined


def test_images_decoded_follow_the_flags_not_the_tree(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Memory is bounded when the work is: 50 scenes x 3 samples x 2 cameras hold 300 JPEGs,
    # and --scenes 2 --rows 2 must decode 2 x 2 x 2 of them, one at a time.
    from dataset_devkit.preview import nuscenes, preview

    opened: list[Path] = []
    real = nuscenes._thumbnail

    def counting(path: Path) -> Any:
        opened.append(path)
        return real(path)

    monkeypatch.setattr(nuscenes, "_thumbnail", counting)
    preview(fleet, tmp_path / "page", scenes=2, rows=2)
    assert len(opened) == 8 and len(set(opened)) == 8
    assert len(list(fleet.glob("samples/*/*.jpg"))) == FLEET_SCENES * 3 * 2
