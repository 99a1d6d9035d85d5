"""Benchmark: one fleet built on local processes and on a Dask ``LocalCluster``, side by side.

N synthetic drives (protobuf MCAP written by the sample-drive writer; default 4 drives of
60 s, 6 cameras at 12 Hz, 320x240) are built from ``recordings -> published dataroot`` by
``build_dataset`` in three ways, each in a fresh child process:

- ``inline``: ``[executor] workers = 1``, everything in the build's own process;
- ``local``: ``[executor] workers = N`` (the default kind): ingest and frame extraction per
  recording on N local processes, the export's frame copies on N threads;
- ``dask``: ``[executor] scheduler = "tcp://127.0.0.1:..."``, a ``LocalCluster`` of N
  single-threaded worker processes started by the child: every task goes through Dask.

For each it prints wall time, frames/s (camera frames in the recordings, and images
published), peak RSS of the build process (``VmHWM``) and the peak of the whole process tree
(the build plus its workers, sampled every 50 ms), the CPU seconds of that tree, then the
ratios to ``local`` and whether the root hashes agree (they must). Wall time is the best of
``--rounds``; CPU seconds barely depend on the machine's load, so on a shared machine they
are the steadier measure of what each executor costs. Run it on an idle machine, or say that
it was shared.

    PYTHONPATH=src python benchmarks/nuscenes_fleet_executor.py [--drives 4] [--seconds 60]
        [--cameras 6] [--fps 12] [--width 320] [--height 240] [--workers 2]
        [--modes inline,local,dask] [--rounds 1] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

CAMERAS = (
    "cam_front",
    "cam_front_left",
    "cam_front_right",
    "cam_back",
    "cam_back_left",
    "cam_back_right",
)
MODES = ("inline", "local", "dask")


def _status_kib(pid: int | str, field: str) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # the process ended meanwhile
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith(field)), 0)


def _tree(pid: int) -> list[int]:
    """*pid* and all its descendants, from ``/proc/<pid>/task/<tid>/children``."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                continue
    return found


def _cpu_ticks(pid: int) -> int:
    """utime + stime of *pid* in clock ticks (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


class TreeRss:
    """Samples this process and its descendants: the peak of their summed RSS, and the CPU
    seconds they used (each process's last sample: a worker's final 50 ms may be missed).

    CPU seconds barely depend on how busy the machine is, wall time does: on a shared
    machine they show what an executor costs when its parallelism cannot pay off.
    """

    def __init__(self) -> None:
        self.peak_kib = 0
        self._ticks: dict[int, int] = {}
        self._before: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def cpu_s(self) -> float:
        used = sum(t - self._before.get(pid, 0) for pid, t in self._ticks.items())
        return used / os.sysconf("SC_CLK_TCK")

    def _sample(self) -> None:
        pids = _tree(os.getpid())
        self.peak_kib = max(self.peak_kib, sum(_status_kib(p, "VmRSS:") for p in pids))
        for pid in pids:
            self._ticks[pid] = max(self._ticks.get(pid, 0), _cpu_ticks(pid))

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self._sample()

    def __enter__(self) -> TreeRss:
        # What the processes used before the build (imports, a cluster's start) is not its.
        self._before = {pid: _cpu_ticks(pid) for pid in _tree(os.getpid())}
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def _config(base: Path, paths: list[Path], mode: str, executor: str) -> Path:
    listed = ", ".join(f'"{p}"' for p in paths)
    path = base / f"{mode}.toml"
    path.write_text(
        f'namespace = "fleet-bench"\n[sources]\ntype = "mcap_hf"\npaths = [{listed}]\n'
        "[scenario]\nscene_duration_s = 20.0\n"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        f'[paths]\noutput_dir = "{base / ("out-" + mode)}"\n{executor}'
    )
    return path


def child(mode: str, base: Path, paths: list[Path], workers: int) -> None:
    """Build once in this process and print one JSON line of measurements."""
    from dataset_devkit.nuscenes.build import build_dataset
    from dataset_devkit.nuscenes.config import load_build_config

    cluster = None
    if mode == "dask":
        from distributed import LocalCluster

        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
        )
        table = f'[executor]\nscheduler = "{cluster.scheduler_address}"\n'
    else:
        table = f"[executor]\nworkers = {1 if mode == 'inline' else workers}\n"
    config = load_build_config(_config(base, paths, mode, table))
    first_seen: dict[str, float] = {}

    def progress(stage: str, _done: int, _total: int) -> None:
        first_seen.setdefault(stage, time.perf_counter())

    with TreeRss() as tree:
        start = time.perf_counter()
        result = build_dataset(config, progress=progress)
        wall = time.perf_counter() - start
    marks = sorted(first_seen.items(), key=lambda kv: kv[1])
    ends = [t for _, t in marks[1:]] + [start + wall]
    stages = {name: end - t for (name, t), end in zip(marks, ends, strict=True)}
    if cluster is not None:
        cluster.close()
    line = {
        "wall_s": wall,
        "images": result.images,
        "scenes": result.scenes,
        "root_sha256": result.root_sha256,
        "peak_rss_mib": _status_kib("self", "VmHWM:") / 1024,
        "tree_rss_mib": tree.peak_kib / 1024,
        "cpu_s": tree.cpu_s,
        "stages": stages,
    }
    print(json.dumps(line))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drives", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--cameras", type=int, default=6, choices=range(1, len(CAMERAS) + 1))
    parser.add_argument("--fps", type=float, default=12.0)
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=240)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rounds", type=int, default=1, help="best of this many builds per mode")
    parser.add_argument(
        "--dir", type=Path, default=None, help="work directory (default: a temp dir)"
    )
    parser.add_argument("--child", nargs=2, metavar=("MODE", "BASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, base = args.child
        paths = sorted(Path(base, "drives").glob("*.mcap"))
        child(mode, Path(base), paths, args.workers)
        return
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown modes {unknown}; choose from {', '.join(MODES)}")

    from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap

    base = Path(tempfile.mkdtemp(prefix="fleet-bench-", dir=args.dir))
    try:
        drive = SampleDrive(
            cameras=CAMERAS[: args.cameras],
            duration_s=args.seconds,
            fps=args.fps,
            width=args.width,
            height=args.height,
        )
        (base / "drives").mkdir()
        start = time.perf_counter()
        for i in range(args.drives):
            start_ns = drive.start_ns + i * 3_600_000_000_000  # one drive per hour
            write_sample_mcap(
                base / "drives" / f"drive-{i:03d}.mcap", replace(drive, start_ns=start_ns)
            )
        frames = args.drives * len(drive.frame_times()) * args.cameras
        size = sum(p.stat().st_size for p in (base / "drives").iterdir())
        print(
            f"fleet: {args.drives} drives x {args.seconds:g} s, {args.cameras} cameras at "
            f"{args.fps:g} Hz, {args.width}x{args.height}: {frames:,} camera frames, "
            f"{size / 1e6:,.0f} MB (written in {time.perf_counter() - start:.1f} s); "
            f"{args.workers} workers, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
        )
        results: dict[str, dict[str, Any]] = {}
        hashes: set[str] = set()
        for _ in range(args.rounds):  # modes interleaved, so load drifts hit each alike
            for mode in modes:
                argv = [sys.executable, __file__, "--workers", str(args.workers)]
                done = subprocess.run(
                    [*argv, "--child", mode, str(base)], capture_output=True, text=True, check=False
                )
                if done.returncode != 0:
                    sys.exit(f"{mode} build failed:\n{done.stderr[-3000:]}")
                result = json.loads(done.stdout.strip().splitlines()[-1])
                hashes.add(result["root_sha256"])
                if mode not in results or result["wall_s"] < results[mode]["wall_s"]:
                    results[mode] = result
                for out in base.glob("out-*"):  # published read-only: make it removable
                    subprocess.run(["chmod", "-R", "u+w", str(out)], check=True)
                    shutil.rmtree(out)
        reference = results.get("local") or next(iter(results.values()))
        print(
            f"{'mode':<8}{'wall s':>9}{'frames/s':>11}{'images/s':>10}{'build RSS':>11}"
            f"{'tree RSS':>10}{'CPU s':>8}{'x local':>9}{'CPU x local':>13}"
        )
        for mode, r in results.items():
            wall = float(r["wall_s"])
            print(
                f"{mode:<8}{wall:>9.2f}{frames / wall:>11,.0f}{float(r['images']) / wall:>10,.0f}"
                f"{float(r['peak_rss_mib']):>9.0f}MB{float(r['tree_rss_mib']):>8.0f}MB"
                f"{float(r['cpu_s']):>8.1f}{wall / float(reference['wall_s']):>9.2f}"
                f"{float(r['cpu_s']) / float(reference['cpu_s']):>13.2f}"
            )
        print("seconds per stage (from its first progress report to the next stage's):")
        for mode, r in results.items():
            stages = r["stages"]
            print(f"  {mode:<8}" + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
        if "dask" in results and "local" in results:
            ratio = float(results["dask"]["wall_s"]) / float(results["local"]["wall_s"])
            print(f"Dask LocalCluster / local processes: {ratio:.2f}x wall time")
        images = int(reference["images"])
        print(
            f"published {images:,} images in {int(reference['scenes'])} scenes; root hashes "
            + ("identical" if len(hashes) == 1 else f"DIFFER: {sorted(hashes)}")
        )
        if len(hashes) != 1:
            sys.exit(1)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(base)], check=False)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
