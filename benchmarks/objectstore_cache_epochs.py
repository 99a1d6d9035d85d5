"""Epochs from an S3 server through a size-limited cache: ours (block, full) vs MosaicML Streaming.

One dataset of the peer harness's shape (per sample ``points`` float32 [P, 3], ``pose``
float32 [12], ``label`` int64 [1] and a ~150-byte MessagePack record), written as our store
and as MDS with shards of the same size (``--rows`` samples), both uploaded to a moto S3
server on 127.0.0.1 that runs in its own process and counts the bytes it sends. Then, in
interleaved rounds, with the cache at 10 %, 50 % and 100 % of the dataset, two epochs each
(a fresh, empty cache before the first), a DataLoader of ``--workers`` fork workers and
batches of 32 reads:

* ``ours-block``: ``VinOfflineBatchedTorchDataset`` over ``from_url(..., cache_limit=...)``,
  ``VinOfflineDistributedSampler(shuffle="block")`` with the largest window the cache holds
  (its shards minus two);
* ``ours-block-np``: the same without the sampler's prefetching (``prefetch=False``);
* ``ours-full``: the same with ``shuffle="full"``; below 100 % a full shuffle downloads
  about a shard per sample, so its epochs stop after ``--full-samples`` samples and its
  bytes are given per sample read, times the epoch's samples (marked ``~``);
* ``mds``: ``StreamingDataset(remote=..., local=..., cache_limit=..., shuffle=True,
  shuffle_algo="py1e", shuffle_block_size=<ours-block's window in samples>)``;
* ``local``: our reader on the local store (the same block sampler), for the epoch-2 goal.

Samples/s count from ``iter(loader)`` to the last batch (worker start-up included); bytes
are what the server sent during the epoch. Printed: medians over rounds, and the ratios the
goals are about. Then the resume cost: a 1,000,000-sample store, a mid-epoch state of rank 0
of 4 loaded on 3 ranks, timed from ``load_state_dict`` to the first batch.

Usage::

    PYTHONPATH=src python benchmarks/objectstore_cache_epochs.py --n 10000 --points 512 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmark's helpers

from objectstore_remote_read import _torchvision_placeholder, samples, upload, write_ours

from dataset_devkit.vin_store import (
    VinOfflineBatchedTorchDataset,
    VinOfflineDistributedSampler,
    VinOfflineSample,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    VinOfflineTorchDataset,
    build_vin_offline_store,
)

#: A moto server in a process of its own (the readers' processes do not share its GIL),
#: counting the bytes of its answers to GETs; ``GET /__sent__`` reads the count.
_SERVER = r"""
import json, logging, sys, threading
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
app = server._server.app
sent = [0]
lock = threading.Lock()
def counting(environ, start_response):
    if environ.get("PATH_INFO") == "/__sent__":
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(sent[0]).encode()]
    def count(chunks):
        for chunk in chunks:
            if environ.get("REQUEST_METHOD") == "GET":
                with lock:
                    sent[0] += len(chunk)
            yield chunk
    return count(app(environ, start_response))
server._server.app = counting
print(server.get_host_and_port()[1], flush=True)
threading.Event().wait()
"""


@contextmanager
def counting_server() -> Iterator[str]:
    """Start the counting moto server; yield its endpoint; stop it on exit."""
    process = subprocess.Popen([sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()  # the server keeps nothing: its buckets live in memory
        process.wait(timeout=30)


def sent(endpoint: str) -> int:
    with urllib.request.urlopen(f"{endpoint}/__sent__") as answer:  # loopback only
        return int(json.loads(answer.read()))


def write_mds(root: Path, n: int, points: int, shard_bytes: int) -> None:
    from streaming import MDSWriter

    columns = {
        "points": f"ndarray:float32:{points},3",
        "pose": "ndarray:float32:12",
        "label": "ndarray:int64:1",
        "record": "bytes",
    }
    with MDSWriter(out=str(root), columns=columns, compression=None, size_limit=shard_bytes) as w:
        for s in samples(n, points):
            w.write(s)


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _mds_collate(batch: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    return {"label": torch.from_numpy(np.stack([b["label"] for b in batch]))}


def _count(loader: Any, limit: int | None) -> int:
    count = 0
    for batch in loader:
        count += int(batch["label"].shape[0])
        if limit is not None and count >= limit:
            break
    return count


class Run:
    """One reader over one cache size, for two epochs; the numbers it measured."""

    def __init__(self, args: argparse.Namespace, endpoint: str, work: Path) -> None:
        self.args, self.endpoint, self.work = args, endpoint, work

    def epochs(self, name: str, fraction: float, ctx: dict[str, Any]) -> list[dict[str, float]]:
        limit = max(1, int(ctx["dataset_bytes"] * fraction))
        cache = self.work / f"cache-{name}"
        shutil.rmtree(cache, ignore_errors=True)
        out = []
        make = getattr(self, f"_make_{name.replace('-', '_')}")
        holder = make(ctx, limit, cache)
        for epoch in range(2):
            before = sent(self.endpoint)
            loader, cap = holder(epoch)
            start = time.perf_counter()
            count = _count(loader, cap)
            elapsed = time.perf_counter() - start
            fetched = sent(self.endpoint) - before
            if cap is not None and count < ctx["n"]:
                fetched = int(fetched * ctx["n"] / count)  # extrapolated to the whole epoch
            out.append({"rate": count / elapsed, "bytes": fetched / ctx["dataset_bytes"]})
        return out

    def _ours(
        self, ctx: dict[str, Any], limit: int, cache: Path, shuffle: str, prefetch: bool = True
    ) -> Any:
        config = VinOfflineStoreConfig.from_url(ctx["ours_url"], cache_dir=cache, cache_limit=limit)
        dataset = VinOfflineBatchedTorchDataset(config)
        window = ctx["window"](limit)
        sampler = VinOfflineDistributedSampler(
            dataset, seed=5, shuffle=shuffle, window=window, prefetch=prefetch
        )
        capped = shuffle == "full" and limit < ctx["dataset_bytes"]

        def epoch(k: int) -> tuple[Any, int | None]:
            sampler.set_epoch(k)
            loader = dataset.loader(
                batch_size=32,
                num_workers=self.args.workers,
                sampler=sampler,
                multiprocessing_context="fork",
            )
            return loader, self.args.full_samples if capped else None

        return epoch

    def _make_ours_block(self, ctx: dict[str, Any], limit: int, cache: Path) -> Any:
        return self._ours(ctx, limit, cache, "block")

    def _make_ours_block_np(self, ctx: dict[str, Any], limit: int, cache: Path) -> Any:
        return self._ours(ctx, limit, cache, "block", prefetch=False)

    def _make_ours_full(self, ctx: dict[str, Any], limit: int, cache: Path) -> Any:
        return self._ours(ctx, limit, cache, "full")

    def _make_mds(self, ctx: dict[str, Any], limit: int, cache: Path) -> Any:
        import torch
        from streaming import StreamingDataset
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
        dataset = StreamingDataset(
            remote=ctx["mds_url"],
            local=str(cache),
            cache_limit=limit,
            shuffle=True,
            shuffle_algo="py1e",
            shuffle_seed=5,
            shuffle_block_size=ctx["window"](limit) * self.args.rows,
            batch_size=32,
        )

        def epoch(_: int) -> tuple[Any, int | None]:
            loader = torch.utils.data.DataLoader(
                dataset,
                batch_size=32,
                num_workers=self.args.workers,
                collate_fn=_mds_collate,
                multiprocessing_context="fork",
            )
            return loader, None

        return epoch


def local_rate(ctx: dict[str, Any], workers: int) -> float:
    """Our reader on the local store, with ours-block's sampler at a 100 % cache."""
    dataset = VinOfflineBatchedTorchDataset(ctx["ours_local"])
    window = ctx["window"](ctx["dataset_bytes"])
    sampler = VinOfflineDistributedSampler(dataset, seed=5, shuffle="block", window=window)
    sampler.set_epoch(1)
    loader = dataset.loader(
        batch_size=32, num_workers=workers, sampler=sampler, multiprocessing_context="fork"
    )
    start = time.perf_counter()
    count = _count(loader, None)
    return count / (time.perf_counter() - start)


def resume_cost(work: Path) -> dict[str, float]:
    """Seconds from ``load_state_dict`` to the first batch, on a 1,000,000-sample store."""
    import torch

    store = work / "resume-1m"
    if not store.exists():

        def tiny() -> Iterator[VinOfflineSample]:
            for i in range(1_000_000):
                yield VinOfflineSample(
                    sample_key=str(i),
                    scene_id="s",
                    snippet_id=str(i),
                    arrays={"vin.lengths": np.array([i], np.int64)},
                )

        with ThreadPoolExecutor(2) as pool:
            build_vin_offline_store(tiny(), store, rows_per_shard=4096, executor=pool)
    out = {}
    for shuffle in ("block", "full"):
        dataset = VinOfflineTorchDataset(VinOfflineStoreReader(store), blocks=["vin.lengths"])
        saver = VinOfflineDistributedSampler(dataset, rank=0, world_size=4, seed=1, shuffle=shuffle)
        saver.set_epoch(2)
        saver.advance(123_456)
        state = json.loads(json.dumps(saver.state_dict()))  # as read back from a checkpoint
        for workers in (0, 2):
            fresh = VinOfflineTorchDataset(VinOfflineStoreReader(store), blocks=["vin.lengths"])
            start = time.perf_counter()
            sampler = VinOfflineDistributedSampler(
                fresh, rank=1, world_size=3, seed=1, shuffle=shuffle
            )
            sampler.load_state_dict(state)
            sampler.set_epoch(2)
            loader = torch.utils.data.DataLoader(
                fresh,
                batch_size=32,
                sampler=sampler,
                num_workers=workers,
                multiprocessing_context="fork" if workers else None,
            )
            next(iter(loader))
            out[f"{shuffle}, {workers} workers"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--points", type=int, default=512)
    parser.add_argument("--rows", type=int, default=128, help="samples per shard")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--full-samples", type=int, default=640)
    parser.add_argument("--fractions", default="0.1,0.5,1.0")
    parser.add_argument(
        "--readers",
        default="ours-block,ours-full,mds",
        help="comma-separated, of ours-block, ours-block-np, ours-full, mds",
    )
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--no-resume", action="store_true", help="skip the resume cost")
    args = parser.parse_args()
    _torchvision_placeholder()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    work = args.data_dir or Path(tempfile.mkdtemp(prefix="cache-epochs-"))
    work.mkdir(parents=True, exist_ok=True)
    ours_local = work / f"ours-{args.n}-{args.points}-{args.rows}"
    mds_local = work / f"mds-{args.n}-{args.points}-{args.rows}"
    if not ours_local.exists():
        write_ours(ours_local, args.n, args.points, args.rows)
    sample_bytes = tree_bytes(ours_local / "shards") / args.n
    if not mds_local.exists():
        write_mds(mds_local, args.n, args.points, int(sample_bytes * args.rows))
    dataset_bytes = tree_bytes(ours_local)
    shard_bytes = sample_bytes * args.rows
    opening = dataset_bytes - tree_bytes(ours_local / "shards")

    def window(limit: int) -> int:  # the cache's shards, minus two
        return max(1, min(16, math.floor((limit - opening) / shard_bytes) - 2))

    fractions = [float(f) for f in args.fractions.split(",")]
    readers = args.readers.split(",")
    results: dict[tuple[str, float], list[list[dict[str, float]] | None]] = {}
    refused: dict[tuple[str, float], str] = {}
    local: list[float] = []
    with counting_server() as endpoint:
        os.environ.update(
            AWS_ENDPOINT_URL=endpoint,
            S3_ENDPOINT_URL=endpoint,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_DEFAULT_REGION="us-east-1",
        )
        import boto3

        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench")
        upload(ours_local, "s3://bench/ours")
        upload(mds_local, "s3://bench/mds")
        ctx = {
            "n": args.n,
            "dataset_bytes": dataset_bytes,
            "ours_url": "s3://bench/ours",
            "mds_url": "s3://bench/mds",
            "ours_local": ours_local,
            "window": window,
        }
        run = Run(args, endpoint, work)
        for round_ in range(args.rounds):
            for fraction in fractions:
                for name in readers:
                    try:
                        measured = run.epochs(name, fraction, ctx)
                    except ValueError as exc:  # MDS refuses a cache below 4 shards
                        refused[(name, fraction)] = f"refused: {str(exc)[:70]}"
                        measured = None
                    results.setdefault((name, fraction), []).append(measured)
            local.append(local_rate(ctx, args.workers))
            print(f"round {round_ + 1} done", file=sys.stderr)
    print(
        f"{args.n} samples of {sample_bytes / 1e3:.1f} kB, {dataset_bytes / 1e6:.1f} MB in "
        f"{math.ceil(args.n / args.rows)} shards of {args.rows}; {args.rounds} rounds "
        f"(medians), {args.workers} workers, batch 32; load average {os.getloadavg()}"
    )
    columns = ["reader", "cache", "window", "epoch 1 samples/s", "epoch 1 bytes"]
    columns += ["epoch 2 samples/s", "epoch 2 bytes"]
    print("| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")
    med: dict[tuple[str, float, int], dict[str, float]] = {}
    for (name, fraction), rounds in results.items():
        shown = "-" if name == "ours-full" else str(window(int(dataset_bytes * fraction)))
        if any(r is None for r in rounds):
            print(f"| {name} | {fraction:.0%} | {shown} | {refused[(name, fraction)]} | | | |")
            continue
        for epoch in range(2):
            med[(name, fraction, epoch)] = {
                k: statistics.median(r[epoch][k] for r in rounds if r) for k in ("rate", "bytes")
            }
        e1, e2 = med[(name, fraction, 0)], med[(name, fraction, 1)]
        mark = "~" if name == "ours-full" and fraction < 1 else ""
        cells = [f"{e1['rate']:.0f}", f"{mark}{e1['bytes']:.2f}x"]
        cells += [f"{e2['rate']:.0f}", f"{mark}{e2['bytes']:.2f}x"]
        print(f"| {name} | {fraction:.0%} | {shown} | " + " | ".join(cells) + " |")
    local_med = statistics.median(local)
    print(f"| local (ours, block) | - | {window(dataset_bytes)} | - | - | {local_med:.0f} | - |")
    if "mds" in readers and "ours-block" in readers:
        for fraction in fractions:
            if ("mds", fraction, 0) not in med:
                continue
            ratio = med[("ours-block", fraction, 0)]["rate"] / med[("mds", fraction, 0)]["rate"]
            print(f"epoch 1, cache {fraction:.0%}: ours-block {ratio:.2f}x MDS (goal >= 1.5x)")
    if "ours-block" in readers:
        low = min(fractions)
        first, second = (med[("ours-block", low, e)]["bytes"] for e in (0, 1))
        print(
            f"bytes per epoch, block, cache {low:.0%}: {first:.2f}x / {second:.2f}x the "
            "dataset (epoch 1 / 2; goal <= 1.1x)"
        )
        if 1.0 in fractions:
            ratio = med[("ours-block", 1.0, 1)]["rate"] / local_med
            print(f"epoch 2, cache 100%: ours-block {ratio:.2f}x our local reader (goal >= 0.9x)")
    if not args.no_resume:
        for key, seconds in resume_cost(work).items():
            print(
                f"resume on 1,000,000 samples ({key}): {seconds:.3f} s from load_state_dict "
                "to the first batch (goal < 1 s)"
            )


if __name__ == "__main__":
    main()
