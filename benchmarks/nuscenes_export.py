"""Benchmark: nuScenes export throughput against the limit of reading, hashing and copying.

A textured synthetic drive (foxglove-sdk protobuf MCAP, default 6 cameras at 2 Hz for 250 s =
3,000 frames at 480x320) is ingested into evidence, then exported; the limit is measured in
the same run on the same JPEG files: read each, SHA-256 it, write it to a new file.

    PYTHONPATH=src python benchmarks/nuscenes_export.py [--seconds 250] [--cameras 6]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig, build_evidence, export_dataset
from dataset_devkit.nuscenes.evidence import Evidence
from dataset_devkit.nuscenes.jpeg import decode_jpeg
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap


@dataclass(frozen=True, slots=True)
class TexturedDrive(SampleDrive):
    """A drive whose frames carry texture, so JPEG sizes look like real camera frames."""

    def image(self, camera: int, frame: int) -> Any:
        rng = np.random.default_rng(camera * 100_003 + frame)
        y, x = np.mgrid[0 : self.height, 0 : self.width]
        base = (x * 255 // self.width + frame * 3 + camera * 40) % 256
        noise = rng.integers(0, 24, size=(self.height, self.width))
        r = (base + noise) % 256
        g = (y * 255 // self.height + noise) % 256
        b = ((x + y + frame) % 64) * 4
        return Image.fromarray(np.stack([r, g, b], axis=-1).astype(np.uint8), "RGB")


def _limit(evidence: Evidence, target: Path) -> tuple[float, int]:
    """Read, hash and copy every exported JPEG once: the physical floor of an export."""
    target.mkdir()
    total = 0
    start = time.perf_counter()
    for i, image in enumerate(evidence.document.images):
        with (evidence.root / image.path).open("rb") as f:
            data = f.read()
        hashlib.sha256(data).hexdigest()
        fd = os.open(target / f"{i}.jpg", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        total += len(data)
    return time.perf_counter() - start, total


def _decode_floor(evidence: Evidence) -> float:
    """Decode every exported JPEG once (reduced-scale, as export does): the cost of proof."""
    blobs = [(evidence.root / image.path).read_bytes() for image in evidence.document.images]
    start = time.perf_counter()
    for data in blobs:
        decode_jpeg(data)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=250.0)
    parser.add_argument("--cameras", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="threads of the parallel export")
    args = parser.parse_args()
    names = (
        "cam_front",
        "cam_front_left",
        "cam_front_right",
        "cam_back",
        "cam_back_left",
        "cam_back_right",
        "cam_left",
        "cam_right",
    )[: args.cameras]
    drive = TexturedDrive(
        cameras=names, duration_s=args.seconds, fps=2.0, width=480, height=320, quality=85
    )
    work = Path(tempfile.mkdtemp(prefix="nuscenes-bench-"))
    try:
        t0 = time.perf_counter()
        mcap = write_sample_mcap(work / "drive.mcap", drive)
        t_write = time.perf_counter() - t0
        config = PipelineConfig(namespace="bench", scenario=ScenarioConfig(scene_duration_s=20.0))
        t0 = time.perf_counter()
        evidence = build_evidence([mcap], config, work / "evidence")
        t_ingest = time.perf_counter() - t0
        frames = len(evidence.document.images)
        best_limit = best_decode = float("inf")
        best = {1: float("inf"), args.workers: float("inf")}
        nbytes = 0
        for r in range(args.rounds):
            t_lim, nbytes = _limit(evidence, work / f"limit-{r}")
            best_limit = min(best_limit, t_lim)
            best_decode = min(best_decode, _decode_floor(evidence))
            for workers in best:
                t0 = time.perf_counter()
                result = export_dataset(work / f"staging-{r}-{workers}", evidence, workers=workers)
                best[workers] = min(best[workers], time.perf_counter() - t0)
                assert result.images == frames
        mb = nbytes / 1e6
        print(
            f"recording: {mcap.stat().st_size / 1e6:.1f} MB MCAP, {frames} frames exported "
            f"({args.cameras} cameras x 2 Hz x {args.seconds:g} s, 480x320), {mb:.1f} MB of JPEG"
        )
        print(f"write sample MCAP (foxglove-sdk): {t_write:.2f} s")
        print(
            f"ingest + evidence (2 passes over MCAP, frames stored): {t_ingest:.2f} s "
            f"= {frames / t_ingest:.0f} frames/s"
        )
        print(
            f"limit read+sha256+copy: {best_limit:.3f} s = {frames / best_limit:.0f} frames/s, "
            f"{mb / best_limit:.0f} MB/s"
        )
        print(
            f"decode floor (1/8-scale libjpeg decode of each JPEG): {best_decode:.3f} s = "
            f"{frames / best_decode:.0f} frames/s; limit + decode = "
            f"{best_limit + best_decode:.3f} s"
        )
        for workers, seconds in best.items():
            print(
                f"export_dataset, {workers} thread(s): {seconds:.3f} s = "
                f"{frames / seconds:.0f} frames/s, {mb / seconds:.0f} MB/s, "
                f"{best_limit / seconds:.2f}x the limit (goal >= 0.5x), "
                f"{(best_limit + best_decode) / seconds:.2f}x limit + decode"
            )
        print(f"best of {args.rounds} rounds; machine has {os.cpu_count()} cores, shared")
    finally:
        for p in work.rglob("*"):
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
