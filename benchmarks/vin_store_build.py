"""Build throughput of the VIN offline store next to MDS, Lance and a raw memmap, in one run.

Every writer gets the same samples, read from one source directory of ``.npy`` files (the
peer harness's layout: ``points`` float32 [P, 3], ``pose`` float32 [12], ``label`` int64
[1] and a ~200-byte MessagePack record), each in a fresh process whose peak RSS is
reported too:

- ``memmap``: one ``np.lib.format.open_memmap`` per field filled sample by sample, records
  blob + offsets (``memmap+fsync``: the same, then fsync, the durability a published store
  has);
- ``write+sha256``: the physical bound of a writer that hashes what it writes: the same
  bytes written in 4 MiB blocks, each hashed with SHA-256, on one core, no per-sample work
  (a published store hashes its bytes once, as written, and also syncs them to disk,
  which this bound does not); the table's ``time / write+sha256`` is each writer's wall
  time over this bound's in the same round (median [range]; lower is faster);
  ``write+sha256+fsync``: the same, then each file fsynced before it is closed: the bound of
  a writer whose output is durable when it returns, as a published store is;
- ``mds``: MosaicML Streaming ``MDSWriter`` (uncompressed, 64 MiB shards), per sample;
- ``lance``: ``lance.write_dataset`` from 1,024-row record batches (its natural API);
- ``vin``: :func:`build_vin_offline_store` from an iterable of samples, default executor;
  ``vin-sources``: from partitioned sources produced in the default process pool (workers
  forked from a fork server, all started inside the timing) — both including validation,
  manifest, fsync and atomic publication. Not in the default set: ``vin-sources-spawn``
  (a spawn process pool, the default before the fork server, started and shut down in
  the timing), ``vin-sources-warm`` (a :func:`build_process_pool` started before the
  timing: the figure of a process that builds several stores) and ``vin-sources-dask``
  (a Dask ``LocalCluster`` of as many single-threaded workers, started before the
  timing).

CPU seconds and the workers' peak RSS include workers that are not this process's
children (a fork server's, Dask's): taken from /proc.

Writers run in interleaved rounds (``--repeats``, default 5), each in a fresh process;
the table gives the median wall time with the range over the rounds, and each ratio as the
median (and range) of the per-round ratios, which a shared machine's load swings less.
Each round starts one writer later than the one before, so every writer takes every place
in a round in turn (give ``--repeats`` a multiple of the writers): on a shared two-core
machine, in three fixed orders, the first writer of each round ran 2-3x slower in wall and
CPU time whichever it was (``write+sha256`` 3.25 s first, 0.82 s second;
``write+sha256+fsync`` 2.65 s first, 1.14 s second), which a fixed order charges to one
writer, the bound by default.

``--shape large`` uses 2 MiB float16 voxel features per sample instead of points.
``--scale N`` instead builds N small samples from sources (1 and 2 local workers, and a
Dask ``LocalCluster`` of 2 workers) and reports wall time, peak RSS and the speed-ups.

Usage (MDS and Lance: ``pip install -e '.[bench]'``; MDS imports torchvision, which this
script replaces by a placeholder when it is absent, as the peer harness does)::

    python benchmarks/vin_store_build.py --n 20000            # medians of --repeats 5
    python benchmarks/vin_store_build.py --repeats 9 \\
        --writers memmap,vin,vin-sources,vin-sources-spawn,vin-sources-warm,vin-sources-dask
    python benchmarks/vin_store_build.py --writers vin --shard-mb 256   # shard size sweep
    python benchmarks/vin_store_build.py --shape large --n 300
    python benchmarks/vin_store_build.py --scale 10000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, wait
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import psutil  # type: ignore[import-untyped]

from dataset_devkit.vin_store import (
    DEFAULT_SHARD_BYTES,
    VinOfflineSample,
    VinOfflineShardSource,
    build_process_pool,
    build_vin_offline_store,
)
from dataset_devkit.vin_store._pool import default_workers, worker_started

FIELDS = ("points", "pose", "label")


def generate(root: Path, n: int, shape: str) -> None:
    """The source samples, written once as the memmap layout."""
    rng = np.random.default_rng(0)
    root.mkdir(parents=True)
    if shape == "large":
        first = np.lib.format.open_memmap(root / "points.npy", "w+", "<f2", (n, 16, 256, 256))
    else:
        first = np.lib.format.open_memmap(root / "points.npy", "w+", "<f4", (n, 2048, 3))
    for s in range(0, n, 256):
        e = min(n, s + 256)
        first[s:e] = rng.random((e - s, *first.shape[1:]), dtype=np.float32)
    first.flush()
    np.save(root / "pose.npy", rng.random((n, 12), dtype=np.float32))
    np.save(root / "label.npy", np.arange(n, dtype="<i8").reshape(n, 1))
    enc = msgspec.msgpack.Encoder()
    records = [enc.encode({"id": i, "text": "x" * int(rng.integers(100, 160))}) for i in range(n)]
    (root / "records.bin").write_bytes(b"".join(records))
    np.save(root / "offsets.npy", np.concatenate([[0], np.cumsum([len(r) for r in records])]))


class Source:
    """The source directory, mapped.

    Plain ndarray views of the mappings (no copy): indexing a ``numpy.memmap`` runs its
    Python-level ``__getitem__`` and ``__array_finalize__``, 20-40 us per sample of four
    fields, which made producing the samples cost more than the bound's whole work and
    charged every per-sample writer for numpy's subclass, not for writing.
    """

    def __init__(self, root: Path) -> None:
        self.fields = {f: np.asarray(np.load(root / f"{f}.npy", mmap_mode="r")) for f in FIELDS}
        self.records = np.asarray(np.memmap(root / "records.bin", dtype=np.uint8, mode="r"))
        self.offsets: list[int] = np.load(root / "offsets.npy").tolist()
        self.n = self.fields["label"].shape[0]

    def record(self, i: int) -> bytes:
        return self.records[self.offsets[i] : self.offsets[i + 1]].tobytes()


def vin_samples(src: Source, start: int, stop: int) -> Iterator[VinOfflineSample]:
    for i in range(start, stop):
        yield VinOfflineSample(
            sample_key=str(i),
            scene_id="synthetic",
            snippet_id=str(i),
            arrays={f: src.fields[f][i] for f in FIELDS},
            records={"record": msgspec.Raw(src.record(i))},
        )


def produce(root: str, start: int, stop: int) -> Iterator[VinOfflineSample]:
    """Partitioned source: a worker maps the source directory and makes its samples."""
    return vin_samples(Source(Path(root)), start, stop)


def _fsync_tree(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)


def write_memmap(src: Source, out: Path, fsync: bool) -> None:
    out.mkdir()
    maps = {
        f: np.lib.format.open_memmap(out / f"{f}.npy", "w+", a.dtype, a.shape)
        for f, a in src.fields.items()
    }
    with open(out / "records.bin", "wb") as stream:
        offsets = [0]
        for i in range(src.n):
            for f in FIELDS:
                maps[f][i] = src.fields[f][i]
            rec = src.record(i)
            stream.write(rec)
            offsets.append(offsets[-1] + len(rec))
    np.save(out / "offsets.npy", np.array(offsets))
    for m in maps.values():
        m.flush()
    if fsync:
        _fsync_tree(out)


def write_hashed(src: Source, out: Path, fsync: bool = False) -> None:
    """The physical bound of a hashing writer: the memmap layout's bytes written in large
    blocks, each hashed (SHA-256) as written, on one core, with no per-sample work; with
    *fsync*, each file is also made durable before it is closed."""
    out.mkdir()
    files = {f"{f}.npy": a for f, a in src.fields.items()}
    files["records.bin"] = src.records
    for name, array in files.items():
        data = memoryview(np.ascontiguousarray(array)).cast("B")
        sha = hashlib.sha256()
        fd = os.open(out / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for start in range(0, len(data), 4 << 20):
                block = data[start : start + (4 << 20)]
                sha.update(block)
                os.write(fd, block)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)


def _torchvision_placeholder() -> None:
    """MDS imports torchvision at import time (only its vision datasets use it)."""
    try:
        import torchvision  # noqa: F401
    except Exception:
        import importlib.machinery
        import types

        for name in ("torchvision", "torchvision.datasets", "torchvision.transforms"):
            module = types.ModuleType(name)
            module.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = module
        functional = types.ModuleType("torchvision.transforms.functional")
        functional.to_tensor = None  # type: ignore[attr-defined]
        sys.modules["torchvision.transforms.functional"] = functional
        sys.modules["torchvision.datasets"].VisionDataset = object  # type: ignore[attr-defined]
        sys.modules["torchvision.datasets"].CIFAR10 = object  # type: ignore[attr-defined]


def write_mds(src: Source, out: Path) -> None:
    _torchvision_placeholder()
    from streaming import MDSWriter

    first = src.fields["points"]
    columns = {
        "points": f"ndarray:{first.dtype.name}:{','.join(map(str, first.shape[1:]))}",
        "pose": "ndarray:float32:12",
        "label": "ndarray:int64:1",
        "record": "bytes",
    }
    with MDSWriter(out=str(out), columns=columns, compression=None, size_limit=1 << 26) as w:
        for i in range(src.n):
            sample: dict[str, Any] = {f: np.asarray(src.fields[f][i]) for f in FIELDS}
            sample["record"] = src.record(i)
            w.write(sample)


def write_lance(src: Source, out: Path) -> None:
    import lance
    import pyarrow as pa

    width = int(np.prod(src.fields["points"].shape[1:]))
    kind = pa.float16() if src.fields["points"].dtype == np.float16 else pa.float32()
    schema = pa.schema(
        [
            ("points", pa.list_(kind, width)),
            ("pose", pa.list_(pa.float32(), 12)),
            ("label", pa.int64()),
            ("record", pa.binary()),
        ]
    )

    def batches() -> Iterator[Any]:
        for s in range(0, src.n, 1024):
            e = min(src.n, s + 1024)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.FixedSizeListArray.from_arrays(
                        pa.array(np.asarray(src.fields["points"][s:e]).reshape(-1)), width
                    ),
                    pa.FixedSizeListArray.from_arrays(
                        pa.array(np.asarray(src.fields["pose"][s:e]).reshape(-1)), 12
                    ),
                    pa.array(np.asarray(src.fields["label"][s:e])[:, 0]),
                    pa.array([src.record(i) for i in range(s, e)], pa.binary()),
                ],
                schema=schema,
            )

    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), str(out))


def _cpu_s() -> float:
    """CPU seconds of this process and its reaped children (workers): robust to load."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: reset by exec, unlike ru_maxrss after a fork)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class WorkerWatch:
    """CPU time and peak RSS of the work this process starts, wherever its workers live.

    Workers forked by a fork server are not this process's children, and Dask's workers
    outlive the build, so ``getrusage(RUSAGE_CHILDREN)`` sees neither: the descendants'
    VmHWM is polled while they live, and their CPU (with what each has reaped: a fork
    server's workers) is taken from /proc at the start and the end.
    """

    def __init__(self) -> None:
        self.peak_kb = 0
        self._cpu0 = _cpu_s()
        self._descendants0 = self._descendants_cpu()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    @staticmethod
    def _descendants_cpu() -> dict[int, float]:
        found = {}
        for child in psutil.Process().children(recursive=True):
            try:
                found[child.pid] = sum(child.cpu_times()[:4])
            except psutil.Error:
                continue
        return found

    def _poll(self) -> None:
        while not self._stop.wait(0.1):
            for child in psutil.Process().children(recursive=True):
                try:
                    status = Path(f"/proc/{child.pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))

    def stop(self) -> tuple[float, float]:
        """CPU seconds since the start (this process, reaped children, descendants) and
        the peak RSS in MB of any worker."""
        self._stop.set()
        self._thread.join()
        now = self._descendants_cpu()
        spent = _cpu_s() - self._cpu0
        spent += sum(cpu - self._descendants0.get(pid, 0.0) for pid, cpu in now.items())
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        return spent, max(self.peak_kb, reaped) / 1024


def task(name: str, data: Path, out: Path, shard_mb: int) -> dict[str, float]:
    """One writer in this (fresh) process; returns seconds and peak RSS."""
    src = Source(data)
    if name == "mds":  # imports (torch, transformers: seconds) are not writing time
        _torchvision_placeholder()
        import streaming  # noqa: F401
    elif name == "lance":
        import lance  # noqa: F401
    if name.startswith("vin-sources"):
        return _sources_task(name, src, data, out, shard_mb)
    watch = WorkerWatch()
    t = time.perf_counter()
    if name in ("memmap", "memmap+fsync"):
        write_memmap(src, out, fsync=name.endswith("fsync"))
    elif name in ("write+sha256", "write+sha256+fsync"):
        write_hashed(src, out, fsync=name.endswith("fsync"))
    elif name == "mds":
        write_mds(src, out)
    elif name == "lance":
        write_lance(src, out)
    elif name == "vin":
        build_vin_offline_store(vin_samples(src, 0, src.n), out, shard_bytes=shard_mb << 20)
    seconds = time.perf_counter() - t
    cpu, workers_mb = watch.stop()
    return {"s": seconds, "cpu_s": cpu, "rss_mb": _peak_rss_mb(), "child_rss_mb": workers_mb}


def _sources_task(name: str, src: Source, data: Path, out: Path, shard_mb: int) -> dict[str, float]:
    """``vin-sources``: the builder's own pool (fork server), started inside the timing;
    ``-spawn``: a spawn process pool (the default before the fork server), started and shut
    down inside the timing; ``-dask``: a Dask ``LocalCluster`` of as many single-threaded
    worker processes, started before the timing (a cluster outlives one build); ``-warm``:
    the builder's pool, started before the timing and passed in (kept across builds)."""
    step = 1000
    sources = [
        VinOfflineShardSource(partial(produce, str(data)), a, min(src.n, a + step))
        for a in range(0, src.n, step)
    ]
    options: dict[str, Any] = {"shard_bytes": shard_mb << 20}
    with ExitStack() as cluster_stack:
        if name == "vin-sources-dask":
            from dask.distributed import Client, LocalCluster

            cluster = cluster_stack.enter_context(
                LocalCluster(
                    n_workers=default_workers(), threads_per_worker=1, dashboard_address=None
                )
            )
            options["executor"] = cluster_stack.enter_context(Client(cluster)).get_executor()
        elif name == "vin-sources-warm":
            pool = cluster_stack.enter_context(build_process_pool())
            wait([pool.submit(worker_started) for _ in range(default_workers())])  # all up
            options["executor"] = pool
        watch = WorkerWatch()
        t = time.perf_counter()
        with ExitStack() as pool_stack:
            if name == "vin-sources-spawn":
                spawn = multiprocessing.get_context("spawn")
                options["executor"] = pool_stack.enter_context(
                    ProcessPoolExecutor(default_workers(), mp_context=spawn)
                )
            build_vin_offline_store(sources, out, **options)
        seconds = time.perf_counter() - t
        cpu, workers_mb = watch.stop()
    return {"s": seconds, "cpu_s": cpu, "rss_mb": _peak_rss_mb(), "child_rss_mb": workers_mb}


def _run_task(name: str, data: Path, out: Path, shard_mb: int) -> dict[str, float]:
    if out.exists():
        _remove(out)
    command = [sys.executable, __file__, "--task", name, "--data", str(data), "--out", str(out)]
    result = subprocess.run([*command, "--shard-mb", str(shard_mb)], capture_output=True, text=True)
    if out.exists():
        _remove(out)
    if result.returncode:
        print(f"{name}: failed\n{result.stderr[-2000:]}", file=sys.stderr)
        nan = float("nan")
        return {"s": nan, "cpu_s": nan, "rss_mb": nan, "child_rss_mb": nan}
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def _remove(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o700)
    shutil.rmtree(path)


def _spread(values: list[float]) -> str:
    """Median and the range of the rounds: ``median [min-max]``."""
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def peers(args: argparse.Namespace) -> None:
    data = args.dir / f"source-{args.shape}-{args.n}"
    if not data.exists():
        generate(data, args.n, args.shape)
    nbytes = sum(p.stat().st_size for p in data.iterdir())
    names = args.writers.split(",")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for round_number in range(args.repeats):  # rounds, so load changes hit every writer alike
        start = round_number % len(names)  # each round starts one writer later: see the doc
        for name in names[start:] + names[:start]:
            out = args.dir / f"out-{name}"
            runs[name].append(_run_task(name, data, out, args.shard_mb))
    load = os.getloadavg()[0]
    print(
        f"\n{args.n} samples, {args.shape} shape, {nbytes / 1e6:.0f} MB, {args.repeats} "
        f"interleaved rounds, load average {load:.1f} at the end; vin shards {args.shard_mb} "
        "MiB. Wall s: median [min-max] over the rounds; ratios: the median [min-max] of the "
        "per-round ratios (the reference's wall time in the same round / this writer's); "
        "higher is faster"
    )
    refs = [k for k in ("mds", "memmap", "write+sha256") if k in runs]
    bounds = [k for k in ("write+sha256", "write+sha256+fsync") if k in runs]
    print(
        "| writer | wall s | samples/s | MB/s | "
        + "".join(f"vs {k} | " for k in refs)
        + "".join(f"time / {k} | " for k in bounds)
        + "CPU s | peak RSS MB (workers) |"
    )
    print("|---|---|---|---|" + "---|" * (len(refs) + len(bounds)) + "---|---|")
    for name, rs in runs.items():
        walls = [r["s"] for r in rs]
        wall = statistics.median(walls)
        ratios = "".join(
            f"{_spread([ref['s'] / r['s'] for ref, r in zip(runs[k], rs, strict=True)])}x | "
            for k in refs
        )
        for bound in bounds:  # time over the bound's in the same round: the goal's sense
            over = [r["s"] / ref["s"] for ref, r in zip(runs[bound], rs, strict=True)]
            ratios += f"{_spread(over)}x | "
        print(
            f"| {name} | {_spread(walls)} | {args.n / wall:,.0f} | {nbytes / 1e6 / wall:,.0f} | "
            f"{ratios}{statistics.median(r['cpu_s'] for r in rs):.2f} | "
            f"{max(r['rss_mb'] for r in rs):.0f} ({max(r['child_rss_mb'] for r in rs):.0f}) |"
        )


def small(start: int, stop: int) -> Iterator[VinOfflineSample]:
    """Small rows for the scale build: a pose and a length, no records."""
    pose = np.zeros(12, np.float32)
    for i in range(start, stop):
        pose[0] = i
        yield VinOfflineSample(
            sample_key=f"s{i}",
            scene_id=f"scene{i // 1000}",
            snippet_id=f"{i}",
            arrays={"vin.t_world_rig": pose, "vin.lengths": np.array([i], np.int64)},
        )


def scale_task(mode: str, n: int, out: Path) -> dict[str, float]:
    step = 100_000
    sources = [VinOfflineShardSource(small, a, min(n, a + step)) for a in range(0, n, step)]
    watch = WorkerWatch()
    t = time.perf_counter()
    if mode == "dask":
        from dask.distributed import Client, LocalCluster

        with (
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
            Client(cluster) as client,
        ):
            watch.stop()
            watch = WorkerWatch()
            t = time.perf_counter()  # cluster start-up excluded
            build_vin_offline_store(sources, out, executor=client.get_executor())
    else:
        build_vin_offline_store(sources, out, workers=int(mode))
    seconds = time.perf_counter() - t
    _, workers_mb = watch.stop()
    return {"s": seconds, "rss_mb": _peak_rss_mb(), "child_rss_mb": workers_mb}


def scale(args: argparse.Namespace) -> None:
    results = {}
    for mode in ("1", "2", "dask"):
        out = args.dir / f"scale-{mode}"
        if out.exists():
            _remove(out)
        run = subprocess.run(
            [sys.executable, __file__, "--scale-task", mode, "--n", str(args.scale), "--out",
             str(out)],
            capture_output=True, text=True,
        )  # fmt: skip
        if run.returncode:
            print(f"{mode}: failed\n{run.stderr[-2000:]}", file=sys.stderr)
            continue
        results[mode] = json.loads(run.stdout.strip().splitlines()[-1])
        _remove(out)
        print(mode, results[mode], flush=True)
    print(f"\n{args.scale:,} small samples from sources (pose f32[12] + length i64[1])")
    print("| executor | wall s | samples/s | speed-up vs 1 | driver peak RSS MB | worker peak MB |")
    print("|---|---|---|---|---|---|")
    base = results.get("1", {}).get("s", float("nan"))
    for mode, r in results.items():
        label = {"1": "1 local worker", "2": "2 local workers", "dask": "Dask LocalCluster, 2"}[
            mode
        ]
        print(
            f"| {label} | {r['s']:.1f} | {args.scale / r['s']:,.0f} | {base / r['s']:.2f}x | "
            f"{r['rss_mb']:.0f} | {r['child_rss_mb']:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--shape", choices=("peer", "large"), default="peer")
    parser.add_argument("--scale", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/vin-store-build-bench"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shard-mb", type=int, default=DEFAULT_SHARD_BYTES >> 20)
    parser.add_argument(
        "--writers",
        default="memmap,memmap+fsync,write+sha256,write+sha256+fsync,mds,lance,vin,vin-sources",
    )
    parser.add_argument("--task")
    parser.add_argument("--scale-task")
    parser.add_argument("--data", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.task:
        print(json.dumps(task(args.task, args.data, args.out, args.shard_mb)))
    elif args.scale_task:
        print(json.dumps(scale_task(args.scale_task, args.n, args.out)))
    else:
        args.dir.mkdir(parents=True, exist_ok=True)
        scale(args) if args.scale else peers(args)


if __name__ == "__main__":
    main()
