"""Benchmark: raw camera frames to JPEG q95 through our path, against libjpeg-turbo's bound.

Frames are crops of a real photograph (matplotlib's ``grace_hopper.jpg``, scaled to cover the
frame) that move a little every frame, stored as ``sensor_msgs/Image`` rgb8 rows. Our path is
what the ingest runs per frame: ``raw_to_pixels`` (a zero-copy view for rgb8) then
``encode_pixels(..., 95)`` (Pillow's libjpeg-turbo, 4:4:4, written through a memfd so the
GIL is released). The bound is the same frames encoded by libjpeg-turbo through simplejpeg
straight from the array, with no conversion (simplejpeg releases the GIL; its bytes differ
from Pillow's, which is why it is only the bound). Also measured, for the GIL question: the
former encoder (Pillow into a ``BytesIO``, which holds the GIL for each 64 KiB block).

Each variant runs on 1 thread and on ``--workers`` threads (a pool), in interleaved rounds;
the figure is the median round. ``scaling`` is the many-thread rate over the 1-thread rate
of the same encoder in the same run: near 1.0 means the encoder holds the GIL (or that the
machine's other load leaves no second core). ``GIL wait`` is less sensitive to that load: a
Python thread sleeping 1 ms in a loop while this thread encodes records how late it wakes
(90th percentile); an encoder that holds the GIL makes it wait for the GIL as long as each
held stretch lasts (``idle`` is the same probe with nothing encoding).
``--encodings`` adds other raw encodings (their conversion is then part of our path).

    PYTHONPATH=src python benchmarks/camera_encode.py [--frames 24] [--rounds 5]
        [--workers N] [--sizes 1920x1080,640x480] [--encodings rgb8,bgr8,bayer_rggb8,uyvy]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
import simplejpeg
from nuscenes_export import _photograph  # the export benchmark's photograph, scaled to cover
from PIL import Image

from dataset_devkit.nuscenes.common.jpeg import encode_pixels
from dataset_devkit.nuscenes.common.pixels import raw_to_pixels

Array = npt.NDArray[np.uint8]
QUALITY = 95


def frames_rgb(width: int, height: int, count: int) -> list[Array]:
    """*count* crops of the photograph, moving a little every frame."""
    photo = _photograph(width, height)
    span_x, span_y = photo.width - width, photo.height - height
    out = []
    for k in range(count):
        x, y = (k * 7) % (span_x + 1), (k * 5) % (span_y + 1)
        out.append(np.asarray(photo.crop((x, y, x + width, y + height))))
    return out


def _message(rgb: Array, encoding: str) -> bytes:
    """The frame as a raw message of *encoding* (step = width x bytes per pixel)."""
    if encoding == "rgb8":
        return rgb.tobytes()
    if encoding == "bgr8":
        return rgb[:, :, ::-1].tobytes()
    if encoding == "bayer_rggb8":
        mosaic = np.empty(rgb.shape[:2], dtype=np.uint8)
        mosaic[0::2, 0::2], mosaic[0::2, 1::2] = rgb[0::2, 0::2, 0], rgb[0::2, 1::2, 1]
        mosaic[1::2, 0::2], mosaic[1::2, 1::2] = rgb[1::2, 0::2, 1], rgb[1::2, 1::2, 2]
        return mosaic.tobytes()
    if encoding == "uyvy":
        import cv2

        yuv = cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV).astype(np.int32)
        u = (yuv[:, 0::2, 1] + yuv[:, 1::2, 1]) // 2
        v = (yuv[:, 0::2, 2] + yuv[:, 1::2, 2]) // 2
        return np.stack([u, yuv[:, 0::2, 0], v, yuv[:, 1::2, 0]], -1).astype(np.uint8).tobytes()
    raise SystemExit(f"--encodings: {encoding!r} has no generator here")


_BYTES_PER_PIXEL = {"rgb8": 3, "bgr8": 3, "bayer_rggb8": 1, "uyvy": 2}


def our_path(encoding: str, width: int, height: int) -> Callable[[bytes], bytes]:
    step = width * _BYTES_PER_PIXEL[encoding]

    def run(data: bytes) -> bytes:
        pixels = raw_to_pixels(
            data,
            encoding=encoding,
            width=width,
            height=height,
            step=step,
            is_bigendian=False,
            what="bench",
        )
        return encode_pixels(pixels, QUALITY)

    return run


def bound(rgb: Array) -> bytes:
    return simplejpeg.encode_jpeg(rgb, quality=QUALITY, colorspace="RGB", colorsubsampling="444")


def pillow_bytesio(rgb: Array) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="JPEG", quality=QUALITY, optimize=False, subsampling=0)
    return buf.getvalue()


def _rate(work: Callable[[Any], bytes], items: list[Any], workers: int) -> float:
    """Frames per second of *work* over *items* on *workers* threads (1: this thread)."""
    start = time.perf_counter()
    if workers == 1:
        for item in items:
            work(item)
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(work, items))
    return len(items) / (time.perf_counter() - start)


def gil_wait_ms(work: Callable[[Any], bytes] | None, items: list[Any], seconds: float) -> float:
    """90th percentile of how late a 1 ms sleeper thread wakes while *work* runs here."""
    late: list[float] = []
    stop = threading.Event()

    def sleeper() -> None:
        while not stop.is_set():
            start = time.perf_counter()
            time.sleep(0.001)
            late.append(time.perf_counter() - start - 0.001)

    thread = threading.Thread(target=sleeper)
    thread.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for item in items:
            if work is None:
                time.sleep(0.005)
            else:
                work(item)
    stop.set()
    thread.join()
    return 1000 * statistics.quantiles(late, n=10)[-1]


def run_size(width: int, height: int, args: argparse.Namespace) -> None:
    rgb = frames_rgb(width, height, args.frames)
    raw_mb = width * height * 3 / 1e6
    variants: dict[str, tuple[Callable[[Any], bytes], list[Any]]] = {
        "bound (simplejpeg, no conversion)": (bound, list(rgb)),
        "former (Pillow into BytesIO)": (pillow_bytesio, list(rgb)),
    }
    for encoding in args.encodings:
        messages = [_message(frame, encoding) for frame in rgb]
        variants[f"ours {encoding}"] = (our_path(encoding, width, height), messages)
    counts = sorted({1, args.workers})
    rates: dict[tuple[str, int], list[float]] = {}
    for work, items in variants.values():  # warm up: page faults, lazy imports
        work(items[0])
    for _ in range(args.rounds):
        for workers in counts:
            for name, (work, items) in variants.items():
                rates.setdefault((name, workers), []).append(_rate(work, items, workers))
    waits = {name: gil_wait_ms(work, items[:4], 1.0) for name, (work, items) in variants.items()}
    idle = gil_wait_ms(None, [None], 1.0)
    print(f"\n{width}x{height} rgb8 ({raw_mb:.2f} MB a frame), {args.frames} frames, q{QUALITY}")
    best = {key: statistics.median(values) for key, values in rates.items()}
    header = f"{'':36}" + "".join(f"{f'{w} thread(s)':>30}" for w in counts)
    print(f"{header}{'scaling':>9}{'GIL wait':>10}")
    for name in variants:
        cells = ""
        for workers in counts:
            fps = best[(name, workers)]
            ratio = fps / best[("bound (simplejpeg, no conversion)", workers)]
            cells += f"{fps:9.1f} f/s {fps * raw_mb:5.0f} MB/s {ratio:5.2f}x"
        scaling = best[(name, counts[-1])] / best[(name, 1)]
        print(f"{name:36}{cells}{scaling:8.2f}x{waits[name]:7.1f} ms")
    print(f"{'idle (GIL wait probe alone)':36}{'':{30 * len(counts) + 9}}{idle:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--sizes", default="1920x1080,640x480")
    parser.add_argument("--encodings", default="rgb8")
    args = parser.parse_args()
    args.encodings = args.encodings.split(",")
    load_before = os.getloadavg()
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        run_size(width, height, args)
    print(
        f"\nratios are to the bound at the same thread count; median of {args.rounds} "
        f"interleaved rounds; {os.cpu_count()} cores; load average before "
        f"{load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
