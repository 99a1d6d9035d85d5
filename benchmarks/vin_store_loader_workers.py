"""What a forked DataLoader worker costs before its first batch, and what a full garbage
collection in it copies from the parent, for a numpy memmap and for this store.

Each (backend, round) runs in a fresh process that imports torch (as a training script
does: ~170,000 gc-tracked objects), opens the data and iterates one epoch of a
``DataLoader(num_workers=W, batch_size=32, RandomSampler)`` with ``fork`` workers. Every
worker reports, at its first collated batch, its CPU time and minor page faults since the
fork, then runs one full ``gc.collect()`` (the collection a worker that allocates meets
sooner or later) and reports that collection's CPU time and the worker's private dirty
memory afterwards: the parent's pages it had to copy.

Backends: ``memmap`` (one ``.npy`` per field, opened in the parent), ``reader`` (a plain
Dataset over ``VinOfflineStoreReader``: shards opened lazily in each worker, nothing
frozen) and ``dataset`` (``VinOfflineTorchDataset`` after ``reader.open_blocks()`` in the
parent: workers inherit the mappings and freeze the heap they inherited on first fetch).

    PYTHONPATH=src python benchmarks/vin_store_loader_workers.py --workers 8 --rounds 3
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BACKENDS = ("memmap", "reader", "dataset")
FIELDS = ("points", "pose", "label")


def _make_data(root: Path, n: int, points: int) -> None:
    """Peer-shaped samples (points f32 [P, 3], pose f32 [12], label i64 [1]) in both forms."""
    from dataset_devkit.vin_store import VinOfflineSample, build_vin_offline_store

    if (root / "done").exists():
        return
    rng = np.random.default_rng(0)
    arrays = {
        "points": rng.random((n, points, 3), dtype=np.float32),
        "pose": rng.random((n, 12), dtype=np.float32),
        "label": np.arange(n, dtype=np.int64).reshape(n, 1),
    }
    (root / "memmap").mkdir(parents=True, exist_ok=True)
    for name, values in arrays.items():
        np.save(root / "memmap" / f"{name}.npy", values)
    samples = (
        VinOfflineSample(
            sample_key=str(i),
            scene_id="s",
            snippet_id=str(i),
            arrays={k: v[i] for k, v in arrays.items()},
        )
        for i in range(n)
    )
    build_vin_offline_store(samples, root / "store", rows_per_shard=1024)
    (root / "done").write_text("ok")


def _private_dirty_kb() -> int:
    with open("/proc/self/smaps_rollup") as f:
        return sum(int(line.split()[1]) for line in f if line.startswith("Private_Dirty"))


class _Report:
    """Collate that measures the worker at its first batch (picklable, fork only)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.seen = -1

    def __call__(self, samples: list[dict[str, Any]]) -> Any:
        import torch

        out = {k: torch.stack([torch.as_tensor(s[k]) for s in samples]) for k in FIELDS}
        if self.seen != os.getpid():
            self.seen = os.getpid()
            usage = resource.getrusage(resource.RUSAGE_SELF)
            start = {"cpu_ms": 1e3 * (usage.ru_utime + usage.ru_stime), "faults": usage.ru_minflt}
            dirty = _private_dirty_kb()
            t = time.thread_time()
            gc.collect()
            start["collect_ms"] = 1e3 * (time.thread_time() - t)
            start["dirty_mb"] = dirty / 1024
            start["dirty_after_collect_mb"] = _private_dirty_kb() / 1024
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            os.write(fd, (json.dumps(start) + "\n").encode())
            os.close(fd)
        return out


def _run_one(backend: str, root: Path, workers: int, samples: int) -> dict[str, Any]:
    import torch
    from torch.utils.data import DataLoader, Dataset, RandomSampler

    torch.set_num_threads(1)

    class Memmap(Dataset[dict[str, Any]]):
        def __init__(self) -> None:
            self.arrays = {k: np.load(root / "memmap" / f"{k}.npy", mmap_mode="r") for k in FIELDS}

        def __len__(self) -> int:
            return len(self.arrays["label"])

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {k: np.array(v[i]) for k, v in self.arrays.items()}

    class PlainReader(Dataset[dict[str, Any]]):
        def __init__(self) -> None:
            from dataset_devkit.vin_store import VinOfflineStoreReader

            self.reader = VinOfflineStoreReader(root / "store")

        def __len__(self) -> int:
            return len(self.reader)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return self.reader.read_position(int(i), writeable=True)

    dataset: Any
    if backend == "memmap":
        dataset = Memmap()
    elif backend == "reader":
        dataset = PlainReader()
    else:
        from dataset_devkit.vin_store import VinOfflineTorchDataset

        dataset = VinOfflineTorchDataset(root / "store")
        dataset.reader.open_blocks()
    len(dataset)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        report = f.name
    sampler = RandomSampler(
        dataset, num_samples=samples, generator=torch.Generator().manual_seed(0)
    )
    loader = DataLoader(
        dataset,
        batch_size=32,
        sampler=sampler,
        num_workers=workers,
        collate_fn=_Report(report),
        multiprocessing_context="fork",
    )
    t = time.perf_counter()
    first = None
    count = 0
    for batch in loader:
        count += len(batch["label"])
        first = first if first is not None else time.perf_counter() - t
    elapsed = time.perf_counter() - t
    rows = [json.loads(line) for line in Path(report).read_text().splitlines()]
    os.unlink(report)
    per_worker = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return {"first_batch_s": first, "samples_per_s": count / elapsed, **per_worker}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "ddk-loader")
    parser.add_argument("--n", type=int, default=20_000, help="samples (default 20,000)")
    parser.add_argument("--points", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--samples", type=int, default=5000, help="samples per epoch")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = _run_one(args.one, args.data_dir, args.workers, args.samples)
        print(json.dumps(result))
        return
    _make_data(args.data_dir, args.n, args.points)
    results: dict[str, list[dict[str, Any]]] = {b: [] for b in BACKENDS}
    for _ in range(args.rounds):
        for backend in BACKENDS:
            argv = [sys.executable, __file__, "--one", backend, "--data-dir", str(args.data_dir)]
            argv += ["--workers", str(args.workers), "--samples", str(args.samples)]
            done = subprocess.run(argv, capture_output=True, text=True, check=True)
            results[backend].append(json.loads(done.stdout.splitlines()[-1]))
    print(
        f"load average {os.getloadavg()[0]:.1f}; {args.workers} fork workers; medians of "
        f"{args.rounds} rounds; per-worker values are medians over the workers"
    )
    columns = [
        "first_batch_s",
        "samples_per_s",
        "cpu_ms",
        "faults",
        "dirty_mb",
        "collect_ms",
        "dirty_after_collect_mb",
    ]
    print("| backend | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for backend, rows in results.items():
        cells = [f"{statistics.median(r[c] for r in rows):.3g}" for c in columns]
        print(f"| {backend} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
