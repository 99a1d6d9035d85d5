"""Write a pair's depth group: read, convert, compress, write and hash chunks in a pipeline.

zarr writes the group's metadata (``.zgroup``, ``.zattrs``, ``.zarray``); the chunk files
are encoded here with the codec those name, numcodecs' Blosc (zstd level 5, byte shuffle),
which is what zarr itself calls, to the same bytes (a golden test holds them). Doing it
here lets every stage overlap: the calling thread reads each 4-frame chunk of the
``.npy`` straight into a buffer and hashes it there, while ``threads`` threads each convert
a chunk to millimetres, compress it, write it and hash what they wrote. All of these
release the GIL, so the threads use every core. Memory stays bounded: ``threads + 1``
source chunks and one converted chunk per thread exist at any time.

Chunks finish in any order; their results are taken in file order, so the counts, the
hashes and the first error reported never depend on scheduling.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from queue import SimpleQueue
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.stereo.depth import chunk_names
from dataset_devkit.stereo.errors import SourceError
from dataset_devkit.stereo.millimetres import MillimetreEncoder
from dataset_devkit.stereo.spec import (
    DEPTH_CHUNK_FRAMES,
    DEPTH_DIMENSIONS,
    DEPTH_DTYPE,
    DEPTH_INVALID,
    DEPTH_SCALE,
    EYES,
)

__all__ = ["FrameSource", "WrittenDepth", "write_depth_group", "write_pair_depth"]


class FrameSource(Protocol):
    """Float frames ``[T, H, W]`` read once, in order: a streamed ``.npy`` file."""

    shape: tuple[int, int, int]
    dtype: np.dtype[Any]

    def read_frames(self, start: int, stop: int, out: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Frames ``start:stop`` (the next ones), read into ``out``."""
        ...


@dataclass(frozen=True, slots=True)
class WrittenDepth:
    """What writing one pair's depth produced, for the dataset's records."""

    #: Pixels stored as 0 (invalid), per eye.
    invalid: dict[str, int]
    #: ``(size, sha256)`` of every chunk file written, by its path in the group
    #: (``left/0.0.0``): hashed from memory as written, so nothing reads them back.
    chunks: dict[str, tuple[int, str]]
    #: ``(size, sha256)`` of each eye's source file, read once for both (streamed sources).
    sources: dict[str, tuple[int, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One chunk file to write: which eye, where its frames start, where it goes."""

    eye: str
    start: int
    path: Path
    last_of_eye: bool


class _Scratch:
    """One thread's working memory: converters by input type, one output chunk, a codec."""

    def __init__(self, far_limit_m: float | None) -> None:
        from numcodecs import Blosc

        self.far_limit_m = far_limit_m
        self.encoders: dict[np.dtype[Any], MillimetreEncoder] = {}
        self.chunk = np.empty(0, dtype=DEPTH_DTYPE)
        self.codec = Blosc(cname="zstd", clevel=5, shuffle=Blosc.SHUFFLE)

    def millimetres(self, frames: npt.NDArray[Any], where: str, first: int) -> tuple[Any, int]:
        """The chunk of ``frames`` in millimetres (padded with the fill value to
        :data:`DEPTH_CHUNK_FRAMES` frames, as zarr stores an edge chunk), and how many of
        the frames' pixels are invalid."""
        encoder = self.encoders.get(frames.dtype)
        if encoder is None:
            encoder = self.encoders[frames.dtype] = MillimetreEncoder(
                frames.dtype, self.far_limit_m
            )
        shape = (DEPTH_CHUNK_FRAMES, *frames.shape[1:])
        if self.chunk.shape != shape:
            self.chunk = np.empty(shape, dtype=DEPTH_DTYPE)
        count = frames.shape[0]
        invalid = encoder.encode(frames, self.chunk[:count], where=where, first=first)
        self.chunk[count:] = DEPTH_INVALID
        return self.chunk, invalid


def _encode_chunk(
    scratches: SimpleQueue[_Scratch], frames: npt.NDArray[Any], chunk: _Chunk, where: str
) -> tuple[int, int, str]:
    """Convert, compress, write and hash one chunk; return invalid pixels, size, sha256."""
    scratch = scratches.get()
    try:
        millimetres, invalid = scratch.millimetres(frames, where, chunk.start)
        data = scratch.codec.encode(millimetres)
        digest = hashlib.sha256(data).hexdigest()
        with naming(chunk.path), chunk.path.open("xb") as stream:
            stream.write(data)
        return invalid, len(data), digest
    finally:
        scratches.put(scratch)


def _create_eye(group: Any, eye: str, shape: tuple[int, ...], attributes: dict[str, Any]) -> Any:
    """One eye's empty depth array in *group*, chunked by :data:`DEPTH_CHUNK_FRAMES`."""
    from numcodecs import Blosc

    frames, height, width = shape
    return group.create_array(
        eye,
        shape=(frames, height, width),
        chunks=(DEPTH_CHUNK_FRAMES, height, width),
        dtype=DEPTH_DTYPE,
        compressor=Blosc(cname="zstd", clevel=5, shuffle=Blosc.SHUFFLE),
        filters=None,
        fill_value=DEPTH_INVALID,
        order="C",
        chunk_key_encoding={"name": "v2", "separator": "."},
        attributes={**attributes, "eye": eye, "_ARRAY_DIMENSIONS": list(DEPTH_DIMENSIONS)},
        config={"write_empty_chunks": True},
    )


class _Pipeline:
    """The chunks in flight, with their results taken in file order."""

    def __init__(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        self.shapes = shapes
        self.pending: deque[tuple[_Chunk, str, Future[tuple[int, int, str]]]] = deque()
        self.invalid = dict.fromkeys(shapes, 0)
        self.chunks: dict[str, tuple[int, str]] = {}

    def collect_one(self) -> None:
        chunk, where, job = self.pending.popleft()
        invalid, size, digest = job.result()
        self.invalid[chunk.eye] += invalid
        self.chunks[f"{chunk.eye}/{chunk.path.name}"] = (size, digest)
        frames, height, width = self.shapes[chunk.eye]
        if chunk.last_of_eye and self.invalid[chunk.eye] == frames * height * width:
            raise SourceError(
                f"no valid depth pixel in any of its {frames} frames (all NaN, inf, <= 0 or "
                "beyond depth_far_m): a broken depth render",
                path=where,
            )

    def drain(self) -> None:
        while self.pending:
            self.collect_one()

    def cancel(self) -> None:
        for _, _, job in self.pending:
            job.cancel()


def _frames(
    source: FrameSource | npt.NDArray[Any], start: int, stop: int, buffers: list[Any], slot: int
) -> npt.NDArray[Any]:
    """Frames ``start:stop`` of *source*: a view of an array, or read into buffer *slot*."""
    if isinstance(source, np.ndarray):
        return source[start:stop]
    shape = (DEPTH_CHUNK_FRAMES, *source.shape[1:])
    buffer = buffers[slot]
    if buffer is None or buffer.shape != shape or buffer.dtype != source.dtype:
        buffer = buffers[slot] = np.empty(shape, dtype=source.dtype)
    return source.read_frames(start, stop, buffer)


def write_depth_group(
    group_path: Path,
    sources: Mapping[str, FrameSource | npt.NDArray[np.floating[Any]]],
    far_limit_m: float | None,
    attributes: dict[str, Any],
    where: dict[str, str],
    *,
    threads: int = 1,
) -> WrittenDepth:
    """Write the ``left``/``right`` arrays chunk by chunk on ``threads`` threads.

    An eye whose every pixel of every frame is invalid is a broken render and an error.
    """
    import zarr

    # zarr writes through its own files: a full disk must still name what was written.
    with naming(group_path):
        group = zarr.open_group(
            str(group_path), mode="w-", zarr_format=2, attributes=dict(attributes)
        )
    shapes = {eye: tuple(sources[eye].shape) for eye in EYES}
    for eye in EYES:
        with naming(group_path / eye):
            _create_eye(group, eye, shapes[eye], attributes)
    plan = [
        _Chunk(
            eye=eye,
            start=index * DEPTH_CHUNK_FRAMES,
            path=group_path / eye / name,
            last_of_eye=index == len(chunk_names(shapes[eye][0])) - 1,
        )
        for eye in EYES
        for index, name in enumerate(chunk_names(shapes[eye][0]))
    ]
    scratches: SimpleQueue[_Scratch] = SimpleQueue()
    for _ in range(threads):
        scratches.put(_Scratch(far_limit_m))
    # Buffer slot i % (threads + 1) holds chunk i: the chunk that used it last, threads + 1
    # chunks earlier, is collected before the slot is read into again.
    buffers: list[Any] = [None] * (threads + 1)
    with ThreadPoolExecutor(threads, thread_name_prefix="depth-chunks") as pool:
        pipeline = _Pipeline(shapes)
        try:
            for number, chunk in enumerate(plan):
                while len(pipeline.pending) > threads:
                    pipeline.collect_one()
                stop = min(chunk.start + DEPTH_CHUNK_FRAMES, shapes[chunk.eye][0])
                try:
                    frames = _frames(
                        sources[chunk.eye], chunk.start, stop, buffers, number % (threads + 1)
                    )
                except BaseException:
                    pipeline.drain()  # an earlier chunk's error is the one to report
                    raise
                job = pool.submit(_encode_chunk, scratches, frames, chunk, where[chunk.eye])
                pipeline.pending.append((chunk, where[chunk.eye], job))
            pipeline.drain()
        except BaseException:
            pipeline.cancel()
            raise
    return WrittenDepth(invalid=pipeline.invalid, chunks=pipeline.chunks)


def write_pair_depth(
    group_path: str, npy: dict[str, str], far_limit_m: float | None, threads: int = 1
) -> WrittenDepth:
    """Encode one pair's ``.npy`` depth files into its group; a picklable executor task.

    Each ``.npy`` is read once, front to back, for both the encoding and its SHA-256 (the
    source manifest needs it). Paths are plain strings so the task ships to process pools
    and Dask workers alike; ``threads`` encode chunks while this one reads.
    """
    from dataset_devkit.stereo.source_files import StreamedNpy

    attributes = {"kind": "camera_z_depth", "units": "millimetre", "scale": DEPTH_SCALE}
    with StreamedNpy(Path(npy["left"])) as left, StreamedNpy(Path(npy["right"])) as right:
        sources: dict[str, FrameSource] = {"left": left, "right": right}
        written = write_depth_group(
            Path(group_path), sources, far_limit_m, attributes, npy, threads=threads
        )
        hashes = {"left": left.finish(), "right": right.finish()}
    return WrittenDepth(invalid=written.invalid, chunks=written.chunks, sources=hashes)
