"""The second pass over a message log: the JPEG of every frame the scene grid wants.

It runs as a task of its own (possibly on another machine of a cluster), from a picklable
replay of the recording's files and the cameras' topics and encodings. JPEG frames are
copied verbatim; PNG, raw and video frames are encoded at quality 95 on a small thread pool
(decoding and libjpeg-turbo encoding release the GIL), in recording order and with a bounded
number of frames in flight, so memory stays flat however long the recording is.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.jpeg import encode_pixels
from dataset_devkit.nuscenes.ingest.backend import Message
from dataset_devkit.nuscenes.ingest.cameras import ENCODING_JPEG, VIDEO_FORMATS, still_to_jpeg
from dataset_devkit.nuscenes.ingest.records import CompressedFrame, RawFrame, VideoPacket
from dataset_devkit.nuscenes.ingest.video_packets import VideoPacketDecoder
from dataset_devkit.nuscenes.spec import JPEG_QUALITY

__all__ = ["CameraSpec", "Replay", "extract_frames"]

Replay = Callable[[frozenset[str]], Iterator[Message]]
"""The decoded messages of the given topics, from files checked to be unchanged."""


@dataclass(frozen=True, slots=True)
class CameraSpec:
    """What the second pass needs of one camera."""

    name: str
    topic: str
    #: ``jpeg``, ``png``, a raw encoding, or a video format.
    encoding: str


def _workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def extract_frames(
    replay: Replay,
    cameras: tuple[CameraSpec, ...],
    path: Path,
    wanted: Mapping[str, frozenset[int]],
) -> Iterator[tuple[str, int, bytes]]:
    """``(camera name, capture time, JPEG bytes)`` of every wanted frame.

    A frame the first pass saw and the second cannot find is an error: the recording
    changed, or a backend lost it.
    """
    remaining = {name: set(times) for name, times in wanted.items() if times}
    by_topic = {c.topic: c for c in cameras if remaining.get(c.name)}
    if not by_topic:
        return
    videos = {
        c.topic: VideoPacketDecoder(c.encoding, f"topic {c.topic!r}")
        for c in by_topic.values()
        if c.encoding in VIDEO_FORMATS
    }
    limit = 2 * _workers()
    pending: deque[tuple[str, int, Future[bytes] | bytes]] = deque()
    with ThreadPoolExecutor(max_workers=_workers(), thread_name_prefix="jpeg") as pool:

        def drain(keep: int) -> Iterator[tuple[str, int, bytes]]:
            while len(pending) > keep:
                name, t, item = pending.popleft()
                yield name, t, item if isinstance(item, bytes) else item.result()

        for message in replay(frozenset(by_topic)):
            camera = by_topic.get(message.channel.topic)
            if camera is None or message.records is None:
                continue
            times = remaining[camera.name]
            what = f"topic {camera.topic!r}"
            for rec in message.records:
                if isinstance(rec, VideoPacket):
                    decoded = videos[camera.topic].feed(
                        rec.timestamp_ns, rec.data, keep=rec.timestamp_ns in times
                    )
                    for frame in decoded:
                        if frame.timestamp_ns in times and frame.pixels is not None:
                            times.discard(frame.timestamp_ns)
                            pending.append(
                                (
                                    camera.name,
                                    frame.timestamp_ns,
                                    pool.submit(encode_pixels, frame.pixels, JPEG_QUALITY),
                                )
                            )
                elif isinstance(rec, CompressedFrame | RawFrame) and rec.timestamp_ns in times:
                    times.discard(rec.timestamp_ns)
                    if camera.encoding == ENCODING_JPEG and isinstance(rec, CompressedFrame):
                        pending.append((camera.name, rec.timestamp_ns, rec.data))
                    else:
                        job = pool.submit(still_to_jpeg, rec, camera.encoding, what)
                        pending.append((camera.name, rec.timestamp_ns, job))
            yield from drain(limit)
        for topic, decoder in videos.items():
            camera = by_topic[topic]
            times = remaining[camera.name]
            for frame in decoder.flush():
                if frame.timestamp_ns in times and frame.pixels is not None:
                    times.discard(frame.timestamp_ns)
                    job = pool.submit(encode_pixels, frame.pixels, JPEG_QUALITY)
                    pending.append((camera.name, frame.timestamp_ns, job))
        yield from drain(0)
    missing = sorted((n, t) for n, ts in remaining.items() for t in ts)
    if missing:
        raise FormatError(
            f"{len(missing)} frames seen at ingest are gone, first {missing[0]}", path=path
        )
