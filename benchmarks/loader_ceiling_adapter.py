"""A peer-harness backend that reads nothing: the ceiling of the harness's DataLoader columns.

Every sample is built once, in ``open()``, as the dict of materialised arrays the harness
asks for; ``__getitem__`` returns that same dict and ``get_many`` a list of them. What is
left in the harness's DataLoader columns is the loader's own work per sample and batch
(the sampler, the harness's ``collate`` stacking the arrays into tensors, moving them to
shared memory, pickling the records, the queue to the main process), which every backend
pays the same. No store can beat this figure in those columns, so a store's ratio over
numpy memmap there is bounded by this backend's ratio over numpy memmap, measured in the
same run::

    cd /work/shared/bench/peers
    PYTHONPATH=/path/to/dataset-devkit/src:/path/to/dataset-devkit/benchmarks \\
        python -m peerbench.run --data-dir /tmp/vin-peerbench-data --cold no \\
        --backends numpy-memmap --loader-modes item,batched \\
        --adapter loader-ceiling=loader_ceiling_adapter:PreloadedSamples \\
        --adapter vin-store=vin_store_peer_adapter:VinStore

Forked DataLoader workers inherit the prebuilt samples; ``after_fork`` only freezes the
inherited heap (20,000 dicts would otherwise be walked by each worker's first collection,
the first-batch cost the store's own torch datasets avoid the same way).
"""

from __future__ import annotations

import gc
import os
import shutil
from typing import Any

import numpy as np
from peerbench.adapters.base import Adapter, pkg_version

_FILES = ("points.npy", "pose.npy", "label.npy", "records.bin", "record_offsets.npy")


class PreloadedSamples(Adapter):  # type: ignore[misc]
    name = "loader-ceiling"
    fork_safe = True  # plain in-memory arrays: nothing to reopen in a worker
    imports = ("numpy",)

    def write(self, samples_dir: str) -> None:
        os.makedirs(self.root, exist_ok=True)
        for name in _FILES:
            shutil.copyfile(os.path.join(samples_dir, name), os.path.join(self.root, name))

    def open(self) -> None:
        root = self.root
        points = np.load(os.path.join(root, "points.npy"))
        pose = np.load(os.path.join(root, "pose.npy"))
        label = np.load(os.path.join(root, "label.npy"))
        offsets = np.load(os.path.join(root, "record_offsets.npy"))
        with open(os.path.join(root, "records.bin"), "rb") as stream:
            records = np.frombuffer(stream.read(), dtype=np.uint8)
        self.samples: list[dict[str, Any]] = [
            {
                "points": points[i].copy(),
                "pose": pose[i].copy(),
                "label": label[i].copy(),
                "record": records[offsets[i] : offsets[i + 1]].copy(),
            }
            for i in range(points.shape[0])
        ]
        self._opened = True

    def close(self) -> None:
        self.__dict__.pop("samples", None)

    def after_fork(self) -> None:
        gc.freeze()

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.samples[i]

    def get_many(self, idxs: Any) -> list[dict[str, Any]]:
        samples = self.samples
        return [samples[int(i)] for i in idxs]

    def versions(self) -> dict[str, str]:
        return {"numpy": pkg_version("numpy")}
