"""Benchmark: a fleet of generated drives built end to end, recordings -> published dataroot.

Each drive of ``--fleet`` (``MINUTES:CAMERAS`` items, default one 60-minute six-camera drive
at 12 Hz, about 260,000 frames, at reduced resolution so it is quick to generate) is written
with the real writers (protobuf MCAP with the ``mcap`` writer, or a decoded folder of MP4
videos through PyAV), then ``build_dataset`` runs in a fresh child process: the child's peak
RSS is the build's. Printed: wall time, frames/s and MB/s end to end, the share of each
build stage, peak RSS against the goal of 400 MB + 8 KB per key-frame sample and per stage
(the final validation of the finalized tree apart from the official loader), and the
export's fraction of the bound (read + SHA-256 + copy + re-read + re-hash of the copy +
strict decode of every exported frame + one msgspec encode of the official tables' rows,
divided by the cores), measured on the same evidence in the same run, with the bound's
frame work also run on the export's threads (what they give it at that moment: on a shared
machine another job's load moves it).

The generator is importable (``write_fleet``, ``FleetDrive``, ``parse_fleet``) so other
benchmarks build the same drives::

    from benchmarks.nuscenes_fleet import parse_fleet, write_fleet
    paths = write_fleet(work, parse_fleet("5:6,5:3"), source="mcap")

Run::

    PYTHONPATH=src python benchmarks/nuscenes_fleet.py [--fleet 60:6] [--fps 12]
        [--source mcap|decoded] [--width 64] [--height 48] [--export-rounds 3]
        [--workers N] [--dir /dev/shm] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

CAMERAS = (
    "cam_front",
    "cam_front_left",
    "cam_front_right",
    "cam_back",
    "cam_back_left",
    "cam_back_right",
    "cam_left",
    "cam_right",
)
#: 2023-11-14 11:06:40 UTC; drive ``i`` starts ``i`` hours later (distinct daytime drives).
_START_NS = 1_699_960_000_000_000_000
_HOUR_NS = 3_600_000_000_000
#: The memory goal of a build: this much plus ``_PER_SAMPLE`` per key-frame sample.
_BASE_BYTES = 400 * 1024 * 1024
_PER_SAMPLE = 8 * 1024


@dataclass(frozen=True, slots=True)
class FleetDrive:
    """One generated drive: length, rig, camera rate and frame size."""

    minutes: float
    cameras: int = 6
    fps: float = 12.0
    width: int = 64
    height: int = 48

    @property
    def frames(self) -> int:
        """Camera frames in the drive (every camera, every frame)."""
        return int(self.minutes * 60 * self.fps) * self.cameras


def parse_fleet(
    text: str, *, fps: float = 12.0, width: int = 64, height: int = 48
) -> list[FleetDrive]:
    """``"60:6,5:2"`` -> a 60-minute six-camera drive and a 5-minute two-camera drive."""
    drives = []
    for item in text.split(","):
        minutes, _, cameras = item.strip().partition(":")
        n = int(cameras or 6)
        if not 1 <= n <= len(CAMERAS) or float(minutes) <= 0:
            raise SystemExit(f"--fleet item {item!r}: expected MINUTES:CAMERAS with 1-8 cameras")
        drives.append(FleetDrive(float(minutes), n, fps, width, height))
    return drives


def write_drive(path: Path, drive: FleetDrive, index: int = 0, *, source: str = "mcap") -> Path:
    """Write one drive as ``path`` (an ``.mcap`` file, or a decoded folder) and return it.

    Messages are generated and written one at a time, so an hour-long drive is written in
    constant memory.
    """
    from dataset_devkit.nuscenes.samples import (
        SampleDrive,
        write_sample_decoded,
        write_sample_mcap,
    )

    sample = SampleDrive(
        cameras=CAMERAS[: drive.cameras],
        duration_s=drive.minutes * 60,
        fps=drive.fps,
        width=drive.width,
        height=drive.height,
        start_ns=_START_NS + index * _HOUR_NS,
    )
    if source == "mcap":
        return write_sample_mcap(path, sample)
    return write_sample_decoded(path, sample, recording_id=f"drive-{index:04d}")


def write_fleet(work: Path, drives: Sequence[FleetDrive], *, source: str = "mcap") -> list[Path]:
    """Write every drive of *drives* under *work* (``drive-0000.mcap``, ...); their paths."""
    work.mkdir(parents=True, exist_ok=True)
    suffix = ".mcap" if source == "mcap" else ""
    return [
        write_drive(work / f"drive-{i:04d}{suffix}", d, i, source=source)
        for i, d in enumerate(drives)
    ]


def build_toml(paths: Sequence[Path], out: Path, *, source: str) -> str:
    """A build config for *paths* publishing under *out* (20 s scenes, every scene kept)."""
    listed = ", ".join(json.dumps(str(p)) for p in paths)
    return f"""\
namespace = "fleet-bench"

[sources]
type = "{"mcap_hf" if source == "mcap" else "decoded_hf"}"
paths = [{listed}]

[scenario]
scene_duration_s = 20.0

[image]
jpeg_quality = 95

[publication]
version = "v1.0-trainval"
refuse_overwrite = true

[paths]
output_dir = {json.dumps(str(out))}
"""


def _child(config_path: str) -> None:
    """Run one build in this (fresh) process; print stage start times and peak RSS as JSON."""
    import resource

    from dataset_devkit.nuscenes.build.service import build_dataset
    from dataset_devkit.nuscenes.config import load_build_config

    starts: dict[str, float] = {}
    stage_peaks: dict[str, int] = {}
    current = ["setup"]

    def end_segment(next_segment: str) -> None:
        stage_peaks[current[0]] = max(stage_peaks.get(current[0], 0), _rss_high_water())
        current[0] = next_segment

    def progress(stage: str, done: int, total: int) -> None:
        starts.setdefault(stage, time.perf_counter())
        repeated = current[0] == "final-validation" and stage == "official-loader"
        if stage != current[0] and not repeated:
            end_segment(stage)
        if stage == "official-loader" and total and done == total:
            # What follows until hashing is the final validation of the finalized tree.
            end_segment("final-validation")

    t0 = time.perf_counter()
    result = build_dataset(load_build_config(config_path), progress=progress)
    wall = time.perf_counter() - t0
    end_segment("end")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = {
        "wall": wall,
        "t0": t0,
        "starts": starts,
        # Resetting VmHWM between stages resets ru_maxrss too: the peak is the stages' max.
        "peak_rss": max(peak_kib * 1024, *stage_peaks.values()),
        "stage_peaks": stage_peaks,
        "samples": result.samples,
        "images": result.images,
        "scenes": result.scenes,
        "root": result.root_sha256,
    }
    print(json.dumps(report))


def _rss_high_water() -> int:
    """Peak RSS since the last call, in bytes (``VmHWM``, then reset through ``clear_refs``).

    0 where ``/proc`` does not offer it; the whole build's peak is still ``ru_maxrss``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            hwm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # resets VmHWM to the current RSS
    except (OSError, StopIteration, ValueError):
        return 0
    return hwm


def _stage_shares(starts: dict[str, float], t0: float, wall: float) -> list[tuple[str, float]]:
    """Seconds per stage from the time each stage first reported; ``setup`` before the first."""
    ordered = sorted(starts.items(), key=lambda kv: kv[1])
    marks = [("setup", t0), *ordered, ("end", t0 + wall)]
    return [(marks[i][0], marks[i + 1][1] - marks[i][1]) for i in range(len(marks) - 1)]


def _tree_bytes(paths: Sequence[Path]) -> int:
    total = 0
    for p in paths:
        if p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        else:
            total += p.stat().st_size
    return total


def _export_fraction(
    evidence_dir: Path, work: Path, rounds: int, workers: int | None
) -> dict[str, float]:
    """The export against its bound on the build's own evidence: best of *rounds* each."""
    # the export benchmark's table work (run as a script, ``benchmarks/`` is on the path)
    from nuscenes_export import (
        _bound_processes,
        _bound_run,
        encode_tables,
        limit,
        table_rows,
        timed_cpu,
    )

    from dataset_devkit.nuscenes import export_dataset
    from dataset_devkit.nuscenes.common.jpeg import decode_jpeg
    from dataset_devkit.nuscenes.evidence import read_evidence
    from dataset_devkit.nuscenes.export.images import default_copy_threads

    evidence = read_evidence(evidence_dir)
    images = evidence.document.images
    # the export's own default unless --workers names a count: the bound's frame work runs
    # on as many threads as the export's copies
    threads = workers if workers is not None else default_copy_threads(images)
    rows = table_rows(evidence)
    cores = os.cpu_count() or 1
    best = dict.fromkeys(
        ("copy", "decode", "tables", "threads", "processes", "export", "cpu", "on_pool"),
        float("inf"),
    )
    for r in range(rounds):
        target = work / f"limit-{r}"
        t0 = time.perf_counter()
        limit(evidence, target)
        best["copy"] = min(best["copy"], time.perf_counter() - t0)
        shutil.rmtree(target)
        blobs = [(evidence.root / image.path).read_bytes() for image in images]
        t0 = time.perf_counter()
        for data in blobs:
            decode_jpeg(data)
        best["decode"] = min(best["decode"], time.perf_counter() - t0)
        del blobs
        t0 = time.perf_counter()
        encode_tables(rows)
        best["tables"] = min(best["tables"], time.perf_counter() - t0)
        # the bound's per-frame work on the export's threads: what they give at this moment
        run_dir = work / f"threads-{r}"
        t0 = time.perf_counter()
        _bound_run(evidence, run_dir, threads)
        best["threads"] = min(best["threads"], time.perf_counter() - t0)
        shutil.rmtree(run_dir)
        # the same work split over every core in processes: no GIL between the parts
        procs_dir = work / f"processes-{r}"
        t0 = time.perf_counter()
        _bound_processes(evidence, procs_dir, cores)
        best["processes"] = min(best["processes"], time.perf_counter() - t0)
        shutil.rmtree(procs_dir)
        staging = work / f"export-{r}"
        seconds, cpu = timed_cpu(partial(export_dataset, staging, evidence, workers=workers))
        best["export"] = min(best["export"], seconds)
        best["cpu"] = min(best["cpu"], cpu)
        _remove(staging)
    best["on_pool"] = _export_on_pool(evidence, work, rounds, cores)
    bound = (best["copy"] + best["decode"] + best["tables"]) / cores
    return {
        **best,
        "bound": bound,
        "fraction": bound / best["export"],
        "frames": len(images),
        "copy_threads": threads,
    }


def _export_on_pool(evidence: Any, work: Path, rounds: int, cores: int) -> float:
    """Best time of the export with its frames copied on a local pool of *cores* worker
    processes, started and warm beforehand, as a build of several recordings has its pool
    (inf on one core)."""
    from dataset_devkit.nuscenes import export_dataset
    from dataset_devkit.nuscenes.common.executor import local_pool

    best = float("inf")
    with local_pool(cores, cores, ("dataset_devkit.nuscenes.export.parallel",)) as pool:
        if pool is None:
            return best
        for future in [pool.submit(os.getpid) for _ in range(cores)]:
            future.result()
        for r in range(rounds):
            staging = work / f"export-pool-{r}"
            t0 = time.perf_counter()
            export_dataset(staging, evidence, executor=pool)
            best = min(best, time.perf_counter() - t0)
            _remove(staging)
    return best


def _remove(tree: Path) -> None:
    if not tree.exists():
        return
    for p in tree.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    tree.chmod(0o755)
    shutil.rmtree(tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fleet", default="60:6", help="MINUTES:CAMERAS,... (default 60:6)")
    parser.add_argument("--fps", type=float, default=12.0)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--height", type=int, default=48)
    parser.add_argument("--source", choices=("mcap", "decoded"), default="mcap")
    parser.add_argument("--export-rounds", type=int, default=3)
    parser.add_argument(
        "--workers", type=int, help="export copy threads (default: the export's own default)"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("/dev/shm") if Path("/dev/shm").is_dir() else None,
        help="where to work (default: /dev/shm if present, else the temp dir)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    drives = parse_fleet(args.fleet, fps=args.fps, width=args.width, height=args.height)
    work = Path(tempfile.mkdtemp(prefix="nuscenes-fleet-", dir=args.dir))
    try:
        t0 = time.perf_counter()
        paths = write_fleet(work / "recordings", drives, source=args.source)
        t_write = time.perf_counter() - t0
        source_bytes = _tree_bytes(paths)
        frames = sum(d.frames for d in drives)
        config = work / "build.toml"
        config.write_text(build_toml(paths, work / "out", source=args.source), encoding="utf-8")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(Path(__file__).parents[1] / "src"), os.environ.get("PYTHONPATH")])
            ),
        }
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(config)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        child: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        export = _export_fraction(work / "out" / "evidence", work, args.export_rounds, args.workers)
    finally:
        if not args.keep:
            _remove(work)
    wall = child["wall"]
    mb = source_bytes / 1e6
    print(
        f"fleet {args.fleet} ({args.source}, {args.fps:g} Hz, {args.width}x{args.height}): "
        f"{len(drives)} drive(s), {frames:,} camera frames, {mb:.1f} MB of recordings "
        f"written in {t_write:.1f} s"
    )
    print(
        f"build end to end {wall:.1f} s = {frames / wall:,.0f} frames/s, {mb / wall:.1f} MB/s; "
        f"published {child['scenes']} scenes, {child['samples']:,} samples, "
        f"{child['images']:,} images"
    )
    for stage, seconds in _stage_shares(child["starts"], child["t0"], wall):
        print(f"  {stage:<16} {seconds:8.2f} s  {100 * seconds / wall:5.1f} %")
    goal = _BASE_BYTES + _PER_SAMPLE * child["samples"]
    peak = child["peak_rss"]
    print(
        f"peak RSS {peak / 2**20:.0f} MiB = {peak / frames:,.0f} B per frame, "
        f"{peak / max(child['samples'], 1):,.0f} B per key-frame sample; goal "
        f"{goal / 2**20:.0f} MiB (400 MiB + 8 KiB x {child['samples']:,} samples): "
        f"{'met' if peak <= goal else 'NOT met'}"
    )
    peaks = child["stage_peaks"]
    if any(peaks.values()):
        print(
            "peak RSS by stage: "
            + ", ".join(f"{stage} {value / 2**20:.0f} MiB" for stage, value in peaks.items())
        )
    print(
        f"export of {export['frames']:,.0f} frames: {export['export']:.2f} s; "
        f"read+sha256+copy+re-read+re-hash {export['copy']:.2f} s, "
        f"strict decode {export['decode']:.2f} s, "
        f"tables msgspec encode {export['tables']:.3f} s, "
        f"bound / {os.cpu_count()} cores {export['bound']:.2f} s: "
        f"{export['fraction']:.2f} of the bound = {1 / export['fraction']:.2f}x the bound's "
        "time (goal <= 1.3x)"
    )
    print(
        f"  the bound's frame work run on {export['copy_threads']:.0f} thread(s) "
        f"{export['threads']:.2f} s "
        f"= {export['threads'] / export['bound']:.2f}x the bound (what threads give it under "
        f"the current load); the export {export['export'] / export['threads']:.2f}x that run"
    )
    cores = os.cpu_count() or 1
    print(
        f"  the bound's frame work on {cores} processes {export['processes']:.2f} s = "
        f"{export['processes'] / export['bound']:.2f}x the bound (no GIL: an even split); "
        f"the export's CPU {export['cpu']:.2f} s, over {cores} cores "
        f"{export['cpu'] / cores / export['bound']:.2f}x the bound (the least any schedule "
        "of the export's work could take)"
    )
    if export["on_pool"] != float("inf"):
        print(
            f"  the export with its frames copied on {cores} worker processes (as a build of "
            f"several recordings runs it, on its warm pool): {export['on_pool']:.2f} s = "
            f"{export['on_pool'] / export['bound']:.2f}x the bound, "
            f"{export['on_pool'] / export['processes']:.2f}x the bound's own 2-process run"
        )
    print(f"root {child['root']}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
