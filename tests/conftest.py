"""Shared fixtures: environment for subprocesses that import the package under test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import dataset_devkit
from dataset_devkit.integrity import write_manifest
from tests.s3_server import S3Server, running_s3_server
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


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One real S3 server (moto, on 127.0.0.1) for the whole test session."""
    with running_s3_server() as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh empty bucket, with the AWS environment pointing every client at the server."""
    for name, value in s3_server.environment.items():
        monkeypatch.setenv(name, value)
    return s3_server.create_bucket()
