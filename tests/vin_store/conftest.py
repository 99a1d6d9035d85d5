"""Tiny stores built in tmp_path for the vin_store tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from dataset_devkit.vin_store import VinOfflineSample, build_vin_offline_store

NUM_SAMPLES = 11
ROWS_PER_SHARD = 4


def make_samples(
    n: int = NUM_SAMPLES, *, sparse: bool = True, seed: int = 0, with_records: bool = True
) -> list[VinOfflineSample]:
    """Samples with points, a pose, a label, a trajectory block and (optionally) records."""
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(n):
        records = {"oracle.candidate_pcs": {"i": i, "name": f"cand-{i}", "xs": [0.5] * (i % 3)}}
        samples.append(
            VinOfflineSample(
                sample_key=f"scene{i // 5}/snip{i}",
                scene_id=f"scene{i // 5}",
                snippet_id=f"snip{i}",
                arrays={
                    "vin.points_world": rng.random((16, 3), dtype=np.float32),
                    "vin.t_world_rig": rng.random(12, dtype=np.float32),
                    "vin.lengths": np.array([i], dtype=np.int64),
                    "vin.trajectory.time_ns": np.array([1000 * i], dtype=np.int64),
                },
                records=records if with_records else {},
                sample_index=(3 * i + 1) if sparse else None,
            )
        )
    return samples


@pytest.fixture
def sample_factory() -> Callable[..., list[VinOfflineSample]]:
    return make_samples


@pytest.fixture
def samples() -> list[VinOfflineSample]:
    return make_samples()


@pytest.fixture
def store(tmp_path: Path, samples: list[VinOfflineSample]) -> Iterator[Path]:
    out = tmp_path / "store"
    with ThreadPoolExecutor(2) as pool:
        build_vin_offline_store(
            samples, out, rows_per_shard=ROWS_PER_SHARD, val_fraction=0.3, executor=pool
        )
    yield out
    # published trees are read-only; let pytest clean them up
    for path in [out, *out.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)


def make_camera_samples(n: int = 12) -> list[VinOfflineSample]:
    """A store of the user's own layout, no VIN block: camera frames, poses and metadata."""
    samples = []
    for i in range(n):
        image = np.zeros((24, 32, 3), np.uint8)
        image[..., 0] = np.linspace(0, 255, 32, dtype=np.uint8)[None, :]
        image[4 + i : 10 + i, 4:12, 2] = 255
        samples.append(
            VinOfflineSample(
                sample_key=f"frame-{i:04d}",
                scene_id=f"drive-{i // 6}",
                snippet_id=str(i),
                arrays={
                    "camera.image": image,
                    "camera.pose": np.array([0.1 * i, 0.0, 1.5], np.float64),
                },
                records={"camera.meta": {"exposure_ms": 10.0 + i, "tags": ["day"] * (i % 3)}},
            )
        )
    return samples


@pytest.fixture
def camera_store(tmp_path: Path) -> Path:
    out = tmp_path / "camera-store"
    build_vin_offline_store(make_camera_samples(), out, rows_per_shard=5)
    return out
