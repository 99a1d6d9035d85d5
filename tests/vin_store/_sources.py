"""Module-level sample producers: picklable, so process pools and Dask workers can run them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from dataset_devkit.vin_store import VinOfflineSample


def sample(i: int) -> VinOfflineSample:
    """Item *i*: the same arrays and record whoever makes it."""
    rng = np.random.default_rng(i)
    return VinOfflineSample(
        sample_key=f"scene{i // 5}/snip{i}",
        scene_id=f"scene{i // 5}",
        snippet_id=f"snip{i}",
        arrays={
            "vin.points_world": rng.random((16, 3), dtype=np.float32),
            "vin.lengths": np.array([i], dtype=np.int64),
        },
        records={"oracle.candidate_pcs": {"i": i, "xs": [0.5] * (i % 3)}},
    )


def produce(start: int, stop: int) -> Iterator[VinOfflineSample]:
    """Items [start, stop)."""
    return (sample(i) for i in range(start, stop))


def produce_slowly(start: int, stop: int) -> Iterator[VinOfflineSample]:
    """Items [start, stop), 0.3 s per call: slow enough to kill a build midway."""
    time.sleep(0.3)
    return produce(start, stop)


def produce_one_short(start: int, stop: int) -> Iterator[VinOfflineSample]:
    """A broken source: one sample fewer than asked."""
    return produce(start, stop - 1)
