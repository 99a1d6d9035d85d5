"""The demo's trees, built once per session, and one preview of each kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text as MplText

from dataset_devkit.demo import run_demo
from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.preview import Kind, preview
from dataset_devkit.preview.figures import save
from dataset_devkit.preview.page import Image
from tests.optional import need

#: Demo steps whose trees the tests draw (the publish step repeats the nuScenes kind).
STEPS = ("integrity", "nuscenes", "release", "vin_store", "stereo")

#: Each kind and where the demo writes a tree of it.
TREES: dict[Kind, str] = {
    Kind.MANIFEST: "integrity/published",
    Kind.NUSCENES: "nuscenes/staging-mcap",
    Kind.RELEASE: "release/GenVR-duo-demo-packages",
    Kind.RESTORED: "release/data/GenVR-duo-demo",
    Kind.VIN_STORE: "vin_store/vin-offline-store",
    Kind.STEREO: "stereo/GenVR-duo-20261023",
}

#: Scenes of the large published dataroot (the fleet fixture).
FLEET_SCENES = 50


@pytest.fixture(scope="session")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("nuscenes")  # the demo's nuScenes step checks its dataroot with the official loader
    root = tmp_path_factory.mktemp("demo")
    for _ in run_demo(root, STEPS):
        pass
    return root


@pytest.fixture(scope="session")
def progress_seen() -> dict[Kind, list[ProgressUpdate]]:
    """The progress updates each kind's preview in :func:`pages` reported."""
    return {}


#: Renderer modules that write matplotlib figures through ``figures.save``.
RENDERERS = (
    "manifest",
    "nuscenes",
    "nuscenes_ego",
    "nuscenes_validity",
    "release",
    "stereo",
    "vin",
)


@pytest.fixture(scope="session")
def figure_texts() -> dict[tuple[str, str], list[str]]:
    """Every text drawn in each matplotlib PNG of :func:`pages` (titles, axis and tick
    labels, legends), by kind (or :data:`EXTRA` name) and PNG name."""
    return {}


@pytest.fixture(scope="session")
def pages(
    demo_root: Path,
    tmp_path_factory: pytest.TempPathFactory,
    progress_seen: dict[Kind, list[ProgressUpdate]],
    figure_texts: dict[tuple[str, str], list[str]],
) -> dict[Kind, Path]:
    """``index.html`` of a preview of every kind, drawn once."""
    out = tmp_path_factory.mktemp("pages")
    drawn = {}
    current: list[Kind] = []

    def recording(fig: Figure, where: Path, name: str, caption: str) -> Image:
        item = save(fig, where, name, caption)  # drawn first: tick labels exist after that
        figure_texts[(current[-1], name)] = [t.get_text() for t in fig.findobj(MplText)]
        return item

    with pytest.MonkeyPatch.context() as patch:
        for module in RENDERERS:
            patch.setattr(f"dataset_devkit.preview.{module}.save", recording)
        for kind, rel in TREES.items():
            current.append(kind)
            progress_seen[kind] = []
            drawn[kind] = preview(
                demo_root / rel, out / kind.value, progress=progress_seen[kind].append
            )
    return drawn


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A published 50-scene dataroot whose extensions hold camera losses: missing grid
    points, rejected windows, and a recording that exported nothing."""
    from tests.nuscenes.dataroot_fixture import publish_fixture

    final, _ = publish_fixture(
        tmp_path_factory.mktemp("fleet"), audit=True, scenes=FLEET_SCENES, samples=3
    )
    return final


@pytest.fixture(scope="session")
def fleet_page(fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fleet drawn with the sampling flags (2 scenes, 2 key frames per grid)."""
    return preview(fleet, tmp_path_factory.mktemp("fleet-page") / "page", scenes=2, rows=2)


#: Pages of trees beyond the demo's kinds: a store of the user's own layout (camera frames)
#: and the demo's stereo dataset packed as a release and restored, whole and base only.
EXTRA = ("camera-store", "restored-stereo", "restored-stereo-base")


@pytest.fixture(scope="session")
def extra_trees(demo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from dataset_devkit.release import PackOptions, pack_release, restore_release
    from dataset_devkit.vin_store import build_vin_offline_store
    from tests.vin_store.conftest import make_camera_samples

    root = tmp_path_factory.mktemp("extra-trees")
    build_vin_offline_store(make_camera_samples(), root / "camera-store", rows_per_shard=5)
    stereo = demo_root / TREES[Kind.STEREO]
    release = root / "stereo-packages"
    pack_release(stereo, release, PackOptions(restore_test="none"))
    restore_release(release, root / "whole", ["all"], fsync=False)
    restore_release(release, root / "base", ["base"], fsync=False)
    return {
        "camera-store": root / "camera-store",
        "restored-stereo": root / "whole" / stereo.name,
        "restored-stereo-base": root / "base" / stereo.name,
    }


@pytest.fixture(scope="session")
def extra_pages(
    extra_trees: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
    figure_texts: dict[tuple[str, str], list[str]],
) -> dict[str, Path]:
    """``index.html`` of each of :data:`EXTRA`, with the texts of its figures recorded
    under ``figure_texts[(name, png)]``."""
    out = tmp_path_factory.mktemp("extra-pages")
    current: list[str] = []

    def recording(fig: Figure, where: Path, name: str, caption: str) -> Image:
        item = save(fig, where, name, caption)
        figure_texts[(current[-1], name)] = [t.get_text() for t in fig.findobj(MplText)]
        return item

    drawn = {}
    with pytest.MonkeyPatch.context() as patch:
        for module in RENDERERS:
            patch.setattr(f"dataset_devkit.preview.{module}.save", recording)
        for name, tree in extra_trees.items():
            current.append(name)
            drawn[name] = preview(tree, out / name)
    return drawn
