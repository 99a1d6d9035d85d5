"""The demo's trees, built once per session, and one preview of each kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.demo import run_demo
from dataset_devkit.preview import Kind, preview

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


@pytest.fixture(scope="session")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    for _ in run_demo(root, STEPS):
        pass
    return root


@pytest.fixture(scope="session")
def pages(demo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[Kind, Path]:
    """``index.html`` of a preview of every kind, drawn once."""
    out = tmp_path_factory.mktemp("pages")
    return {kind: preview(demo_root / rel, out / kind.value) for kind, rel in TREES.items()}
