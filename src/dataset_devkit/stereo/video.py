"""Exact frame access to MP4 files with PyAV: probe, seek to the keyframe, decode to the pts.

A video is indexed once per handle by demuxing its packets (no decoding): the sorted
presentation timestamps give frame numbers, the keyframe flags give seek points. Reading frame
``i`` seeks to the last keyframe at or before ``i`` and decodes forward to the exact pts, and a
sorted batch of frames keeps decoding forward instead of seeking when no keyframe lies between,
so no frame is decoded that is not needed to reach a requested one.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import FormatError, MissingDependencyError

U8 = npt.NDArray[np.uint8]

#: Containers and scalers inherited through ``fork`` are parked here and never freed in the
#: child: freeing a decoder or scaler whose worker threads exist only in the parent blocks
#: forever.
_INHERITED: list[Any] = []


def import_av() -> Any:
    """Import PyAV lazily, naming the extra that provides it."""
    try:
        import av
    except ImportError as exc:  # pragma: no cover - av is installed in CI
        raise MissingDependencyError(
            "av", extra="video", purpose="reading stereo MP4 videos"
        ) from exc
    return av


@dataclass(frozen=True, slots=True)
class VideoInfo:
    """What demuxing a video says about it, without decoding a frame.

    Attributes
    ----------
    num_frames
        Number of video packets (frames) in the first video stream.
    fps
        The stream's average frame rate.
    width, height
        Coded frame size in pixels.
    pts
        Presentation timestamps of frame ``0 .. num_frames - 1`` in ``time_base`` units.
    keyframes
        Frame numbers of the keyframes (seek points), ascending.
    """

    num_frames: int
    fps: float
    width: int
    height: int
    pts: tuple[int, ...]
    keyframes: tuple[int, ...]
    time_base: Fraction

    def keyframe_for(self, frame: int) -> int:
        """The last keyframe at or before ``frame``: where decoding of it must start."""
        position = bisect.bisect_right(self.keyframes, frame) - 1
        if position < 0:
            raise FormatError(f"no keyframe at or before frame {frame}")
        return self.keyframes[position]


def _scale_options(av: Any, threads: int) -> dict[str, int]:
    """The scaler's thread count, the decoder's, where PyAV has the option (17 and later).

    PyAV's scaler before 17 is single-threaded and takes no such argument.
    """
    return {"threads": threads} if int(av.__version__.split(".")[0]) >= 17 else {}


def _cannot_open(exc: Exception) -> str:
    """FFmpeg's reason without its errno number and the repeated path."""
    reason = getattr(exc, "strerror", None) or str(exc)
    return f"cannot be opened as a video ({reason}); expected an MP4 file"


def _index(container: Any, path: Path) -> VideoInfo:
    if "mp4" not in str(container.format.name).split(","):
        raise FormatError(
            f"is a {container.format.long_name or container.format.name} file, "
            "expected an MP4 video",
            path=path,
        )
    if not container.streams.video:
        raise FormatError("has no video stream", path=path)
    stream = container.streams.video[0]
    packets: list[tuple[int, bool]] = []
    for packet in container.demux(stream):
        if packet.pts is None or packet.is_discard:  # flush packet; edit-list discards
            continue
        packets.append((int(packet.pts), bool(packet.is_keyframe)))
    if not packets:
        raise FormatError("has no video frames", path=path)
    packets.sort()
    pts = tuple(p for p, _ in packets)
    if len(set(pts)) != len(pts):
        raise FormatError("has duplicate frame timestamps", path=path)
    keyframes = tuple(i for i, (_, key) in enumerate(packets) if key)
    if not keyframes or keyframes[0] != 0:
        raise FormatError("does not start with a keyframe", path=path)
    rate = stream.average_rate or stream.guessed_rate
    return VideoInfo(
        num_frames=len(pts),
        fps=float(rate) if rate else 0.0,
        width=int(stream.codec_context.width),
        height=int(stream.codec_context.height),
        pts=pts,
        keyframes=keyframes,
        time_base=Fraction(stream.time_base),
    )


def probe_video(path: Path) -> VideoInfo:
    """Index a video by demuxing it; raise :class:`FormatError` if it cannot be opened."""
    av = import_av()
    try:
        with av.open(str(path)) as container:
            return _index(container, path)
    except av.FFmpegError as exc:
        raise FormatError(_cannot_open(exc), path=path) from exc


class VideoReader:
    """A lazily opened, fork-aware handle that reads exact frames as ``uint8 [H, W, 3]``.

    The container is opened on first use in the process that uses it: a handle created in
    the parent of a DataLoader and used in a forked worker reopens its own file (decoder state
    is never shared between processes), and pickling drops the open container (spawn).

    Parameters
    ----------
    path
        The MP4 file.
    info
        The frame index of this file from an earlier handle, if known: a reopened handle then
        skips demuxing the whole file again (the files of a published dataset never change).
    threads
        FFmpeg decoder threads. The default 1 is what makes ``fork`` safe: a forked child that
        frees a threaded decoder inherited from its parent (even one awaiting garbage
        collection) blocks forever on threads that exist only in the parent. Use more only
        when no process forks after reading, e.g. for whole-clip reads in one process.
    """

    def __init__(self, path: Path, threads: int = 1, info: VideoInfo | None = None) -> None:
        self.path = path
        self.threads = threads
        self._container: Any = None
        self._scaler: Any = None  # this process's YUV -> RGB converter (see _open)
        self._scale_options: dict[str, int] = {}
        self._pid = -1
        self._info: VideoInfo | None = info
        self._frames: Iterator[Any] | None = None
        self._position = -1  # last frame decoded by the current iterator
        self._frame_of_pts: dict[int, int] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "threads": self.threads, "info": self._info}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["threads"])  # type: ignore[misc]
        self._info = state["info"]

    @property
    def indexed(self) -> VideoInfo | None:
        """The frame index if it was already built (or given), without building it."""
        return self._info

    @property
    def info(self) -> VideoInfo:
        """The frame index, built on first use."""
        self._open()
        if self._info is None:  # _open always sets it; kept explicit for python -O
            raise RuntimeError(f"{self.path}: video index missing after open")
        return self._info

    def _abandon_inherited(self) -> None:
        if self._container is not None and self._pid != os.getpid():
            _INHERITED.append((self._container, self._frames, self._scaler))
            self._container, self._frames, self._position = None, None, -1
            self._scaler = None

    def _open(self) -> Any:
        if self._container is not None and self._pid == os.getpid():
            return self._container
        self._abandon_inherited()
        av = import_av()
        try:
            container = av.open(str(self.path))
            info = self._info or _index(container, self.path)
            container.streams.video[0].codec_context.thread_count = self.threads
        except av.FFmpegError as exc:
            raise FormatError(_cannot_open(exc), path=self.path) from exc
        self._container, self._pid, self._info = container, os.getpid(), info
        self._frames, self._position = None, -1
        # Our own scaler, made in this process: PyAV 19's ``frame.to_ndarray(format=...)``
        # keeps one scaler per thread, whose worker threads (swscale's slice threads) a
        # forked DataLoader worker inherits without the threads, and waits on forever.
        self._scaler = av.video.reformatter.VideoReformatter()
        self._scale_options = _scale_options(av, self.threads)
        self._frame_of_pts = {p: i for i, p in enumerate(info.pts)}
        return container

    def close(self) -> None:
        """Close the container of this process (a later read reopens it)."""
        self._abandon_inherited()
        if self._container is not None:
            self._container.close()
        self._container, self._frames, self._position = None, None, -1
        self._scaler = None

    def _seek(self, keyframe: int) -> None:
        container = self._open()
        stream = container.streams.video[0]
        container.seek(self.info.pts[keyframe], stream=stream, backward=True, any_frame=False)
        self._frames = iter(container.decode(stream))
        self._position = keyframe - 1

    def _next_frame(self) -> tuple[int, Any]:
        frame = next(self._frames, None) if self._frames is not None else None
        if frame is None:
            raise FormatError("ended before the requested frame", path=self.path)
        index = self._frame_of_pts.get(frame.pts if frame.pts is not None else -1)
        if index is None:
            raise FormatError(f"decoded a frame with unknown pts {frame.pts}", path=self.path)
        return index, frame

    def read(self, frames: Sequence[int]) -> U8:
        """Decode the given frame numbers (any order, repeats allowed) into ``[T, H, W, 3]``."""
        self._open()
        info = self.info
        slots: dict[int, list[int]] = {}
        for slot, frame_number in enumerate(frames):
            if not 0 <= frame_number < info.num_frames:
                raise IndexError(
                    f"{self.path}: frame {frame_number} outside 0..{info.num_frames - 1}"
                )
            slots.setdefault(frame_number, []).append(slot)
        # decoded frames go straight into their slots: no second copy of the clip in memory
        out = np.empty((len(frames), info.height, info.width, 3), dtype=np.uint8)
        av = import_av()
        for target in sorted(slots):
            try:
                self._decode_into(out, target, slots[target])
            except av.FFmpegError as exc:  # corrupt packets surface while decoding
                self._frames, self._position = None, -1  # the decoder state is unknown now
                raise FormatError(
                    f"decoding failed on the way to frame {target} ({exc})", path=self.path
                ) from exc
        return out

    def _decode_into(self, out: U8, target: int, targets: list[int]) -> None:
        """Decode forward (seeking when needed) to ``target`` and store it in its slots."""
        info = self.info
        if self._frames is None or not (info.keyframe_for(target) <= self._position < target):
            self._seek(info.keyframe_for(target))
        restarted = False
        while True:
            index, frame = self._next_frame()
            if index > target:  # a seek that overshot: restart once from the stream start
                if restarted:
                    raise FormatError(f"cannot decode frame {target}", path=self.path)
                self._seek(0)
                restarted = True
                continue
            self._position = index
            if index == target:
                first, *rest = targets
                rgb = self._scaler.reformat(frame, format="rgb24", **self._scale_options)
                out[first] = rgb.to_ndarray()
                for slot in rest:
                    out[slot] = out[first]
                break
