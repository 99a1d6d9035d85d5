"""Benchmark: nuScenes export throughput against the limit of reading, hashing and copying.

A synthetic drive (foxglove-sdk protobuf MCAP, default 6 cameras at 2 Hz for 250 s = 3,000
frames at 480x320) is ingested into evidence, then exported; the limit is measured in the same
run on the same JPEG files: read each, SHA-256 it, write it to a new file, read that copy back
and SHA-256 it (the contract's bound counts the proof of each copy). Two frame contents:

- ``photo``: crops of a real photograph (matplotlib's ``grace_hopper.jpg``) re-encoded at
  quality 90, about 1.5-2.5 bits per pixel like real camera frames;
- ``noise``: a gradient under strong per-pixel noise, about 4.5 bits per pixel: the worst case
  for the export, because the JPEG decode that proves each frame valid costs in proportion to
  the entropy-coded bytes while the limit is dominated by per-file costs.

The bound is ``(limit + one strict decode per frame + one msgspec encode of the official
tables' rows) / cores``; the same work is also run on
``--workers`` threads with nothing else around it, which shows what the cores give at that
moment (on a shared machine another job's load moves it; the export is compared to both).

The work directory defaults to ``/dev/shm`` (tmpfs) where it exists: there the limit is the
CPU cost of the copy and repeats within 2%, while on this machine's ext4 disk the very same
limit drifted from 0.34 s to 2.05 s over eight consecutive runs (file creation after deletes),
which makes a ratio to it meaningless. ``--dir`` picks another place. Each figure is the best
of ``--rounds``.

    PYTHONPATH=src python benchmarks/nuscenes_export.py [--content photo|noise|both]
        [--seconds 250] [--cameras 6] [--rounds 3] [--workers 2] [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig, build_evidence, export_dataset
from dataset_devkit.nuscenes.common.jpeg import decode_jpeg
from dataset_devkit.nuscenes.evidence import Evidence
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap

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


@dataclass(frozen=True, slots=True)
class NoiseDrive(SampleDrive):
    """Frames of a gradient under strong noise: dense JPEGs, the export's worst case."""

    def image(self, camera: int, frame: int) -> Any:
        rng = np.random.default_rng(camera * 100_003 + frame)
        y, x = np.mgrid[0 : self.height, 0 : self.width]
        base = (x * 255 // self.width + frame * 3 + camera * 40) % 256
        noise = rng.integers(0, 24, size=(self.height, self.width))
        r = (base + noise) % 256
        g = (y * 255 // self.height + noise) % 256
        b = ((x + y + frame) % 64) * 4
        return Image.fromarray(np.stack([r, g, b], axis=-1).astype(np.uint8), "RGB")


@cache
def _photograph(width: int, height: int) -> Image.Image:
    """The real photograph shipped with matplotlib, scaled to cover the frame with margin."""
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    with Image.open(path) as img:
        photo = img.convert("RGB")
    scale = max((width + 64) / photo.width, (height + 64) / photo.height, 1.0)
    if scale > 1.0:
        photo = photo.resize((round(photo.width * scale), round(photo.height * scale)))
    return photo


@dataclass(frozen=True, slots=True)
class PhotoDrive(SampleDrive):
    """Frames cut from a real photograph, moving a little every frame: camera-like JPEGs."""

    def image(self, camera: int, frame: int) -> Any:
        photo = _photograph(self.width, self.height)
        span_x, span_y = photo.width - self.width, photo.height - self.height
        x = (frame * 3 + camera * 11) % (span_x + 1)
        y = (frame * 5 + camera * 17) % (span_y + 1)
        crop = photo.crop((x, y, x + self.width, y + self.height))
        return crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if camera % 2 else crop


def _timed(section: Callable[[], Any]) -> float:
    start = time.perf_counter()
    section()
    return time.perf_counter() - start


def _read_hash_write(source: Path, destination: Path) -> bytes:
    """The floor's work for one frame: read it whole, SHA-256 it, write it to a new file,
    then read the copy back and SHA-256 it (the contract's bound counts that re-read and
    re-hash: every destination copy is proven by its own bytes)."""
    with source.open("rb") as f:
        data = f.read()
    hashlib.sha256(data).hexdigest()
    fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    with destination.open("rb") as f:
        hashlib.sha256(f.read()).hexdigest()
    return data


def limit(evidence: Evidence, target: Path) -> int:
    """Read, hash, copy, re-read and re-hash every exported JPEG once: the physical floor
    of an export's frame work (the strict decode is timed on its own)."""
    target.mkdir()
    total = 0
    for i, image in enumerate(evidence.document.images):
        data = _read_hash_write(evidence.root / image.path, target / f"{i}.jpg")
        total += len(data)
    return total


def _bound_part(evidence: Evidence, target: Path, k: int, parts: int) -> None:
    """Part *k* of *parts* of the bound's own work: read, SHA-256, copy, re-read, re-hash
    and strict decode of every *parts*-th frame."""
    images = evidence.document.images
    for i in range(k, len(images), parts):
        data = _read_hash_write(evidence.root / images[i].path, target / f"{i}.jpg")
        decode_jpeg(data)


def _bound_run(evidence: Evidence, target: Path, workers: int) -> None:
    """The bound's own work on *workers* threads with no export around it: what the cores
    give right now."""
    target.mkdir()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(partial(_bound_part, evidence, target, parts=workers), range(workers)))


def _bound_processes(evidence: Evidence, target: Path, workers: int) -> None:
    """The same work as :func:`_bound_run` on *workers* forked processes: no GIL between
    them, so this is what the cores themselves give to an even split of the bound's work."""
    import multiprocessing

    target.mkdir()
    fork = multiprocessing.get_context("fork")
    procs = [
        fork.Process(target=_bound_part, args=(evidence, target, k, workers))
        for k in range(workers)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"a bound process failed with exit code {proc.exitcode}")


def timed_cpu(section: Callable[[], Any]) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds (all its threads) of *section*."""
    cpu, start = time.process_time(), time.perf_counter()
    section()
    return time.perf_counter() - start, time.process_time() - cpu


def table_rows(evidence: Evidence) -> list[list[Any]]:
    """The export's official table rows as plain dicts, one list per non-empty table."""
    import msgspec

    from dataset_devkit.nuscenes.export.tables import build_tables
    from dataset_devkit.nuscenes.spec import EMPTY_TABLES, TABLE_NAMES

    tables = build_tables(evidence.document)
    return [
        msgspec.to_builtins(getattr(tables, name))
        for name in TABLE_NAMES
        if name not in EMPTY_TABLES
    ]


def encode_tables(rows: list[list[Any]]) -> int:
    """The bound's table work: encode every table's rows once with msgspec (sorted keys)."""
    import msgspec

    encoder = msgspec.json.Encoder(order="deterministic")
    return sum(len(encoder.encode(table)) for table in rows)


def _decode_all(blobs: list[bytes]) -> None:
    """Decode every JPEG once, as export does (strict, 1/8 scale): the cost of the proof."""
    for data in blobs:
        decode_jpeg(data)


def _remove(tree: Path) -> None:
    for p in tree.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(tree)


def run_content(content: str, args: argparse.Namespace, work: Path) -> None:
    kind = {"photo": PhotoDrive, "noise": NoiseDrive}[content]
    drive = kind(
        cameras=CAMERAS[: args.cameras],
        duration_s=args.seconds,
        fps=2.0,
        width=args.width,
        height=args.height,
        quality=90 if content == "photo" else 85,
    )
    t0 = time.perf_counter()
    mcap = write_sample_mcap(work / f"{content}.mcap", drive)
    t_write = time.perf_counter() - t0
    config = PipelineConfig(namespace="bench", scenario=ScenarioConfig(scene_duration_s=20.0))
    t0 = time.perf_counter()
    evidence = build_evidence([mcap], config, work / f"{content}-evidence")
    t_ingest = time.perf_counter() - t0
    frames = len(evidence.document.images)
    blobs = [(evidence.root / image.path).read_bytes() for image in evidence.document.images]
    nbytes = sum(map(len, blobs))
    rows = table_rows(evidence)
    best_limit = best_decode = best_run = best_tables = best_procs = float("inf")
    best = dict.fromkeys(sorted({1, args.workers}), float("inf"))
    cpu = dict.fromkeys(best, float("inf"))
    for r in range(args.rounds):
        limit_dir = work / f"{content}-limit-{r}"
        best_limit = min(best_limit, _timed(partial(limit, evidence, limit_dir)))
        _remove(limit_dir)
        best_decode = min(best_decode, _timed(partial(_decode_all, blobs)))
        best_tables = min(best_tables, _timed(partial(encode_tables, rows)))
        run_dir = work / f"{content}-bound-{r}"
        best_run = min(best_run, _timed(partial(_bound_run, evidence, run_dir, args.workers)))
        _remove(run_dir)
        procs_dir = work / f"{content}-processes-{r}"
        best_procs = min(
            best_procs, _timed(partial(_bound_processes, evidence, procs_dir, args.workers))
        )
        _remove(procs_dir)
        for workers in best:
            staging = work / f"{content}-staging-{r}-{workers}"
            seconds, used = timed_cpu(partial(export_dataset, staging, evidence, workers=workers))
            best[workers] = min(best[workers], seconds)
            cpu[workers] = min(cpu[workers], used)
            _remove(staging)
    mb = nbytes / 1e6
    cores = os.cpu_count() or 1
    # The best any export can do on this machine: the limit's work plus one decode per frame
    # plus one msgspec encode of the metadata tables, spread over every core.
    bound = (best_limit + best_decode + best_tables) / cores
    bits = 8 * nbytes / (frames * args.width * args.height)
    print(
        f"[{content}] {frames} frames ({args.cameras} cameras x 2 Hz x {args.seconds:g} s, "
        f"{args.width}x{args.height}), {mb:.1f} MB of JPEG = {nbytes / frames / 1e3:.1f} kB "
        f"per frame, {bits:.2f} bits/pixel; MCAP {mcap.stat().st_size / 1e6:.1f} MB written "
        f"in {t_write:.1f} s; ingest + evidence {t_ingest:.2f} s = {frames / t_ingest:.0f} "
        "frames/s"
    )
    print(
        f"  limit read+sha256+copy+re-read+re-hash {best_limit:6.3f} s = "
        f"{frames / best_limit:6.0f} frames/s, {mb / best_limit:5.0f} MB/s"
    )
    print(
        f"  strict 1/8 decode, 1 thread {best_decode:6.3f} s = {frames / best_decode:6.0f} "
        f"frames/s, {mb / best_decode:5.0f} MB/s ({best_decode / best_limit:.1f}x the limit)"
    )
    print(
        f"  tables msgspec encode       {best_tables:6.3f} s "
        f"({sum(map(len, rows))} rows, {encode_tables(rows) / 1e6:.1f} MB)"
    )
    print(
        f"  bound (limit + decode + tables) / {cores} cores {bound:6.3f} s = "
        f"{best_limit / bound:.2f}x the limit at best"
    )
    print(
        f"  the bound's work run on {args.workers} threads {best_run:6.3f} s = "
        f"{bound / best_run:.2f}x the bound (what the cores give under the current load)"
    )
    print(
        f"  the bound's work on {args.workers} processes {best_procs:6.3f} s = "
        f"{best_procs / bound:.2f}x the bound's time (no GIL: what the cores give an even "
        "split of it)"
    )
    goal = " (goal <= 1.1x)" if content == "photo" else ""
    for workers, seconds in best.items():
        print(
            f"  export_dataset, {workers} thread(s) {seconds:6.3f} s = {frames / seconds:6.0f} "
            f"frames/s, {mb / seconds:5.0f} MB/s = {best_limit / seconds:.2f}x the limit "
            f"(goal >= 0.5x), {bound / seconds:.2f}x the bound = {seconds / bound:.2f}x "
            f"the time of the bound{goal}, "
            f"{best_run / seconds:.2f}x the bound's work run; CPU {cpu[workers]:.3f} s, over "
            f"{cores} cores {cpu[workers] / cores / bound:.2f}x the bound's time"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--content", choices=("photo", "noise", "both"), default="both")
    parser.add_argument("--seconds", type=float, default=250.0)
    parser.add_argument("--cameras", type=int, default=6)
    parser.add_argument("--width", type=int, default=480)
    parser.add_argument("--height", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("/dev/shm") if Path("/dev/shm").is_dir() else None,
        help="where to work (default: /dev/shm if present, else the temp dir)",
    )
    args = parser.parse_args()
    contents = ("photo", "noise") if args.content == "both" else (args.content,)
    work = Path(tempfile.mkdtemp(prefix="nuscenes-bench-", dir=args.dir))
    try:
        for content in contents:
            run_content(content, args, work)
        print(
            f"best of {args.rounds} rounds in {work.parent}; {os.cpu_count()} cores; "
            f"load {os.getloadavg()[0]:.2f}"
        )
    finally:
        _remove(work)


if __name__ == "__main__":
    main()
