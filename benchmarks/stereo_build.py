"""``stereo build`` at the real GenVR size against its bound, measured in the same run.

The input is the demo's render-export generator (``make_sample_source``) at full size:
2 pairs of 1280x720, 241 frames, H.264 video and float32 depth (3.6 GB of depth), once
with its ``smooth`` depth and once ``noisy`` (the same export with per-pixel noise of
3 mm + 0.2 % of the depth and 1 % holes: a rendered scene's detail, poorly compressible).

Tasks, each in a fresh process (so peak RSS and imports are each task's own):

- ``bound``: the work a build cannot avoid, each step spread over every core with nothing
  else in the way: every input file read once and SHA-256-hashed; the depth converted to
  ``uint32`` millimetres (vectorized float32, in cache-sized blocks); the Blosc zstd-5
  shuffle encode of every chunk; the SHA-256 of the encoded output. Each chunk step runs
  on all depth files at once over a thread per core and is timed alone: the bound is the
  sum of the steps' wall times. (float32 arithmetic rounds about 3 values in 1,000
  differently from the float64 conversion a build must keep, so the bound is a little
  cheaper than any build that stores the same bytes.)
- ``build``: ``build_stereo_dataset(source, out)``, the default (``stereo build``): check
  the source, copy videos, encode depth on every core, read back, publish.
- ``build-workers-2``: the same with a spawn pool of 2 processes (``--workers 2``), pool
  start included.
- ``build-other`` (with ``--other-src DIR``): ``build`` importing the package from another
  source tree, e.g. an earlier checkout, to compare versions in the same rounds.

Rounds are interleaved (bound, build, ... for each variant, ``--rounds`` times); the table
gives medians with the range, the ratio as the median of per-round ratios to the same
round's bound, frames/s (stereo frames: one left and one right frame), MB/s (input bytes
over wall time), CPU seconds (this process and its children; the bound's: its steps only)
and their ratio, CPU ms per frame, cores busy (CPU seconds over wall seconds), every core
wanted (the share of 10 ms samples in which at least as many of the process's threads ran
or waited for a core as there are cores: what it would keep busy on an idle machine,
however loaded this one is), peak RSS, and each build's root hash (the same in every
round, or the run fails).

Usage::

    PYTHONPATH=src python benchmarks/stereo_build.py
    PYTHONPATH=src python benchmarks/stereo_build.py --rounds 5 --tasks bound,build
    PYTHONPATH=src python benchmarks/stereo_build.py --tasks bound,build --other-src ../old/src
    PYTHONPATH=src python benchmarks/stereo_build.py --frames 61 --width 640 --height 360
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

VARIANTS = ("smooth", "noisy")
TASKS = ("bound", "build", "build-workers-2")
_CHUNK = 4  # frames per depth chunk (spec.DEPTH_CHUNK_FRAMES)
_BLOCK = 1 << 16


# Inputs ----------------------------------------------------------------------------------


def generate(root: Path, pairs: int, frames: int, width: int, height: int) -> None:
    """The smooth export (the demo generator) and its noisy twin, unless they exist."""
    from dataset_devkit.stereo import make_sample_source

    smooth, noisy = root / "smooth", root / "noisy"
    if not (smooth / "export.json").exists():
        if smooth.exists():
            shutil.rmtree(smooth)
        print(f"generating {smooth} ...", flush=True)
        make_sample_source(smooth, pairs=pairs, frames=frames, width=width, height=height)
    if (noisy / "export.json").exists():
        return
    if noisy.exists():
        shutil.rmtree(noisy)
    print(f"generating {noisy} ...", flush=True)
    for path in sorted(smooth.rglob("*")):
        target = noisy / path.relative_to(smooth)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.name.endswith("_depth.npy"):
            eye = 0 if path.name.startswith("left") else 1
            noisy_depth(path, target, seed=hash_seed(path.relative_to(smooth).as_posix()), eye=eye)
        elif path.name != "export.json":
            shutil.copyfile(path, target)
    shutil.copyfile(smooth / "export.json", noisy / "export.json")  # last: marks it complete


def hash_seed(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


def noisy_depth(smooth: Path, target: Path, *, seed: int, eye: int) -> None:
    """The smooth depth with per-pixel noise and holes, written chunk by chunk."""
    source = np.load(smooth, mmap_mode="r")
    out = np.lib.format.open_memmap(target, mode="w+", dtype=np.float32, shape=source.shape)
    rng = np.random.default_rng([seed, eye])
    for start in range(0, source.shape[0], 16):
        block = np.array(source[start : start + 16], dtype=np.float32)
        special = ~np.isfinite(block) | (block <= 0) | (block > 1000)  # keep the renderer's
        noise = rng.standard_normal(block.shape, dtype=np.float32)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf stay as they are
            noisy = block + noise * (np.float32(0.003) + np.float32(0.002) * block)
        noisy[rng.random(block.shape, dtype=np.float32) < 0.01] = 0.0  # holes
        out[start : start + 16] = np.where(special, block, noisy)
    out.flush()
    del out


# The bound -------------------------------------------------------------------------------


def _float32_millimetres(
    metres: np.ndarray[Any, Any], out: np.ndarray[Any, Any], far: float | None
) -> None:
    """Vectorized float32 conversion (bit-pattern validity, float32 rint), blocked."""
    limit = np.float32(far if far is not None else np.finfo(np.float32).max)
    limit_bits = np.uint32(np.array(limit).view(np.uint32))
    bits, target = metres.reshape(-1).view(np.uint32), out.reshape(-1)
    scratch = np.empty(_BLOCK, np.uint32)
    valid = np.empty(_BLOCK, np.bool_)
    values = scratch.view(np.float32)
    for start in range(0, bits.size, _BLOCK):
        stop = min(start + _BLOCK, bits.size)
        s, v, x = scratch[: stop - start], valid[: stop - start], values[: stop - start]
        np.subtract(bits[start:stop], np.uint32(1), out=s)
        np.less(s, limit_bits, out=v)
        np.multiply(bits[start:stop], v, out=s)
        np.multiply(x, np.float32(1000), out=x)
        np.rint(x, out=x)
        np.copyto(target[start:stop], x, casting="unsafe")


class _Eye:
    """One depth file of the bound: its reader, hash, buffers and codec."""

    def __init__(self, path: Path, far: float | None) -> None:
        from numcodecs import Blosc

        header = np.load(path, mmap_mode="r")
        self.shape, self.offset = header.shape, header.offset
        del header
        self.stream = path.open("rb", buffering=0)
        self.digest = hashlib.sha256(self.stream.read(self.offset))  # the .npy header
        self.far = far
        self.frames = np.empty((_CHUNK, *self.shape[1:]), np.float32)
        self.mm = np.empty((_CHUNK, *self.shape[1:]), np.uint32)
        self.codec = Blosc(cname="zstd", clevel=5, shuffle=Blosc.SHUFFLE)
        self.encoded = b""
        self.count = 0
        self.out_digest = hashlib.sha256()
        self.cpu: dict[str, float] = {}

    def step(self, what: str, start: int) -> int:
        began = time.thread_time()
        count = min(_CHUNK, self.shape[0] - start)
        if what == "read":
            view = memoryview(self.frames[:count].reshape(-1).view(np.uint8))
            got = self.stream.readinto(view) or 0
            while got < len(view):
                got += self.stream.readinto(view[got:]) or 0
            self.count = count
        elif what == "input hash":
            self.digest.update(memoryview(self.frames[: self.count].reshape(-1).view(np.uint8)))
        elif what == "convert":
            _float32_millimetres(self.frames[: self.count], self.mm[: self.count], self.far)
            self.mm[self.count :] = 0
        elif what == "encode":
            self.encoded = self.codec.encode(self.mm)
        else:
            self.out_digest.update(self.encoded)
        self.cpu[what] = self.cpu.get(what, 0.0) + time.thread_time() - began
        return len(self.encoded) if what == "output hash" else 0


def _read_and_hash(path: Path) -> float:
    began = time.thread_time()
    digest = hashlib.sha256()
    buffer = memoryview(bytearray(1 << 20))
    with path.open("rb", buffering=0) as stream:
        while got := stream.readinto(buffer):
            digest.update(buffer[:got])
    return time.thread_time() - began


def bound_task(source: Path) -> dict[str, Any]:
    """The bound's steps over the whole export; seconds per step and CPU seconds."""
    from dataset_devkit.integrity.workers import available_cores

    export = json.loads((source / "export.json").read_bytes())
    depth = [
        (source / pair[eye]["depth"], pair.get("depth_far_m"))
        for pair in export["pairs"]
        for eye in ("left", "right")
    ]
    small = [p for p in source.rglob("*") if p.is_file() and not p.name.endswith("_depth.npy")]
    seconds = dict.fromkeys(("read", "input hash", "convert", "encode", "output hash"), 0.0)
    cores = available_cores()
    with ThreadPoolExecutor(cores) as pool:
        began = time.perf_counter()
        cpu = sum(pool.map(_read_and_hash, small))  # videos, cameras, export.json
        seconds["read"] += time.perf_counter() - began
        eyes = [_Eye(path, far) for path, far in depth]
        frames, n = eyes[0].shape[0], len(eyes)
        out_bytes = 0
        for start in range(0, frames, _CHUNK):
            for what in seconds:
                began = time.perf_counter()
                out_bytes += sum(pool.map(_Eye.step, eyes, [what] * n, [start] * n))
                seconds[what] += time.perf_counter() - began
    for eye in eyes:
        eye.stream.close()
    step_cpu = {what: sum(eye.cpu[what] for eye in eyes) for what in seconds}
    step_cpu["read"] += cpu
    return {
        "s": sum(seconds.values()),
        "steps": seconds,
        "step_cpu": step_cpu,
        "cpu_s": sum(step_cpu.values()),
        "out_mb": out_bytes / 1e6,
        "cores": cores,
    }


# Builds ----------------------------------------------------------------------------------


def build_task(source: Path, out: Path, workers: int) -> dict[str, Any]:
    from dataset_devkit.integrity.workers import worker_pool
    from dataset_devkit.stereo import build_stereo_dataset

    began = time.perf_counter()
    if workers:
        with worker_pool(workers, method="spawn") as pool:
            result = build_stereo_dataset(source, out, executor=pool)
    else:
        result = build_stereo_dataset(source, out)
    seconds = time.perf_counter() - began
    depth = sum(p.stat().st_size for p in out.rglob("*.0.0"))
    return {"s": seconds, "root": result.root_sha256, "out_mb": depth / 1e6}


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_rss_mb() -> float:
    """Peak RSS of this process and (separately) of its largest reaped child.

    This process's own peak is its ``VmHWM``, not ``ru_maxrss``: Linux carries the parent's
    RSS at ``fork`` across ``exec`` into ``ru_maxrss``, so a task started by a parent that
    had just generated the 3.6 GB source would report the parent's size. The workers of
    ``--workers 2`` are started by this small process, so their ``ru_maxrss`` is their own.
    """
    status = Path("/proc/self/status").read_text().splitlines()
    own = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return max(own, kids)


class Demand:
    """How many of this process's threads want a core, sampled every 10 ms from /proc.

    A thread running or waiting for a core (state ``R``) wants one; a thread blocked on a
    lock, a queue or I/O does not. The share of samples in which at least as many threads
    want a core as there are cores is what the work would keep busy on an idle machine,
    whatever other jobs take from it now. (Worker processes are not counted: with
    ``--workers`` it describes only the parent.)
    """

    def __init__(self, cores: int) -> None:
        import threading

        self.cores = cores
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import threading

        own = str(threading.get_native_id())
        while not self._stop.wait(0.01):
            wanting = 0
            for tid in os.listdir("/proc/self/task"):
                if tid == own:
                    continue
                try:
                    stat = Path(f"/proc/self/task/{tid}/stat").read_bytes()
                except OSError:
                    continue
                wanting += stat.rsplit(b")", 1)[1].split()[0] == b"R"
            self.samples.append(wanting)

    def stop(self) -> float:
        """The share of samples with every core wanted."""
        self._stop.set()
        self._thread.join()
        full = sum(1 for wanting in self.samples if wanting >= self.cores)
        return full / max(1, len(self.samples))


def task(name: str, source: Path, out: Path) -> dict[str, Any]:
    cpu = _cpu_s()
    demand = Demand(len(os.sched_getaffinity(0)))  # not the package's: build-other's may lack it
    if name == "bound":
        result = bound_task(source)
    else:
        result = build_task(source, out, 2 if name == "build-workers-2" else 0)
        result["cpu_s"] = _cpu_s() - cpu
    result["saturated"] = demand.stop()
    result["rss_mb"] = _peak_rss_mb()
    return result


# Rounds ----------------------------------------------------------------------------------


def _remove(path: Path) -> None:
    if not path.exists():
        return
    for p in [path, *path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o700)
    shutil.rmtree(path)


def _run(name: str, source: Path, out: Path, other_src: Path | None) -> dict[str, Any]:
    """One task in a fresh process; ``build-other`` imports the package from *other_src*."""
    _remove(out)
    env = dict(os.environ)
    if name == "build-other" and other_src is not None:
        env["PYTHONPATH"] = str(other_src)
    task_name = "build" if name == "build-other" else name
    command = [sys.executable, __file__, "--task", task_name, "--data", str(source)]
    done = subprocess.run(
        [*command, "--out", str(out)], capture_output=True, text=True, check=False, env=env
    )
    _remove(out)
    if done.returncode:
        sys.exit(f"{name} on {source.name} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def _input_bytes(source: Path) -> int:
    return sum(p.stat().st_size for p in source.rglob("*") if p.is_file())


def report(variant: str, source: Path, runs: dict[str, list[dict[str, Any]]]) -> None:
    export = json.loads((source / "export.json").read_bytes())
    frames = sum(pair["num_frames"] for pair in export["pairs"])
    mb = _input_bytes(source) / 1e6
    print(f"\n{variant}: {len(export['pairs'])} pairs, {frames} stereo frames, {mb:,.0f} MB in")
    print(
        "| task | wall s | vs bound | frames/s | MB/s | CPU s | vs bound CPU | CPU ms/frame | "
        "cores busy | every core wanted | peak RSS MB | depth out MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    bounds = runs.get("bound")
    for name, results in runs.items():
        walls = [r["s"] for r in results]
        wall = statistics.median(walls)
        ratio = (
            _spread([r["s"] / b["s"] for r, b in zip(results, bounds, strict=True)]) + "x"
            if bounds
            else "-"
        )
        cpu = statistics.median(r["cpu_s"] for r in results)
        cpu_ratio = f"{cpu / statistics.median(b['cpu_s'] for b in bounds):.2f}x" if bounds else "-"
        busy = statistics.median(r["cpu_s"] / r["s"] for r in results)
        wanted = statistics.median(r["saturated"] for r in results)
        print(
            f"| {name} | {_spread(walls)} | {ratio} | {frames / wall:,.1f} | {mb / wall:,.0f} | "
            f"{cpu:.1f} | {cpu_ratio} | {cpu / frames * 1000:.1f} | {busy:.2f} | "
            f"{wanted:.0%} | {max(r['rss_mb'] for r in results):.0f} | "
            f"{statistics.median(r['out_mb'] for r in results):,.0f} |"
        )
    if bounds:
        shown = ", ".join(
            f"{k} {statistics.median(b['steps'][k] for b in bounds):.2f} s "
            f"({statistics.median(b['step_cpu'][k] for b in bounds):.2f} CPU s)"
            for k in bounds[0]["steps"]
        )
        print(f"bound steps, wall (CPU) medians on {bounds[0]['cores']} cores: {shown}")
    roots = {
        name: {r["root"] for r in results} for name, results in runs.items() if name != "bound"
    }
    for name, found in roots.items():
        if len(found) != 1:
            sys.exit(f"{variant} {name}: the root hash changed between rounds: {sorted(found)}")
        print(f"{name} root_sha256 {found.pop()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/stereo-build-bench"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", default="bound,build", help=f"comma-separated: {TASKS}")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--frames", type=int, default=241)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument(
        "--other-src",
        type=Path,
        help="also time the build of the package in this src directory (task build-other)",
    )
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.task:
        print(json.dumps(task(args.task, args.data, args.out)))
        return
    size = f"{args.pairs}x{args.width}x{args.height}x{args.frames}"
    root = args.dir / size
    generate(root, args.pairs, args.frames, args.width, args.height)
    names = args.tasks.split(",") + (["build-other"] if args.other_src else [])
    variants = args.variants.split(",")
    runs = {v: {name: [] for name in names} for v in variants}
    for _ in range(args.rounds):
        for variant in variants:
            for name in names:
                out = root / f"out-{name}"
                runs[variant][name].append(_run(name, root / variant, out, args.other_src))
    load = os.getloadavg()
    print(
        f"\n{size}, {args.rounds} interleaved rounds, load average {load[0]:.1f} / "
        f"{load[1]:.1f} / {load[2]:.1f} (1/5/15 min) at the end, {os.cpu_count()} CPUs. "
        "Wall s: median [min-max]; vs bound: median [min-max] of the per-round ratios "
        "(lower is better)"
    )
    for variant in variants:
        report(variant, root / variant, runs[variant])


if __name__ == "__main__":
    main()
