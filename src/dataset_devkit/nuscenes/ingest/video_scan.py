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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError

__all__ = [
    "VideoScan",
    "decode_with_errors",
    "error_logging",
    "judge_packet",
    "logged_errors",
    "scan_video",
]

#: PyAV's log level is process-wide: the first open :func:`error_logging` block raises it to
#: ERROR, the last one to close restores it; this lock guards that count.
_LOG_LOCK = threading.Lock()
_open_blocks = 0
_saved_logging: tuple[Any, bool] = (None, True)


@dataclass
class VideoScan:
    """Presentation order of a video's frames and the untrusted ones, by frame index."""

    pts_order: list[int] = field(default_factory=list)
    invalid: dict[int, str] = field(default_factory=dict)


def decode_with_errors(container: Any, path: Path) -> Iterator[tuple[Any, list[Any], str]]:
    """``(packet, the frames its decode returned, its error or "")`` for every packet.

    Call inside :func:`error_logging`; decoding runs on this thread only
    (``thread_count = 1``), so every log line while a packet is demuxed and decoded is that
    packet's. The frames returned may be earlier pictures (a decoder with B-frames delays its
    output): an error belongs to the packet, matched by its ``pts``.
    """
    import av
    import av.logging

    stream = container.streams.video[0]
    stream.codec_context.thread_count = 1
    packets = container.demux(stream)
    while True:
        failed: BaseException | None = None
        frames: list[Any] = []
        with av.logging.Capture(local=True) as logs:
            try:
                packet = next(packets, None)
            except av.FFmpegError as exc:  # the container itself is unreadable here
                raise FormatError(f"video does not read: {exc}", path=path) from None
            if packet is None:
                return
            try:
                frames = list(packet.decode())
            except av.FFmpegError as exc:
                failed = exc
        yield packet, frames, judge_packet(logs, failed)


def judge_packet(logs: Iterable[tuple[int, str, str]], failure: BaseException | None) -> str:
    """The error of one packet's decode: its own failure, else the errors FFmpeg logged.

    *logs* is what ``av.logging.Capture`` collected while the packet was decoded (on this
    thread, inside :func:`error_logging`), *failure* the ``av.FFmpegError`` its decode
    raised, if any. ``""`` means the packet decoded cleanly.
    """
    if failure is not None:
        return f"packet does not decode ({getattr(failure, 'strerror', None) or failure})"
    errors = logged_errors(logs)
    return f"decoder concealed damaged data ({errors})" if errors else ""


def logged_errors(logs: Iterable[tuple[int, str, str]]) -> str:
    """The ERROR (and worse) lines of a capture, joined with ``"; "``; ``""`` if none."""
    import av.logging

    return "; ".join(str(log[2]).strip() for log in logs if log[0] <= av.logging.ERROR)


@contextmanager
def error_logging() -> Iterator[None]:
    """FFmpeg errors routed to PyAV's log capture while this block is open.

    Blocks on several threads may overlap (each thread captures its own lines with
    ``Capture(local=True)``): the level is raised while any block is open. Repeated lines are
    not folded into a later "repeated N times" line, which would land in the capture of a
    later packet and miss the packet that repeated the error.
    """
    import av.logging

    global _open_blocks, _saved_logging
    with _LOG_LOCK:
        if _open_blocks == 0:
            _saved_logging = (av.logging.get_level(), av.logging.get_skip_repeated())
            av.logging.set_level(av.logging.ERROR)
            av.logging.set_skip_repeated(False)
        _open_blocks += 1
    try:
        yield
    finally:
        with _LOG_LOCK:
            _open_blocks -= 1
            if _open_blocks == 0:
                level, skip_repeated = _saved_logging
                av.logging.set_level(level)
                av.logging.set_skip_repeated(skip_repeated)


def scan_video(container: Any, expected: int, path: Path) -> VideoScan:
    """Decode every packet of *container*'s first video stream and judge each frame.

    Damage spreads in decode order: a frame can only be predicted from frames decoded
    before it, so every packet after a damaged one is suspect until a key frame, and even
    then the frames shown before that key frame (leading B-frames of an open GOP) may still
    refer back across it.
    """
    decode_order: list[tuple[int, bool]] = []  # (pts, key frame) as packets arrive
    stored_at: dict[int, int] = {}  # pts -> byte offset of its packet in the file
    bad: dict[int, str] = {}
    decoded: set[int] = set()
    with error_logging():
        for packet, frames, error in decode_with_errors(container, path):
            if packet.pts is not None:
                decode_order.append((packet.pts, bool(packet.is_keyframe)))
                if packet.pos is not None and packet.pos >= 0:
                    stored_at[packet.pts] = packet.pos
                if error:
                    bad.setdefault(packet.pts, error)
            elif error:  # logged while flushing: the pictures it returns are suspect
                for frame in frames:
                    bad.setdefault(frame.pts, error)
            for frame in frames:
                if frame.pts is None:
                    raise FormatError("video frames carry no presentation time", path=path)
                decoded.add(frame.pts)
    order = sorted({pts for pts, _ in decode_order})
    if len(order) != expected or len(decode_order) != expected:
        raise FormatError(
            f"video has {len(order)} frames but recording.json lists {expected} timestamps",
            path=path,
        )
    index_of = {pts: i for i, pts in enumerate(order)}
    scan = VideoScan(pts_order=order)
    for pts in order:
        if pts in bad:
            scan.invalid[index_of[pts]] = bad[pts]
        elif pts not in decoded:
            scan.invalid[index_of[pts]] = "no frame decoded from its packet"
    # Damage is a run of bytes: it may begin in the packet stored just before the first one
    # the decoder flagged, and a decoder does not notice every damaged byte (a packet's tail
    # decodes "cleanly" into wrong pixels). That neighbour in the file is not trusted either.
    by_offset = sorted((pos, pts) for pts, pos in stored_at.items())
    for k, (_pos, pts) in enumerate(by_offset):
        index = index_of[pts]
        if k and index in scan.invalid and index_of[by_offset[k - 1][1]] not in scan.invalid:
            scan.invalid[index_of[by_offset[k - 1][1]]] = (
                f"stored next to damaged frame {index} (the damage may begin in it)"
            )
    source: int | None = None  # the damaged frame the following packets may refer to
    barrier: int | None = None  # pts of the key frame that ended the damage, if any
    for pts, key in decode_order:
        index = index_of[pts]
        if index in scan.invalid:
            source, barrier = index, None
        elif source is None:
            continue
        elif key:
            barrier = pts
        elif barrier is None or pts < barrier:
            scan.invalid[index] = f"predicted from damaged frame {source}"
        else:
            source = barrier = None
    return scan
