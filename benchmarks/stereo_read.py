"""Stereo reader speed against its physical peers, measured side by side in one run.

1. Random single-frame latency of ``VideoReader.read([f])`` against the cost of decoding from
   the nearest keyframe with plain PyAV (seek, decode to the pts, convert): goal <= 1.2x, and
   the reader must decode exactly ``f - keyframe + 1`` frames (no wasted decode).
2. Sequential whole-clip read in frames/s against a plain PyAV decode loop: goal >= 0.9x.
3. Reopened handle (a dataset cycling through more videos than it keeps open): one random
   frame through a fresh ``VideoReader`` that demuxes the file to index it, against one given
   the frame index its dataset kept, against plain PyAV open + seek + decode (the floor).
4. Depth frame read (``DepthReader``) against a direct numcodecs decode of its chunk file
   plus the same float32 conversion: goal >= 0.8x.

Usage::

    PYTHONPATH=src python benchmarks/stereo_read.py --width 1280 --height 720 --frames 241
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import av
import numpy as np
from numcodecs import Blosc

from dataset_devkit.stereo.depth import DepthReader
from dataset_devkit.stereo.depth_writer import write_depth_group
from dataset_devkit.stereo.video import VideoReader, probe_video


def make_clip(path: Path, frames: int, width: int, height: int, gop: int) -> None:
    """A textured, moving H.264 clip (noise scrolled over a gradient) with a fixed GOP."""
    rng = np.random.default_rng(0)
    # 8x8-pixel blocks of noise: detail like a rendered scene, at a realistic bitrate
    coarse = rng.integers(0, 256, size=(height // 8 + 1, width // 4 + 1, 3), dtype=np.uint8)
    texture = coarse.repeat(8, axis=0).repeat(8, axis=1)[:height, : width * 2]
    ramp = np.linspace(0, 255, width, dtype=np.uint8)[None, :, None]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=24)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {
            "g": str(gop),
            "keyint_min": str(gop),
            "sc_threshold": "0",
            "bf": "2",
            "crf": "23",
            "preset": "ultrafast",
        }
        for number in range(frames):
            shift = (number * 7) % width
            image = (texture[:, shift : shift + width] // 2 + ramp // 2).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


class LazyDepth:
    """Float metres generated chunk by chunk, so a 720p clip never sits in memory whole."""

    def __init__(self, frames: int, height: int, width: int) -> None:
        self.shape = (frames, height, width)
        self.dtype = np.dtype(np.float32)
        self._noise = np.random.default_rng(1).normal(0, 0.02, size=(height, width))

    def __getitem__(self, index: slice) -> np.ndarray[Any, Any]:
        start, stop, _ = index.indices(self.shape[0])
        t = np.arange(start, stop, dtype=np.float64)[:, None, None]
        x = np.linspace(0, 1, self.shape[2])[None, None, :]
        y = np.linspace(0, 1, self.shape[1])[None, :, None]
        return (2.0 + 0.05 * t + 8.0 * x * y + self._noise).astype(np.float32)

    def read_frames(self, start: int, stop: int, out: np.ndarray[Any, Any]) -> Any:
        out[: stop - start] = self[start:stop]
        return out[: stop - start]


class CountingReader(VideoReader):
    """Counts decoded frames, to prove the reader decodes nothing it does not need."""

    decoded = 0

    def _next_frame(self) -> tuple[int, Any]:
        CountingReader.decoded += 1
        return super()._next_frame()


def plain_keyframe_decode(container: Any, pts: tuple[int, ...], keyframe: int, target: int) -> Any:
    stream = container.streams.video[0]
    container.seek(pts[keyframe], stream=stream, backward=True, any_frame=False)
    for frame in container.decode(stream):
        if frame.pts == pts[target]:
            return frame.to_ndarray(format="rgb24")
    raise RuntimeError("target not decoded")


def bench_random(path: Path, reads: int, threads: int, repeats: int) -> None:
    info = probe_video(path)
    targets = random.Random(6).sample(range(info.num_frames), min(reads, info.num_frames))
    needed = sum(t - info.keyframe_for(t) + 1 for t in targets)

    # best of `repeats` rounds, the two sides back to back in each round, so the load of
    # other processes on a shared machine hits both alike
    reader = CountingReader(path, threads)
    reader.read([0])
    plain_rounds, ours_rounds, decoded = [], [], []
    with av.open(str(path)) as container:
        container.streams.video[0].codec_context.thread_count = threads

        def run_plain() -> float:
            start = time.perf_counter()
            for t in targets:
                plain_keyframe_decode(container, info.pts, info.keyframe_for(t), t)
            return time.perf_counter() - start

        def run_ours() -> float:
            CountingReader.decoded = 0
            start = time.perf_counter()
            for t in targets:
                reader._frames = None  # force a seek every time, as a random access would
                reader.read([t])
            decoded.append(CountingReader.decoded)
            return time.perf_counter() - start

        for round_number in range(repeats):  # alternate who goes first: no order bias
            if round_number % 2:
                ours_rounds.append(run_ours())
                plain_rounds.append(run_plain())
            else:
                plain_rounds.append(run_plain())
                ours_rounds.append(run_ours())
    reader.close()
    plain, ours = min(plain_rounds) / len(targets), min(ours_rounds) / len(targets)
    print(
        f"random single frame ({len(targets)} reads, threads={threads}): reader "
        f"{ours * 1e3:.1f} ms, plain keyframe decode {plain * 1e3:.1f} ms -> "
        f"{ours / plain:.2f}x (goal <= 1.2x); frames decoded {max(decoded)} per round "
        f"vs needed {needed}"
    )


def bench_reopen(path: Path, reads: int, repeats: int) -> None:
    info = probe_video(path)
    targets = random.Random(8).sample(range(info.num_frames), min(reads, info.num_frames))

    def run(known: bool) -> float:
        start = time.perf_counter()
        for t in targets:
            reader = VideoReader(path, 1, info if known else None)
            reader.read([t])
            reader.close()
        return time.perf_counter() - start

    def run_plain() -> float:
        start = time.perf_counter()
        for t in targets:
            with av.open(str(path)) as container:
                container.streams.video[0].codec_context.thread_count = 1
                plain_keyframe_decode(container, info.pts, info.keyframe_for(t), t)
        return time.perf_counter() - start

    rounds: dict[str, list[float]] = {"demux": [], "kept": [], "plain": []}
    for round_number in range(repeats):
        order = ["demux", "kept", "plain"]
        for name in order[round_number % 3 :] + order[: round_number % 3]:
            rounds[name].append(run_plain() if name == "plain" else run(name == "kept"))
    best = {name: min(times) / len(targets) for name, times in rounds.items()}
    print(
        f"reopened handle, one random frame ({len(targets)} reads): demux-indexed "
        f"{best['demux'] * 1e3:.1f} ms, kept index {best['kept'] * 1e3:.1f} ms, plain PyAV "
        f"open+seek+decode {best['plain'] * 1e3:.1f} ms -> {best['demux'] / best['plain']:.2f}x "
        f"vs {best['kept'] / best['plain']:.2f}x"
    )


def bench_sequential(path: Path, threads: int, repeats: int) -> None:
    info = probe_video(path)
    ours_times, plain_times = [], []

    def run_plain() -> float:
        with av.open(str(path)) as container:
            container.streams.video[0].codec_context.thread_count = threads
            start = time.perf_counter()
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
            np.stack(frames)
            return time.perf_counter() - start

    def run_ours() -> float:
        reader = VideoReader(path, threads)
        reader.info  # noqa: B018 - index outside the timed part, as a worker's handle would be
        start = time.perf_counter()
        reader.read(range(info.num_frames))
        elapsed = time.perf_counter() - start
        reader.close()
        return elapsed

    for round_number in range(repeats):  # best of rounds, alternating who goes first
        if round_number % 2:
            ours_times.append(run_ours())
            plain_times.append(run_plain())
        else:
            plain_times.append(run_plain())
            ours_times.append(run_ours())
    ours, plain = min(ours_times), min(plain_times)
    print(
        f"sequential clip ({info.num_frames} frames, threads={threads}): reader "
        f"{info.num_frames / ours:.1f} frames/s, plain PyAV {info.num_frames / plain:.1f} "
        f"frames/s -> {plain / ours:.2f}x of plain (goal >= 0.9x)"
    )


def bench_depth(
    group: Path, frames: int, height: int, width: int, reads: int, repeats: int
) -> None:
    targets = random.Random(7).sample(range(frames), min(reads, frames))
    reader = DepthReader(group, frames, height, width)
    reader.read("left", [0])
    codec = Blosc()
    ours_rounds, direct_rounds = [], []

    def run_ours() -> float:
        start = time.perf_counter()
        for t in targets:
            reader.read("left", [t])
        return time.perf_counter() - start

    def run_direct() -> float:
        start = time.perf_counter()
        for t in targets:
            raw = (group / "left" / f"{t // 4}.0.0").read_bytes()
            chunk = np.frombuffer(codec.decode(raw), dtype="<u4").reshape(4, height, width)
            chunk[t % 4].astype(np.float32) / 1000
        return time.perf_counter() - start

    for round_number in range(repeats):  # best of rounds, alternating who goes first
        if round_number % 2:
            direct_rounds.append(run_direct())
            ours_rounds.append(run_ours())
        else:
            ours_rounds.append(run_ours())
            direct_rounds.append(run_direct())
    ours, direct = min(ours_rounds) / len(targets), min(direct_rounds) / len(targets)
    print(
        f"depth frame ({len(targets)} reads): reader {ours * 1e3:.1f} ms, direct numcodecs "
        f"chunk decode {direct * 1e3:.1f} ms -> {direct / ours:.2f}x of direct (goal >= 0.8x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--frames", type=int, default=241)
    parser.add_argument("--gop", type=int, default=24)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clip = Path(tmp) / "left.mp4"
        start = time.perf_counter()
        make_clip(clip, args.frames, args.width, args.height, args.gop)
        group = Path(tmp) / "group.zarr"
        source = LazyDepth(args.frames, args.height, args.width)
        write_depth_group(
            group,
            {"left": source, "right": source},
            None,
            {},
            {"left": "generated", "right": "generated"},
        )
        print(
            f"setup: {args.width}x{args.height}, {args.frames} frames, GOP {args.gop}, "
            f"{clip.stat().st_size / 1e6:.1f} MB video, depth written in "
            f"{time.perf_counter() - start:.1f} s"
        )
        bench_random(clip, args.reads, threads=1, repeats=args.repeats)
        bench_reopen(clip, args.reads, repeats=args.repeats)
        bench_sequential(clip, threads=1, repeats=args.repeats)
        bench_sequential(clip, threads=0, repeats=args.repeats)
        bench_depth(group, args.frames, args.height, args.width, args.reads, args.repeats)


if __name__ == "__main__":
    main()
