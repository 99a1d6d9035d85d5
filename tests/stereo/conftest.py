"""Shared fixtures: one generated render export and the dataset built from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.stereo import BuildResult, build_stereo_dataset, make_sample_source

FRAMES = 13  # 4 depth chunks, the last one partial
WIDTH, HEIGHT = 64, 48


@pytest.fixture(scope="session")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-pair export with depth (read-only by convention: copy before changing it)."""
    return make_sample_source(
        tmp_path_factory.mktemp("src") / "export",
        pairs=3,
        frames=FRAMES,
        width=WIDTH,
        height=HEIGHT,
    )


@pytest.fixture(scope="session")
def built(source: Path, tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    """The dataset built from ``source``."""
    return build_stereo_dataset(source, tmp_path_factory.mktemp("out") / "GenVR-duo-20261023")
