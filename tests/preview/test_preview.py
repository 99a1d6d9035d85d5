"""``preview`` on every kind of tree the demo writes: the page, its PNGs, determinism."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dataset_devkit.errors import ConfigError, DestinationExistsError, MissingPathError
from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.preview import Kind, detect_kind, preview
from tests.cli_run import run_devkit
from tests.preview.conftest import TREES
from tests.tty_run import BAR, run_on_tty

#: PNGs each kind must draw (a name pattern and how many at least).
EXPECTED: dict[Kind, list[str]] = {
    Kind.MANIFEST: ["manifest_sizes.png"],
    Kind.NUSCENES: [
        "nuscenes_log000_ego.png",
        "nuscenes_log000_validity.png",
        "nuscenes_scene000.png",
    ],
    Kind.RELEASE: ["release_packages.png"],
    Kind.RESTORED: ["manifest_sizes.png"],
    Kind.VIN_STORE: ["vin_histograms.png", "manifest_sizes.png"],
    Kind.STEREO: ["stereo_pair000_views.png", "stereo_pair000_stats.png", "manifest_sizes.png"],
}

#: Text each page must show (labels drawn from the data, not boilerplate).
LABELS: dict[Kind, list[str]] = {
    Kind.MANIFEST: ["largest files", "data/train/000000.bin"],
    Kind.NUSCENES: [
        "sample_data",
        "CAM_FRONT",
        "train",
        "time of day",
        "mz-0ee142b79d57-0000",
        "recording drive-0001: grid points per camera over 3 scene windows",
    ],
    Kind.RELEASE: ["delivered: base, depth", "pending: none"],
    Kind.RESTORED: ["snapshot_root_sha256", "families"],
    Kind.VIN_STORE: ["vin.points_world", "float32", "absent VIN families", "train", "core"],
    Kind.STEREO: ["ue5-pro/map0001/scene0001/cams00", "invalid (0) in magenta"],
}


def _images(page: Path) -> list[tuple[str, str, str]]:
    return re.findall(r'<img src="([^"]+)" width="(\d+)" height="(\d+)"', page.read_text())


@pytest.mark.parametrize("kind", list(TREES))
def test_detects_each_kind_the_demo_writes(demo_root: Path, kind: Kind) -> None:
    assert detect_kind(demo_root / TREES[kind]) is kind
    assert detect_kind(str(demo_root / TREES[kind])) is kind


@pytest.mark.parametrize("kind", list(TREES))
def test_each_page_links_real_pngs_of_the_stated_size_with_content(
    pages: dict[Kind, Path], kind: Kind
) -> None:
    page = pages[kind]
    images = _images(page)
    assert {src for src, _, _ in images} >= set(EXPECTED[kind])
    for src, width, height in images:
        assert not src.startswith(("/", "http")), src  # relative: the folder can move
        with Image.open(page.parent / src) as image:
            assert image.format == "PNG"
            assert image.size == (int(width), int(height))
            pixels = np.asarray(image.convert("RGB")).astype(np.uint32)
        # a drawing, not a blank canvas: many distinct colours (packed RGB, one sort)
        packed = (pixels[..., 0] << 16) | (pixels[..., 1] << 8) | pixels[..., 2]
        assert len(np.unique(packed)) > 20, src
    text = page.read_text()
    for label in LABELS[kind]:
        assert label in text, label
    assert "<script" not in text and "http://" not in text and "https://" not in text


def test_same_tree_gives_the_same_bytes(
    demo_root: Path, pages: dict[Kind, Path], tmp_path: Path
) -> None:
    for kind, rel in TREES.items():
        again = preview(demo_root / rel, tmp_path / kind.value)
        first = pages[kind].parent
        names = sorted(p.name for p in first.iterdir())
        assert names == sorted(p.name for p in again.parent.iterdir())
        for name in names:
            assert (first / name).read_bytes() == (again.parent / name).read_bytes(), name


def test_stereo_depth_uses_one_scale_and_marks_invalid_pixels(pages: dict[Kind, Path]) -> None:
    # Magenta (invalid = 0) must appear only where depth is 0; the demo depth is all valid,
    # so the views hold no magenta, while the colour bar is drawn (viridis end colours).
    with Image.open(pages[Kind.STEREO].parent / "stereo_pair000_views.png") as image:
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    magenta = np.all(pixels == (255, 0, 255), axis=1)
    assert not magenta.any()
    assert np.all(np.abs(pixels.astype(int) - (253, 231, 36)) < 8, axis=1).any()  # viridis top


def test_invalid_depth_is_drawn_in_magenta(demo_root: Path, tmp_path: Path) -> None:
    from dataset_devkit.preview.stereo import _views
    from dataset_devkit.stereo import StereoDataset

    root = demo_root / TREES[Kind.STEREO]
    ds = StereoDataset(root, index="genvr_i2s_with_depth.jsonl", use_depth=True)
    sample = ds.read(0, [0])
    ds.close()
    assert sample.depth is not None
    sample.depth["left"][0, :10, :] = 0
    _views(sample, tmp_path, 0, 9.0)
    with Image.open(tmp_path / "stereo_pair000_views.png") as image:
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    assert np.all(pixels == (255, 0, 255), axis=1).sum() > 100


def test_sampling_flags_bound_the_work(demo_root: Path, tmp_path: Path) -> None:
    page = preview(demo_root / TREES[Kind.STEREO], tmp_path / "one", pairs=1)
    assert "1 of 2 pairs" in page.read_text()
    assert not (page.parent / "stereo_pair001_views.png").exists()
    page = preview(demo_root / TREES[Kind.NUSCENES], tmp_path / "ns", scenes=1, rows=2)
    text = page.read_text()
    assert "camera grids for 1 of" in text and "2 of 8 key-frame samples" in text


def test_bad_input_is_one_clear_error_and_nothing_is_written(
    demo_root: Path, tmp_path: Path
) -> None:
    with pytest.raises(MissingPathError, match="no such directory"):
        preview(tmp_path / "absent", tmp_path / "out")
    (tmp_path / "plain").mkdir()
    with pytest.raises(ConfigError, match="not a dataset-devkit tree"):
        preview(tmp_path / "plain", tmp_path / "out")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("keep")
    with pytest.raises(DestinationExistsError, match="absent or an empty directory"):
        preview(demo_root / TREES[Kind.MANIFEST], busy)
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]
    with pytest.raises(ConfigError, match="pairs must be an int >= 1"):
        preview(demo_root / TREES[Kind.STEREO], tmp_path / "o", pairs=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["absent", "busy", "plain"][1:]


def test_cli_prints_the_page_path(
    demo_root: Path, tmp_path: Path, package_env: dict[str, str]
) -> None:
    out = tmp_path / "page"
    result = run_devkit(
        package_env, "preview", str(demo_root / TREES[Kind.MANIFEST]), "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{out / 'index.html'}\n"
    assert result.stderr == ""  # no terminal: no progress, nothing else
    result = run_devkit(
        package_env, "preview", str(tmp_path / "nope"), "--out", str(tmp_path / "x")
    )
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    result = run_devkit(
        package_env, "preview", str(tmp_path / "nope"), "--out", str(tmp_path / "x"), "--json"
    )
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["ok"] is False and report["exit_code"] == 1
    assert report["root"] == str(tmp_path / "nope") and "no such directory" in report["error"]
    assert not (tmp_path / "x").exists()


def test_demo_step_writes_a_page_per_tree_and_says_where(demo_root: Path) -> None:
    from dataset_devkit.demo import DEMO_STEPS
    from dataset_devkit.demo.preview import run

    assert DEMO_STEPS[-1] == "preview"  # after every step whose tree it draws
    report = run(demo_root / "preview")
    assert len(report.lines) == len(TREES)
    for _, page in report.lines:
        assert Path(page).is_file()
        assert _images(Path(page))


#: Stages each kind reports progress in, and the total items of each for the demo trees.
STAGES: dict[Kind, dict[str, int]] = {
    Kind.NUSCENES: {"logs": 1, "scenes": 3},
    Kind.STEREO: {"read pairs": 2, "pairs": 2},
    Kind.VIN_STORE: {"rows": 96},
    Kind.MANIFEST: {},
    Kind.RELEASE: {},
    Kind.RESTORED: {},
}


def test_progress_counts_every_item_against_its_total(
    pages: dict[Kind, Path], progress_seen: dict[Kind, list[ProgressUpdate]]
) -> None:
    for kind, stages in STAGES.items():
        updates = progress_seen[kind]
        done: dict[str, int] = {}
        for update in updates:
            assert update.total_items == stages[update.stage], (kind, update)
            done[update.stage] = done.get(update.stage, 0) + update.items
        assert done == stages, kind
    # one update per item, not one at the end (VIN rows come a read chunk at a time)
    assert len(progress_seen[Kind.NUSCENES]) == 4
    assert len(progress_seen[Kind.STEREO]) == 4


def test_cli_shows_item_bars_on_a_terminal_and_nothing_with_json(
    fleet: Path, tmp_path: Path, package_env: dict[str, str]
) -> None:
    flags = ("--scenes", "2", "--rows", "2")
    code, shown = run_on_tty(
        package_env, "preview", str(fleet), "--out", str(tmp_path / "a"), *flags
    )
    assert code == 0, shown
    assert BAR in shown and "2/2 scenes" in shown and "1/1 logs" in shown
    assert shown.rstrip().endswith(str(tmp_path / "a" / "index.html"))
    code, shown = run_on_tty(
        package_env, "preview", str(fleet), "--out", str(tmp_path / "b"), *flags, "--json"
    )
    assert code == 0 and BAR not in shown, shown
    report = json.loads(shown.replace("\r\n", "\n"))
    assert report["ok"] is True and report["kind"] == "nuscenes-dataroot"
    assert report["page"] == str(tmp_path / "b" / "index.html")


#: Text each matplotlib figure must draw: titles, axis labels, legends, tick labels.
FIGURE_LABELS: dict[tuple[Kind, str], list[str]] = {
    (Kind.NUSCENES, "nuscenes_log000_ego.png"): [
        "x (m) from",
        "y (m) from",
        "(o start, X end)",
        "mz-0ee142b79d57-0000",
    ],
    (Kind.NUSCENES, "nuscenes_log000_validity.png"): [
        "CAM_FRONT",
        "CAM_LEFT",
        "present (key frame on the grid)",
        "missing (no frame within tolerance)",
        "rejected (window not exported)",
        "time from recording start (s); each 2 Hz grid point spans 0.5 s",
        " #0",
    ],
    (Kind.STEREO, "stereo_pair000_views.png"): [
        "left · frame 0",
        "right · frame 0",
        "depth (left) · frame 0",
        "depth (m)",
    ],
    (Kind.STEREO, "stereo_pair000_stats.png"): [
        "camera_to_world from above (o start, x end)",
        "left eye",
        "right eye",
        "depth (m)",
        "pixels",
    ],
    (Kind.VIN_STORE, "vin_histograms.png"): ["vin.points_world", "value", "count"],
    (Kind.RELEASE, "release_packages.png"): [
        "package bytes",
        "base/base-0001.tar",
        "base",
        "depth",
    ],
    (Kind.MANIFEST, "manifest_sizes.png"): [
        "bytes by top-level folder",
        "bytes by file type",
        "data/",
        ".bin",
    ],
}


def test_each_figure_draws_its_labels(
    pages: dict[Kind, Path], figure_texts: dict[tuple[Kind, str], list[str]]
) -> None:
    for key, labels in FIGURE_LABELS.items():
        drawn = figure_texts[key]
        for label in labels:
            assert any(label in text for text in drawn), (key, label, drawn)
    release = figure_texts[(Kind.RELEASE, "release_packages.png")]
    assert any(text.startswith("limit ") for text in release)  # the 4 GiB-style limit line


def test_every_scene_grid_cell_is_labelled(pages: dict[Kind, Path]) -> None:
    # The grid is a Pillow mosaic (no matplotlib text to inspect): each cell's label band
    # must hold dark glyph pixels, and the title band too.
    from dataset_devkit.preview.nuscenes import CELL_H, CELL_W, LABEL_H, TITLE_H

    with Image.open(pages[Kind.NUSCENES].parent / "nuscenes_scene000.png") as image:
        grey = np.asarray(image.convert("L"))
    rows = (grey.shape[0] - TITLE_H) // (CELL_H + LABEL_H)
    cols = grey.shape[1] // CELL_W
    assert (rows, cols) == (8, 3)  # 8 key frames x 3 cameras in the demo scene
    assert (grey[:TITLE_H] < 100).sum() > 100
    for r in range(rows):
        for c in range(cols):
            top = TITLE_H + r * (CELL_H + LABEL_H)
            band = grey[top : top + LABEL_H, c * CELL_W : (c + 1) * CELL_W]
            assert (band < 100).sum() > 50, (r, c)


def test_each_kind_has_the_name_the_cli_and_json_reports_use(pages: dict[Kind, Path]) -> None:
    from dataset_devkit.kinds import TreeKind

    assert {kind.value for kind in Kind} == {kind.value for kind in TreeKind}
    assert str(Kind.VIN_STORE) == "vin-store" == TreeKind.VIN_STORE.value
    for kind, page in pages.items():
        assert f"<title>{kind.value} preview: " in page.read_text()


def test_a_store_of_its_own_layout_is_not_described_in_vin_families(tmp_path: Path) -> None:
    from dataset_devkit.vin_store import build_vin_offline_store
    from tests.vin_store.conftest import make_camera_samples

    store = tmp_path / "camera-store"
    build_vin_offline_store(make_camera_samples(), store, rows_per_shard=5)
    page = preview(store, tmp_path / "page").read_text()
    text = re.sub(r"<style>.*?</style>", "", page, flags=re.S)  # CSS says font-family
    assert "camera.image" in text and "camera.meta" in text
    for word in ("famil", "backbone", "candidate_pcs"):
        assert word not in text.lower(), word
