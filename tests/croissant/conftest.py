"""The demo's trees, built once per session, for the Croissant tests (read-only inputs)."""

from __future__ import annotations

import importlib
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.optional import need

#: Tree kind -> (demo step, the tree it publishes, relative to the step's folder).
DEMO_TREES: dict[str, tuple[str, str]] = {
    "vin-store": ("vin_store", "vin-offline-store"),
    "stereo-dataset": ("stereo", "GenVR-duo-20261023"),
    "nuscenes-dataroot": ("nuscenes_publish", "out/v1.0-trainval"),
    "release": ("release", "GenVR-duo-demo-packages"),
    "restored-release": ("release", "data/GenVR-duo-demo"),
    "content-manifest-tree": ("integrity", "published"),
}


@pytest.fixture(scope="session")
def demo_trees(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    need("nuscenes")  # the demo's nuScenes build validates with the official loader
    out = tmp_path_factory.mktemp("croissant-demo")
    for step in sorted({step for step, _ in DEMO_TREES.values()}):
        importlib.import_module(f"dataset_devkit.demo.{step}").run(out / step)
    yield {kind: out / step / rel for kind, (step, rel) in DEMO_TREES.items()}
    for path in [out, *out.rglob("*")]:  # published trees are read-only
        if not path.is_symlink():
            path.chmod(stat.S_IRWXU)
