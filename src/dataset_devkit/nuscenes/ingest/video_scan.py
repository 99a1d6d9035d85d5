"""Find the frames of a video that FFmpeg could not decode cleanly, packet by packet.

FFmpeg conceals a damaged packet (it fills the broken macroblocks from neighbours) and
returns a frame as if nothing happened: ``err_detect=explode`` does not raise for every
codec and ``frame.is_corrupt`` stays false. Its error log does report the damage, so every
packet is decoded inside PyAV's log capture (``av.logging.Capture``) and a frame is
untrusted when its decode logged an error, its packet did not decode at all, or it is
predicted (not a key frame) from an untrusted frame. Frames are matched to
``recording.json``'s timestamps by presentation order (``pts``), so a lost frame does not
shift the others.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError

__all__ = ["VideoScan", "decode_with_errors", "error_logging", "scan_video"]

#: PyAV's log level is process-wide: scans that raise it to ERROR and restore it take turns.
_LOG_LOCK = threading.Lock()


@dataclass
class VideoScan:
    """Presentation order of a video's frames and the untrusted ones, by frame index."""

    pts_order: list[int] = field(default_factory=list)
    invalid: dict[int, str] = field(default_factory=dict)


def decode_with_errors(container: Any) -> Iterator[tuple[Any, Any, str]]:
    """``(packet, frame or None, error text)`` for each decoded frame or failed packet.

    Call inside :func:`error_logging`; decoding runs on this thread only
    (``thread_count = 1``) so every log line belongs to the packet being decoded.
    """
    import av
    import av.logging

    stream = container.streams.video[0]
    stream.codec_context.thread_count = 1
    for packet in container.demux(stream):
        try:
            with av.logging.Capture(local=True) as logs:
                frames = packet.decode()
        except av.FFmpegError as exc:
            yield packet, None, f"packet does not decode ({exc.strerror or exc})"
            continue
        errors = "; ".join(str(log[2]).strip() for log in logs if log[0] <= av.logging.ERROR)
        if errors and not frames:
            yield packet, None, f"decoder error ({errors})"
        for frame in frames:
            yield packet, frame, f"decoder concealed damaged data ({errors})" if errors else ""


@contextmanager
def error_logging() -> Iterator[None]:
    """FFmpeg errors routed to PyAV's log capture, for this block only (one block at a time)."""
    import av.logging

    with _LOG_LOCK:
        level = av.logging.get_level()
        av.logging.set_level(av.logging.ERROR)
        try:
            yield
        finally:
            av.logging.set_level(level)


def scan_video(container: Any, expected: int, path: Path) -> VideoScan:
    """Decode every packet of *container*'s first video stream and judge each frame."""
    packets: dict[int, bool] = {}  # pts -> key frame
    bad: dict[int, str] = {}
    decoded: set[int] = set()
    with error_logging():
        for packet, frame, error in decode_with_errors(container):
            if packet.pts is not None:
                packets[packet.pts] = bool(packet.is_keyframe)
                if frame is None:
                    bad.setdefault(packet.pts, error)
            if frame is not None:
                if frame.pts is None:
                    raise FormatError("video frames carry no presentation time", path=path)
                decoded.add(frame.pts)
                if error:
                    bad.setdefault(frame.pts, error)
    order = sorted(packets)
    if len(order) != expected:
        raise FormatError(
            f"video has {len(order)} frames but recording.json lists {expected} timestamps",
            path=path,
        )
    scan = VideoScan(pts_order=order)
    source: int | None = None
    for index, pts in enumerate(order):
        if pts in bad:
            scan.invalid[index] = bad[pts]
            source = index
        elif pts not in decoded:
            scan.invalid[index] = "no frame decoded from its packet"
            source = index
        elif packets[pts]:
            source = None  # a key frame ends the propagation of damage
        elif source is not None:
            scan.invalid[index] = f"predicted from damaged frame {source}"
    return scan
