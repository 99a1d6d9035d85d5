"""Large samples like real VIN ones: 2 MiB of float16 voxel features each, made on demand."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dataset_devkit.vin_store import VinOfflineSample


def produce(start: int, stop: int) -> Iterator[VinOfflineSample]:
    """Items [start, stop): a fresh 2 MiB array per sample, never kept by the producer."""
    for i in range(start, stop):
        voxels = np.full((16, 256, 256), i % 251, dtype=np.float16)  # 16 * 256 * 256 * 2 B
        yield VinOfflineSample(
            sample_key=f"big-{i}",
            scene_id="scene",
            snippet_id=f"snip-{i}",
            arrays={"backbone.occ_pr": voxels, "vin.lengths": np.array([i], np.int64)},
            records={"meta": {"i": i}},
        )
