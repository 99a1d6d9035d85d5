"""Random access from an S3 server: our cached reader vs MosaicML Streaming vs our local reader.

The dataset has the peer harness's shape (``/work/shared/bench/peers``): per sample
``points`` float32 [P, 3], ``pose`` float32 [12], ``label`` int64 [1] and a ~150-byte
MessagePack record; 20,000 samples by default (~0.5 GB). Both trees are uploaded to a moto
S3 server on 127.0.0.1 (the one the tests use). Then, in the same run, a torch DataLoader
(2 fork workers, batch 32, ``RandomSampler(num_samples=--reads)``, the same seed) reads:

* ours, cold: ``VinOfflineStoreConfig.from_url("s3://...", cache_dir=<empty>)``
* ours, warm: the same, again, with the cache now filled (new workers, new reader)
* MDS, cold: ``StreamingDataset(remote="s3://...", local=<empty>)`` indexed per item
  (endpoint from ``S3_ENDPOINT_URL``, set to the same server)
* ours, local: ``VinOfflineStoreReader(<local store>)`` (the store that was uploaded)

It also times one ranged GET of a row against one GET of a whole chunk file: the
measurement behind caching whole files rather than fetching rows by byte range.

Usage::

    PYTHONPATH=src python benchmarks/objectstore_remote_read.py --n 20000 --reads 5000
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.s3_server

from tests.s3_server import running_s3_server

from dataset_devkit.objectstore import open_location
from dataset_devkit.vin_store import (
    VinOfflineSample,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    build_vin_offline_store,
)


def _torchvision_placeholder() -> None:
    """mosaicml-streaming imports torchvision at import time; PyPI's torchvision does not
    load beside the local CPU torch, so register the two names streaming imports (its MDS
    path never calls them) when torchvision is absent, as the peer harness does."""
    try:
        import torchvision  # noqa: F401
    except Exception:
        import torch.utils.data

        def module(name: str) -> Any:
            made = types.ModuleType(name)
            made.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = made
            return made

        def unavailable(*args: object, **kwargs: object) -> Any:
            raise RuntimeError("torchvision placeholder: not available")

        tv, ds = module("torchvision"), module("torchvision.datasets")
        tr, fn = module("torchvision.transforms"), module("torchvision.transforms.functional")
        ds.VisionDataset = ds.CIFAR10 = torch.utils.data.Dataset
        fn.to_tensor = unavailable
        tv.datasets, tv.transforms, tr.functional = ds, tr, fn
        tv.__version__ = "0+placeholder"


def samples(n: int, points: int) -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(0)
    enc = msgspec.msgpack.Encoder(order="deterministic")
    for i in range(n):
        yield {
            "points": rng.random((points, 3), dtype=np.float32),
            "pose": rng.random(12, dtype=np.float32),
            "label": np.array([i], dtype="<i8"),
            "record": enc.encode(
                {"id": i, "scene": f"scene-{i // 50:05d}", "text": "x" * (100 + i % 60)}
            ),
        }


def write_ours(root: Path, n: int, points: int, rows: int | None = None) -> None:
    def items() -> Iterator[VinOfflineSample]:
        for i, s in enumerate(samples(n, points)):
            yield VinOfflineSample(
                sample_key=str(i),
                scene_id="synthetic",
                snippet_id=str(i),
                arrays={k: s[k] for k in ("points", "pose", "label")},
                records={"record": msgspec.Raw(s["record"])},
            )

    with ThreadPoolExecutor(2) as pool:
        build_vin_offline_store(items(), root, rows_per_shard=rows, executor=pool)


def write_mds(root: Path, n: int, points: int) -> None:
    from streaming import MDSWriter

    columns = {
        "points": f"ndarray:float32:{points},3",
        "pose": "ndarray:float32:12",
        "label": "ndarray:int64:1",
        "record": "bytes",
    }
    with MDSWriter(out=str(root), columns=columns, compression=None, size_limit=1 << 26) as w:
        for s in samples(n, points):
            w.write(s)


def upload(root: Path, url: str) -> int:
    import obstore

    store = open_location(url).store
    files = sorted(p for p in root.rglob("*") if p.is_file())

    def put(path: Path) -> int:
        obstore.put(store, path.relative_to(root).as_posix(), path)
        return path.stat().st_size

    with ThreadPoolExecutor(4) as pool:
        return sum(pool.map(put, files))


class OursDataset:
    def __init__(self, config: VinOfflineStoreConfig | Path) -> None:
        self.reader = VinOfflineStoreReader(config)

    def __len__(self) -> int:
        return len(self.reader)

    def __getitem__(self, i: int) -> dict[str, Any]:
        out = self.reader.read_position(int(i), decode_records=False, writeable=True)
        out["record"] = np.frombuffer(out["record"], np.uint8).copy()
        return out


class MDSDataset:
    def __init__(self, remote: str, local: Path) -> None:
        from streaming import StreamingDataset
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
        self.ds = StreamingDataset(remote=remote, local=str(local), shuffle=False, batch_size=1)

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int) -> dict[str, Any]:
        s = self.ds[int(i)]
        return {
            "points": s["points"],
            "pose": s["pose"],
            "label": s["label"],
            "record": np.frombuffer(s["record"], np.uint8),
        }


def collate(batch: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    return {
        "points": torch.from_numpy(np.stack([b["points"] for b in batch])),
        "pose": torch.from_numpy(np.stack([b["pose"] for b in batch])),
        "label": torch.from_numpy(np.stack([b["label"] for b in batch])),
        "record": [b["record"] for b in batch],
    }


def loader_rate(dataset: Any, reads: int, workers: int) -> float:
    """Samples/s through a DataLoader, from ``iter()`` to the last sample."""
    import torch

    generator = torch.Generator().manual_seed(0)
    sampler = torch.utils.data.RandomSampler(dataset, num_samples=reads, generator=generator)
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=32,
        sampler=sampler,
        num_workers=workers,
        collate_fn=collate,
        multiprocessing_context="fork",
    )
    start = time.perf_counter()
    count = sum(len(batch["record"]) for batch in loader)
    elapsed = time.perf_counter() - start
    assert count == reads
    return reads / elapsed


def range_vs_whole(url: str, local_store: Path) -> dict[str, float]:
    """Seconds for one ranged GET of a 24 KB row vs one GET of a whole chunk file."""
    import obstore

    store = open_location(url).store
    chunk = next(p for p in sorted(local_store.rglob("points/c/0/0/0")))
    key = chunk.relative_to(local_store).as_posix()
    size = chunk.stat().st_size
    row = 24_576
    ranged, whole = [], []
    for k in range(20):
        t = time.perf_counter()
        obstore.get_range(store, key, start=(k * 37 % 1000) * row, length=row)
        ranged.append(time.perf_counter() - t)
    for _ in range(3):
        t = time.perf_counter()
        obstore.get(store, key).bytes()
        whole.append(time.perf_counter() - t)
    r, w = statistics.median(ranged), statistics.median(whole)
    return {
        "ranged_get_s": r,
        "whole_file_get_s": w,
        "whole_file_bytes": size,
        "rows_per_file": size // row,
        "rows_worth_one_whole_get": w / r,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--points", type=int, default=2048)
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    _torchvision_placeholder()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto logs every request
    work = args.data_dir or Path(tempfile.mkdtemp(prefix="remote-read-"))
    work.mkdir(parents=True, exist_ok=True)
    ours_local, mds_local = work / f"ours-{args.n}", work / f"mds-{args.n}"
    if not ours_local.exists():
        write_ours(ours_local, args.n, args.points)
    if not mds_local.exists():
        write_mds(mds_local, args.n, args.points)
    results: dict[str, Any] = {"n": args.n, "reads": args.reads, "workers": args.workers}
    with running_s3_server() as server:
        os.environ.update(server.environment)
        os.environ["S3_ENDPOINT_URL"] = server.endpoint  # what MosaicML Streaming reads
        bucket = server.create_bucket("bench")
        ours_url, mds_url = f"s3://{bucket}/ours", f"s3://{bucket}/mds"
        results["uploaded_bytes"] = upload(ours_local, ours_url) + upload(mds_local, mds_url)
        results["range_vs_whole"] = range_vs_whole(ours_url, ours_local)
        print(json.dumps(results["range_vs_whole"]), file=sys.stderr, flush=True)
        rates: dict[str, list[float]] = {}
        for _ in range(args.repeats):
            cache = work / "cache-ours"
            mds_cache = work / "cache-mds"
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(mds_cache, ignore_errors=True)
            config = VinOfflineStoreConfig.from_url(ours_url, cache_dir=cache)
            print("timing ours (cold cache)", file=sys.stderr, flush=True)
            rates.setdefault("ours_cold", []).append(
                loader_rate(OursDataset(config), args.reads, args.workers)
            )
            rates.setdefault("ours_warm", []).append(
                loader_rate(OursDataset(config), args.reads, args.workers)
            )
            rates.setdefault("mds_cold", []).append(
                loader_rate(MDSDataset(mds_url, mds_cache), args.reads, args.workers)
            )
            rates.setdefault("mds_warm", []).append(
                loader_rate(MDSDataset(mds_url, mds_cache), args.reads, args.workers)
            )
            rates.setdefault("ours_local", []).append(
                loader_rate(OursDataset(ours_local), args.reads, args.workers)
            )
    med = {k: statistics.median(v) for k, v in rates.items()}
    results["samples_per_s"] = med
    results["cold_vs_mds_cold"] = med["ours_cold"] / med["mds_cold"]
    results["warm_vs_local"] = med["ours_warm"] / med["ours_local"]
    results["warm_vs_mds_warm"] = med["ours_warm"] / med["mds_warm"]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
