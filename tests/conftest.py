"""Shared fixtures: environment for subprocesses that import the package under test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dataset_devkit
from dataset_devkit.integrity import write_manifest
from tests.scale_tree import TreeShape, make_genvr_tree


@pytest.fixture
def package_env() -> dict[str, str]:
    """Environment for a child Python that imports the same ``dataset_devkit`` as the tests."""
    env = dict(os.environ)
    source_root = str(Path(dataset_devkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
    return env


#: Pairs in the scale tests' GenVR-shaped tree: 260 sibling scene directories in one map
#: (more than the 256 descriptors allowed) and ~3,900 directories and 13,000 files in all.
#: ``benchmarks/release_scale_tree.py`` runs the same commands on all 2,008 pairs.
SCALE_PAIRS = 520


@pytest.fixture(scope="session")
def genvr_tree(tmp_path_factory: pytest.TempPathFactory) -> TreeShape:
    """A small-file GenVR-duo tree with its content manifest (shared: never change it)."""
    shape = make_genvr_tree(tmp_path_factory.mktemp("scale") / "GenVR-duo-20261023", SCALE_PAIRS)
    write_manifest(shape.root)
    return shape
