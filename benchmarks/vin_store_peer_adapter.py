"""Adapter that plugs the VIN offline store into the peer harness (``/work/shared/bench/peers``).

The harness runs in its own venv (its README, section 1: ``/tmp/peerbench-venv``, numpy 2);
this adapter also needs ``msgspec`` there (``/tmp/peerbench-venv/bin/pip install msgspec``).
Side by side with every default peer plus TensorStore, at the issue's size (20,000 samples,
5,000 reads; ``--cold no`` keeps the harness from dropping the whole page cache)::

    cd /work/shared/bench/peers
    PYTHONPATH=/work/wt-vin-store/src:/work/wt-vin-store/benchmarks \\
        /tmp/peerbench-venv/bin/python -m peerbench.run --data-dir /tmp/vin-peerbench-data \\
        --cold no \\
        --backends numpy-memmap,mds,litdata,hf-datasets,lance,zarr3-c1,zarr3-c64,ts-zarr3-c64 \\
        --adapter vin-store=vin_store_peer_adapter:VinStore --md /tmp/vin-peerbench-data/table.md

The reader is fork safe, so the harness's DataLoader columns use ``fork`` workers for it.
``open()`` maps every shard's blocks (``open_blocks``), so forked workers inherit the
mappings; ``after_fork()`` freezes the heap a worker inherited, as the library's torch
datasets do on their first fetch in a worker (see "DataLoader workers" in docs/vin_store.md).
"""

from __future__ import annotations

import gc
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from peerbench.adapters.base import Adapter, pkg_version
from peerbench.gen import Source

from dataset_devkit.vin_store import (
    VinOfflineSample,
    VinOfflineStoreReader,
    build_vin_offline_store,
)

FIELDS = ("points", "pose", "label")


class VinStore(Adapter):  # type: ignore[misc]
    name = "vin-store"
    fork_safe = True  # mmaps only: no threads, locks or descriptors to inherit
    imports = ("dataset_devkit.vin_store",)

    def _store(self) -> Path:
        return Path(self.root) / "store"

    def write(self, samples_dir: str) -> None:
        src = Source(samples_dir)
        os.makedirs(self.root, exist_ok=True)

        def samples() -> Any:
            for i in range(len(src)):
                yield VinOfflineSample(
                    sample_key=str(i),
                    scene_id="synthetic",
                    snippet_id=str(i),
                    arrays={k: np.array(getattr(src, k)[i]) for k in FIELDS},
                    records={"record": msgspec.Raw(src.record_bytes(i))},  # stored verbatim
                )

        with ThreadPoolExecutor(2) as pool:  # shard writing releases the GIL in zarr/numpy
            build_vin_offline_store(
                samples(),
                self._store(),
                rows_per_shard=int(self.options.get("rows", 1024)),
                executor=pool,
            )

    def open(self) -> None:
        self.reader = VinOfflineStoreReader(self._store())
        self.reader.open_blocks()  # manifest, sidecar, split and every block's mapping
        self._opened = True

    def close(self) -> None:
        self.__dict__.pop("reader", None)

    def after_fork(self) -> None:
        # The mappings opened in the parent are inherited: nothing to reopen. Freezing keeps
        # the worker's collections off the ~170,000 objects it inherited (torch's included).
        gc.freeze()

    def __len__(self) -> int:
        return len(self.reader)

    def __getitem__(self, i: int) -> dict[str, Any]:
        out = self.reader.read_position(int(i), decode_records=False, writeable=True)
        out["record"] = np.frombuffer(out["record"], np.uint8).copy()
        return out

    def get_many(self, idxs: Any) -> list[dict[str, Any]]:
        batch = self.reader.read_positions(idxs, decode_records=False, writeable=True)
        return [
            {
                "points": batch["points"][k],
                "pose": batch["pose"][k],
                "label": batch["label"][k],
                "record": np.frombuffer(rec, np.uint8).copy(),
            }
            for k, rec in enumerate(batch["record"])
        ]

    def native_loader(self, batch_size: int, num_workers: int, seed: int, collate_fn: Any) -> Any:
        """The store's own batched loader: the harness's (b3) column.

        ``VinOfflineBatchedTorchDataset.loader`` reads each batch in one gather, straight
        into one shared-memory file that the main process maps (the batch the harness's
        ``collate_fn`` would build: stacked tensors per fixed field, the list of records),
        so *collate_fn* is not used. Shuffled with torch's ``RandomSampler`` seeded by
        *seed*; ``fork`` workers inherit the mappings ``open()`` made.
        """
        import torch

        from dataset_devkit.vin_store import VinOfflineBatchedTorchDataset

        self.open()  # the harness does not open a backend before its native loader
        dataset = VinOfflineBatchedTorchDataset(self.reader, raw_records=True)
        generator = torch.Generator()
        generator.manual_seed(seed)
        return dataset.loader(
            batch_size,
            num_workers=num_workers,
            shuffle=True,
            generator=generator,
            multiprocessing_context="fork" if num_workers else None,
        )

    def data_paths(self) -> list[str]:
        return [str(self._store())]

    def versions(self) -> dict[str, str]:
        return {"zarr (writer only)": pkg_version("zarr"), "msgspec": pkg_version("msgspec")}
