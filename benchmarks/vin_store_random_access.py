"""Random access of the VIN offline store against a numpy memmap, side by side in one run.

The dataset matches the peer harness (``/work/shared/bench/peers``): per sample ``points``
float32 [P, 3], ``pose`` float32 [12], ``label`` int64 [1] and a ~200-byte MessagePack
record. The baseline is one ``.npy`` per field opened with ``np.load(mmap_mode="r")`` plus a
records blob + offsets: the practical limit. Measured (medians of --repeats):

(a)  random reads of --reads indices in one process, one sample at a time
(a2) the same indices in batches of --batch-size (ours: ``read_positions``, one collated
     batch; memmap: fancy indexing per field)
(b)  torch DataLoader, --workers fork workers, per-item ``__getitem__``
(b2) same, with ``__getitems__`` (one call per batch)
(c)  open + first read in a fresh process (imports excluded), warm page cache
(c') with --cold: the same right after evicting that tree's files from the page cache with
     ``posix_fadvise(POSIX_FADV_DONTNEED)`` (other users' cache is left alone)
(d)  bytes on disk (allocated)

Usage::

    PYTHONPATH=src python benchmarks/vin_store_random_access.py --n 20000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from dataset_devkit.vin_store import (
    VinOfflineSample,
    VinOfflineStoreReader,
    build_vin_offline_store,
)


def generate(root: Path, n: int, points: int) -> None:
    """Write the source arrays as the memmap baseline layout (also the builder's input)."""
    rng = np.random.default_rng(0)
    root.mkdir(parents=True)
    pts = np.lib.format.open_memmap(root / "points.npy", "w+", "<f4", (n, points, 3))
    for s in range(0, n, 1024):
        e = min(n, s + 1024)
        pts[s:e] = rng.random((e - s, points, 3), dtype=np.float32)
    pts.flush()
    np.save(root / "pose.npy", rng.random((n, 12), dtype=np.float32))
    np.save(root / "label.npy", rng.integers(0, 100, (n, 1)).astype("<i8"))
    enc = msgspec.msgpack.Encoder(order="deterministic")
    recs = [
        enc.encode(
            {
                "id": i,
                "scene": f"scene-{i // 50:05d}",
                "tags": ["a", "bb", "ccc"],
                "score": float(i) / 7,
                "text": "x" * int(rng.integers(100, 160)),
            }
        )
        for i in range(n)
    ]
    (root / "records.bin").write_bytes(b"".join(recs))
    np.save(root / "record_offsets.npy", np.concatenate([[0], np.cumsum([len(r) for r in recs])]))


class Memmap:
    """The baseline reader (same code as the peer harness's numpy-memmap adapter)."""

    def __init__(self, root: Path) -> None:
        self.points = np.load(root / "points.npy", mmap_mode="r")
        self.pose = np.load(root / "pose.npy", mmap_mode="r")
        self.label = np.load(root / "label.npy", mmap_mode="r")
        self.offsets = np.load(root / "record_offsets.npy")
        self.records = np.memmap(root / "records.bin", dtype=np.uint8, mode="r")

    def __len__(self) -> int:
        return int(self.points.shape[0])

    def __getitem__(self, i: int) -> dict[str, Any]:
        o = self.offsets
        return {
            "points": np.array(self.points[i]),
            "pose": np.array(self.pose[i]),
            "label": np.array(self.label[i]),
            "record": np.array(self.records[o[i] : o[i + 1]]),
        }

    def get_many(self, idxs: Any) -> dict[str, Any]:
        idxs = np.asarray(idxs)
        o = self.offsets
        return {
            "points": self.points[idxs],
            "pose": self.pose[idxs],
            "label": self.label[idxs],
            "record": [np.array(self.records[o[i] : o[i + 1]]) for i in idxs],
        }

    def __getitems__(self, idxs: list[int]) -> dict[str, Any]:
        return self.get_many(idxs)


class Ours:
    """Our reader, returning the same fields (records as raw MessagePack bytes, like peers)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.reader = VinOfflineStoreReader(root)

    def __len__(self) -> int:
        return len(self.reader)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.reader.read_position(i, decode_records=False)

    def get_many(self, idxs: Any) -> dict[str, Any]:
        return self.reader.read_positions(idxs, decode_records=False, writeable=True)

    def __getitems__(self, idxs: list[int]) -> dict[str, Any]:
        # The DataLoader's batched fetch goes through the library's torch adapter, which
        # gathers a batch straight into shared memory inside the worker (torch imported late
        # so the open timing does not include it).
        if "torch_dataset" not in self.__dict__:
            from dataset_devkit.vin_store import VinOfflineBatchedTorchDataset

            self.torch_dataset = VinOfflineBatchedTorchDataset(self.reader, raw_records=True)
        return self.torch_dataset.__getitems__(idxs)


class ZarrPython:
    """zarr-python reading the same store's arrays (records through our reader)."""

    def __init__(self, root: Path) -> None:
        import zarr

        self.reader = VinOfflineStoreReader(root)
        manifest = self.reader.manifest
        self.rps = manifest.shards[0].num_rows
        groups = [zarr.open_group(root / s.relative_dir, mode="r") for s in manifest.shards]
        self.arrays = [{k: g[k] for k in ("points", "pose", "label")} for g in groups]

    def __len__(self) -> int:
        return len(self.reader)

    def __getitem__(self, i: int) -> dict[str, Any]:
        shard, row = divmod(i, self.rps)
        out = {k: a[row] for k, a in self.arrays[shard].items()}
        out["record"] = self.reader.read_position(i, ["record"], decode_records=False)["record"]
        return out


def open_at_scale(root: Path, n: int, rows_per_shard: int) -> float:
    """Write a metadata-only store of *n* samples and time opening it in a fresh process."""
    from dataset_devkit.vin_store import (
        VinOfflineBlockSpec,
        VinOfflineManifest,
        VinOfflineMaterializedBlocks,
        VinOfflineShardSpec,
        VinOfflineStoreConfig,
    )

    if not (root / "manifest.json").exists():
        root.mkdir(parents=True)
        shards = []
        for k, start in enumerate(range(0, n, rows_per_shard)):
            rows = min(rows_per_shard, n - start)
            blocks = {
                "points": VinOfflineBlockSpec.for_zarr_array(
                    "points", "points", "float32", [rows, 2048, 3]
                ),
                "pose": VinOfflineBlockSpec.for_zarr_array("pose", "pose", "float32", [rows, 12]),
                "label": VinOfflineBlockSpec.for_zarr_array("label", "label", "int64", [rows, 1]),
                "record": VinOfflineBlockSpec.for_indexed_msgpack_records(
                    "record", "record.msgpack", "record.offsets.npy", rows
                ),
            }
            shards.append(
                VinOfflineShardSpec(
                    shard_id=f"shard-{k:06d}",
                    relative_dir=f"shards/shard-{k:06d}",
                    row_start=start,
                    num_rows=rows,
                    blocks=blocks,
                )
            )
        VinOfflineManifest(
            version=1,
            created_at="1970-01-01T00:00:00Z",
            source={},
            oracle={},
            vin={},
            materialized_blocks=VinOfflineMaterializedBlocks(
                backbone=False, depths=False, candidate_pcs=False
            ),
            shards=tuple(shards),
        ).write(root / "manifest.json")
        everything = np.arange(n, dtype="<i8")
        np.save(root / "sample_index.npy", everything)
        VinOfflineStoreConfig(root).write_split_indices(
            {"all": everything, "train": everything[n // 10 :], "val": everything[: n // 10]}
        )
    code = (
        f"import sys, time; sys.path.insert(0, {str(Path(__file__).parents[1] / 'src')!r})\n"
        "from dataset_devkit.vin_store import VinOfflineStoreConfig, VinOfflineStoreReader\n"
        f"t = time.perf_counter(); r = VinOfflineStoreReader(VinOfflineStoreConfig({str(root)!r}, "
        "split='train')); len(r); r.position_of(12345)\n"
        "print((time.perf_counter() - t) * 1000)"
    )
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(3)
    ]
    return statistics.median(runs)


def samples(src: Path) -> Any:
    pts = np.load(src / "points.npy", mmap_mode="r")
    pose, label = np.load(src / "pose.npy"), np.load(src / "label.npy")
    off, blob = np.load(src / "record_offsets.npy"), (src / "records.bin").read_bytes()
    for i in range(pts.shape[0]):
        yield VinOfflineSample(
            sample_key=f"k{i}",
            scene_id="s",
            snippet_id=str(i),
            arrays={"points": np.asarray(pts[i]), "pose": pose[i], "label": label[i]},
            records={"record": msgspec.msgpack.decode(blob[off[i] : off[i + 1]])},
        )


def per_item(ds: Any, idx: np.ndarray) -> float:
    t = time.perf_counter()
    for i in idx.tolist():
        ds[i]
    return len(idx) / (time.perf_counter() - t)


def batched(ds: Any, idx: np.ndarray, bs: int) -> float:
    t = time.perf_counter()
    for s in range(0, len(idx), bs):
        ds.get_many(idx[s : s + bs])
    return len(idx) / (time.perf_counter() - t)


def collate_items(items: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    return {
        k: torch.from_numpy(np.stack([x[k] for x in items]))
        if k != "record"
        else [x[k] for x in items]
        for k in items[0]
    }


def collate_batch(batch: Any) -> Any:
    import torch

    if not isinstance(batch, dict):  # our batch in transit: it unpickles into tensors
        return batch
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in batch.items()}


class _NoGetitems:
    """Hide ``__getitems__`` so the DataLoader fetches item by item."""

    def __init__(self, ds: Any) -> None:
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int) -> Any:
        return self.ds[i]


def loader(ds: Any, n: int, workers: int, bs: int, batched_fetch: bool) -> float:
    import torch
    from torch.utils.data import DataLoader, RandomSampler

    sampler = RandomSampler(
        range(len(ds)), num_samples=n, generator=torch.Generator().manual_seed(0)
    )
    dl = DataLoader(
        ds if batched_fetch else _NoGetitems(ds),
        batch_size=bs,
        sampler=sampler,
        num_workers=workers,
        multiprocessing_context="fork",
        collate_fn=collate_batch if batched_fetch else collate_items,
    )
    t = time.perf_counter()
    got = sum(len(b["record"]) for b in dl)
    return got / (time.perf_counter() - t)


OPEN_SNIPPET = """
import sys, time, json
from pathlib import Path
sys.path.insert(0, {src!r}); sys.path.insert(0, {bench!r})
import numpy as np
from vin_store_random_access import Memmap, Ours
cls = {{"memmap": Memmap, "ours": Ours}}[{kind!r}]
t = time.perf_counter(); ds = cls(Path({root!r})); ds[len(ds) // 2]
print(json.dumps((time.perf_counter() - t) * 1000))
"""


def open_ms(kind: str, root: Path) -> float:
    code = OPEN_SNIPPET.format(
        src=str(Path(__file__).parents[1] / "src"),
        bench=str(Path(__file__).parent),
        kind=kind,
        root=str(root),
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout))


def evict(root: Path) -> None:
    """Drop one tree's pages from the page cache (POSIX_FADV_DONTNEED), not the whole cache.

    Other users' cached files stay put. Pages still mapped by a live process are kept by
    the kernel, so this runs only when no reader of *root* is open.
    """
    for path in root.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def cold_open_ms(kind: str, root: Path) -> float:
    """Open + first read in a fresh process right after evicting *root* from the page cache."""
    evict(root)
    return open_ms(kind, root)


def disk_bytes(root: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--points", type=int, default=2048)
    ap.add_argument("--reads", type=int, default=5_000)
    ap.add_argument("--loader-samples", type=int, default=5_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows-per-shard", type=int, default=1024)
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/vin-store-bench"))
    ap.add_argument("--skip-loader", action="store_true")
    ap.add_argument(
        "--cold",
        action="store_true",
        help="also time open + first read after evicting each tree with posix_fadvise",
    )
    ap.add_argument("--zarr-reads", type=int, default=300, help="reads for zarr-python (slow)")
    ap.add_argument(
        "--open-scale",
        type=int,
        default=10_000_000,
        help="samples of a metadata-only store whose open is timed (0: skip)",
    )
    args = ap.parse_args()

    tag = args.data_dir / f"n{args.n}-p{args.points}-r{args.rows_per_shard}"
    src, store = tag / "memmap", tag / "store"
    if not store.exists():
        shutil.rmtree(tag, ignore_errors=True)
        generate(src, args.n, args.points)
        t = time.perf_counter()
        build_vin_offline_store(samples(src), store, rows_per_shard=args.rows_per_shard)
        print(f"built store in {time.perf_counter() - t:.1f} s")
    for path in (src, store):  # warm the page cache, as the peer harness does
        for f in path.rglob("*"):
            if f.is_file():
                f.read_bytes()

    backends: dict[str, Any] = {"memmap": Memmap(src), "ours": Ours(store)}
    ref = backends["memmap"]
    for i in np.random.default_rng(1).integers(0, args.n, 30).tolist():
        a, b = ref[i], backends["ours"][i]
        for k in ("points", "pose", "label"):
            np.testing.assert_array_equal(a[k], b[k])
        assert a["record"].tobytes() == b["record"]
    idx = np.random.default_rng(2).integers(0, args.n, args.reads)
    rows: dict[str, dict[str, float]] = {name: {} for name in backends}
    # Backends alternate inside each repeat, so load from other processes on a shared
    # machine hits both alike; each figure is the median over repeats.
    samples_of: dict[str, dict[str, list[float]]] = {n: {} for n in backends}

    def record(name: str, label: str, value: float) -> None:
        samples_of[name].setdefault(label, []).append(value)

    for ds in backends.values():
        per_item(ds, idx)  # untimed warm-up pass
    for _ in range(args.repeats):
        for name, ds in backends.items():
            record(name, "(a) per-item /s", per_item(ds, idx))
            record(name, "(a2) batched /s", batched(ds, idx, args.batch_size))
        for name, ds in backends.items():
            if not args.skip_loader:
                for label, flag in (
                    ("(b) loader per-item /s", False),
                    ("(b2) loader batched /s", True),
                ):
                    record(
                        name,
                        label,
                        loader(ds, args.loader_samples, args.workers, args.batch_size, flag),
                    )
            record(name, "(c) open+first ms", open_ms(name, src if name == "memmap" else store))
    names = list(backends)
    if args.cold:  # last, once no reader in this process maps either tree any more
        del backends, ref, ds
        gc.collect()
        for _ in range(args.repeats):
            for name in names:
                root = src if name == "memmap" else store
                record(name, "(c') cold open+first ms", cold_open_ms(name, root))
    for name in names:
        rows[name] = {label: statistics.median(v) for label, v in samples_of[name].items()}
        rows[name]["(d) disk MB"] = disk_bytes(src if name == "memmap" else store) / 1e6
    print(
        f"\nN={args.n}, points [{args.points},3] f32 + pose [12] f32 + label [1] i64 + record; "
        f"{args.reads} random reads; batch {args.batch_size}; loader {args.loader_samples} "
        f"samples, {args.workers} fork workers; median of {args.repeats}; cpu={os.cpu_count()}\n"
    )
    zarr_ds = ZarrPython(store)
    zidx = idx[: args.zarr_reads]
    per_item(zarr_ds, zidx[:20])
    rows["zarr-python (same store)"] = {
        "(a) per-item /s": statistics.median(per_item(zarr_ds, zidx) for _ in range(args.repeats))
    }
    cols = list(rows["memmap"])
    print("| backend | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name, row in rows.items():
        cells = [
            f"{row[c]:,.1f} ({row[c] / rows['memmap'][c]:.2f}x)" if c in row else "—" for c in cols
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.open_scale:
        scale_ms = open_at_scale(
            args.data_dir / f"open-scale-{args.open_scale}", args.open_scale, args.rows_per_shard
        )
        print(
            f"\nopen of a {args.open_scale:,}-sample store (manifest + index sidecar + train "
            f"split, fresh process, warm cache): {scale_ms:.0f} ms"
        )
    ours, mm = rows["ours"], rows["memmap"]
    if "(b) loader per-item /s" in mm:
        print(
            f"\nours batched DataLoader vs memmap per-item DataLoader: "
            f"{ours['(b2) loader batched /s'] / mm['(b) loader per-item /s']:.2f}x"
        )


if __name__ == "__main__":
    main()
