"""Shared fixtures: environment for subprocesses that import the package under test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dataset_devkit


@pytest.fixture
def package_env() -> dict[str, str]:
    """Environment for a child Python that imports the same ``dataset_devkit`` as the tests."""
    env = dict(os.environ)
    source_root = str(Path(dataset_devkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
    return env
