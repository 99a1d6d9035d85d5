"""Benchmark: decoded-recording ingest, which decodes every packet to find damaged frames.

Ingest of a decoded recording folder decodes every video packet once, inside PyAV's FFmpeg
log capture, so that frames FFmpeg only concealed are known before scenes are cut. This
prints, in one run on the same synthetic folder (``--cameras`` MP4s of ``--seconds`` at
10 fps, ``--size`` pixels):

- ``bare decode``: ``for frame in container.decode(video=0)`` over every video, the limit;
- ``packet scan``: the same decode one packet at a time under the log capture (what ingest
  adds), and its ratio to the bare decode;
- ``read_decoded``: the whole ingest (metadata checks, SHA-256 of the files, the scan).

Each figure is the best of ``--rounds``.

    PYTHONPATH=src python benchmarks/nuscenes_decoded_ingest.py [--cameras 2] [--seconds 60]
        [--size 320x240] [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import av

from dataset_devkit.nuscenes.ingest import read_decoded
from dataset_devkit.nuscenes.ingest.video_scan import scan_video
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_decoded

CAMERAS = ("cam_front", "cam_back", "cam_left", "cam_right", "cam_front_left", "cam_back_left")


def best(rounds: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cameras", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--size", default="320x240")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    drive = SampleDrive(
        cameras=CAMERAS[: args.cameras], duration_s=args.seconds, width=width, height=height
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_sample_decoded(Path(tmp) / "drive", drive)
        videos = sorted(folder.glob("*.mp4"))
        frames = len(drive.frame_times()) * len(videos)

        def bare() -> None:
            for video in videos:
                with av.open(str(video)) as container:
                    for _ in container.decode(video=0):
                        pass

        def scan() -> None:
            for video in videos:
                with av.open(str(video)) as container:
                    scan_video(container, len(drive.frame_times()), video)

        t_bare = best(args.rounds, bare)
        t_scan = best(args.rounds, scan)
        t_ingest = best(args.rounds, lambda: read_decoded(folder))
    print(f"{len(videos)} videos, {frames} frames of {width}x{height}, best of {args.rounds}")
    print(f"bare decode   {t_bare:7.3f} s  {frames / t_bare:8.0f} frames/s  1.00x")
    print(f"packet scan   {t_scan:7.3f} s  {frames / t_scan:8.0f} frames/s  {t_scan / t_bare:.2f}x")
    print(
        f"read_decoded  {t_ingest:7.3f} s  {frames / t_ingest:8.0f} frames/s  "
        f"{t_ingest / t_bare:.2f}x"
    )


if __name__ == "__main__":
    main()
