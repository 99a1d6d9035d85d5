"""``preview`` on every kind of tree the demo writes: the page, its PNGs, determinism."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.text import Text as MplText
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
        "nuscenes_scene000_ego.png",
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
    (Kind.NUSCENES, "nuscenes_scene000_ego.png"): [
        "path, arrow = heading (o start, X end)",
        "time (s) from the scene's first pose",
        "heading (deg, CCW from +x)",
        "speed (m/s)",
        "8 ego poses of CAM_FRONT frames over 3.5 s",
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
        "optical axis",
        "heading turns +24° over the clip",
        "frame",
        "depth (m)",
        "pixels",
    ],
    (Kind.VIN_STORE, "vin_histograms.png"): [
        "vin.points_world[..., 0]",
        "vin.points_world[..., 2]",
        "vin.t_world_rig[11]",
        "vin.lengths",
        "value",
        "count",
    ],
    (Kind.RELEASE, "release_packages.png"): [
        "package size (KiB)",
        "base/base-0001.tar",
        "base",
        "depth",
    ],
    (Kind.MANIFEST, "manifest_sizes.png"): [
        "bytes by top-level folder",
        "bytes by file type",
        "size (KiB)",
        "data/",
        ".bin",
    ],
}


def test_each_figure_draws_its_labels(
    pages: dict[Kind, Path], figure_texts: dict[tuple[str, str], list[str]]
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


def test_scene_grid_cells_give_seconds_from_the_scene_start(
    demo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PIL import ImageDraw

    drawn: list[str] = []
    real = ImageDraw.ImageDraw.text

    def recording(self: ImageDraw.ImageDraw, xy: Any, text: Any, *args: Any, **kw: Any) -> None:
        drawn.append(str(text))
        real(self, xy, text, *args, **kw)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", recording)
    preview(demo_root / TREES[Kind.NUSCENES], tmp_path / "page", scenes=1, rows=8)
    cells = [t for t in drawn if t.startswith("CAM_")]
    assert len(cells) == 8 * 3
    assert all(re.fullmatch(r"CAM_\w+ · \+\d+\.\d\d s", t) for t in cells), cells
    assert {t.split(" · ")[1] for t in cells} == {f"+{0.5 * i:.2f} s" for i in range(8)}
    assert not any(re.search(r"\d{10}", t) for t in drawn)  # no raw microseconds


def _pan(degrees: float, frames: int = 13) -> list[list[list[float]]]:
    """camera_to_world of a camera turning *degrees* in place (OpenCV axes, y down)."""
    poses = []
    for i in range(frames):
        yaw = np.radians(degrees * i / (frames - 1))
        c, s_ = np.cos(yaw), np.sin(yaw)
        poses.append([[c, 0, s_, 2.0], [0, 1, 0, -1.5], [-s_, 0, c, 4.0], [0, 0, 0, 1]])
    return poses


def test_a_pan_in_place_is_drawn_as_a_turning_heading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from matplotlib.quiver import Quiver

    from dataset_devkit.preview import stereo as stereo_preview
    from dataset_devkit.preview.figures import save

    for eye in ("left", "right"):
        (tmp_path / f"{eye}.json").write_text(json.dumps({"camera_to_world": _pan(94.0)}))
    seen: dict[str, Any] = {}

    def recording(fig: Any, where: Path, name: str, caption: str) -> Any:
        item = save(fig, where, name, caption)
        seen["texts"] = [t.get_text() for t in fig.findobj(MplText)]
        seen["arrows"] = [q for ax in fig.axes for q in ax.collections if isinstance(q, Quiver)]
        return item

    monkeypatch.setattr(stereo_preview, "save", recording)
    row = SimpleNamespace(left_camera="left.json", right_camera="right.json")
    sample = SimpleNamespace(depth=None, frames=[0, 6, 12], id="pan")
    stereo_preview._stats(tmp_path, row, sample, tmp_path, 0, 9.0)  # type: ignore[arg-type]
    assert "heading turns +94° over the clip" in seen["texts"]
    (arrows,) = seen["arrows"]
    angles = np.degrees(np.arctan2(arrows.U, arrows.V))  # from +z towards +x, as drawn
    assert angles[0] == pytest.approx(0, abs=1e-6) and angles[-1] == pytest.approx(94, abs=1e-6)
    assert np.all(np.hypot(arrows.U, arrows.V) > 0.5)  # visible with no path to scale them by
    turning = stereo_preview.heading_degrees(np.asarray(_pan(270.0), np.float64))
    assert turning[-1] - turning[0] == pytest.approx(270)  # past 180° without a jump


def test_image_blocks_get_thumbnails_and_channel_counts_not_a_pooled_histogram(
    extra_pages: dict[str, Path], figure_texts: dict[tuple[str, str], list[str]]
) -> None:
    page = extra_pages["camera-store"]
    with Image.open(page.parent / "vin_images00.png") as strip:
        pixels = np.asarray(strip.convert("RGB"))
    assert strip.height == 96 + 22 and strip.width > 8 * 96  # eight 24x32 frames at 96 px
    assert (pixels[..., 2] > 200).sum() > 1000  # the frames' blue squares
    channels = figure_texts[("camera-store", "vin_channels00.png")]
    assert {"R", "G", "B", "camera.image: values per channel"} <= set(channels)
    panels = figure_texts[("camera-store", "vin_histograms.png")]
    assert {"camera.pose[0]", "camera.pose[1]", "camera.pose[2]"} <= set(panels)
    assert not any(t.startswith("camera.image") for t in panels)


def test_the_release_legend_is_clear_of_the_bars(demo_root: Path, tmp_path: Path) -> None:
    from matplotlib.patches import Rectangle

    from dataset_devkit.preview import release as release_preview
    from dataset_devkit.preview.figures import save

    kept: dict[str, Any] = {}

    def keep(fig: Any, where: Path, name: str, caption: str) -> Any:
        item = save(fig, where, name, caption)
        renderer = fig.canvas.get_renderer()
        (ax,) = fig.axes
        legend = ax.get_legend().get_window_extent(renderer)
        bars = [p.get_window_extent(renderer) for p in ax.patches if isinstance(p, Rectangle)]
        kept["overlaps"] = [b for b in bars if b.overlaps(legend)]
        kept["bars"], kept["label"] = bars, ax.get_xlabel()
        return item

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(release_preview, "save", keep)
        release_preview.render_release(demo_root / TREES[Kind.RELEASE], tmp_path)
    assert len(kept["bars"]) == 7 and kept["overlaps"] == []
    assert kept["label"] == "package size (KiB)"


@pytest.mark.parametrize("name", ["restored-stereo", "restored-stereo-base"])
def test_a_restored_stereo_dataset_shows_its_frames(
    extra_pages: dict[str, Path], name: str
) -> None:
    page = extra_pages[name]
    text = page.read_text()
    assert "Restore state" in text and "Stereo pairs" in text
    assert "<title>restored-release preview: GenVR-duo-20261023</title>" in text
    for png in ("stereo_pair000_views.png", "stereo_pair000_stats.png"):
        assert png in text and (page.parent / png).is_file()
    assert ("this index has no depth" in text) is (name == "restored-stereo-base")


def test_large_rows_are_read_for_as_few_rows_as_their_limit_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.preview import vin as vin_preview
    from dataset_devkit.vin_store import VinOfflineStoreReader, build_vin_offline_store
    from tests.vin_store.conftest import make_camera_samples

    store = tmp_path / "camera-store"
    build_vin_offline_store(make_camera_samples(), store, rows_per_shard=5)
    monkeypatch.setattr(vin_preview, "MAX_VALUES", 6)  # camera.pose rows: 3 values -> 2 rows
    reads: list[tuple[int, tuple[str, ...]]] = []
    real = VinOfflineStoreReader.read_positions

    def spy(self: VinOfflineStoreReader, positions: Any, blocks: Any = None, **kw: Any) -> Any:
        reads.append((len(positions), tuple(blocks)))
        return real(self, positions, blocks, **kw)

    monkeypatch.setattr(VinOfflineStoreReader, "read_positions", spy)
    preview(store, tmp_path / "page")
    rows = {name: sum(n for n, blocks in reads if name in blocks) for _, b in reads for name in b}
    assert rows == {"camera.image": 8, "camera.pose": 2}
