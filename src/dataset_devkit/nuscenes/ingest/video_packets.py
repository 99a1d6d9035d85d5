"""Decode ``foxglove.CompressedVideo`` streams (H.264, H.265) message by message, judging damage.

One message is one access unit in Annex B form (Foxglove's schema: enough NAL units for
exactly one picture, parameter sets with every key frame, no B-frames). A
:class:`VideoPacketDecoder` per topic is fed the messages in recording order and answers
each with a :class:`DecodedFrame` carrying the message's own timestamp: every packet gets
its sequence number as ``pts`` and every decoded picture is matched back by its ``pts``, so
a lost picture never shifts the others onto the wrong timestamps, and a decoder that holds
pictures back (or reorders them, against the schema) is answered when they come out.

Damage follows the decoded-video path (:mod:`~dataset_devkit.nuscenes.ingest.video_scan`),
whose log capture and wording are reused: a frame is untrusted when its packet did not
decode, FFmpeg logged an error while decoding it (FFmpeg conceals damage and would return
a plausible picture), an H.264 reference picture before it is missing (see
:mod:`~dataset_devkit.nuscenes.ingest.annexb`), or it is predicted from an untrusted frame
until the next key frame. Frames before the first key frame are untrusted too: a decoder
cannot start inside a group of pictures.

FFmpeg's HEVC decoder conceals some damage without logging it (a slice cut short, a run of
0xFF bytes): ``err_detect=explode`` makes it fail the packet instead (in our measurements a
P-frame cut in half was caught 15 times in 30 rather than once; H.264 detection is the same
either way). What neither decoder can see, bytes changed inside entropy-coded data that
still parse, is for the recording's own checksums (MCAP chunk CRCs) to catch. The
decoded-video path's other rule, distrusting the packet stored just before a damaged one
because a run of damaged bytes may begin in it, has no counterpart here: each message is its
own record in the recording, not bytes next to its neighbour.

Decoding is single-threaded per stream (``thread_count = 1``): with FFmpeg's frame or slice
threads a packet is decoded on worker threads, whose log lines reach neither this thread's
capture nor the packet they belong to. Streams decode in parallel on separate threads
instead (PyAV releases the GIL while FFmpeg decodes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import FormatError, MissingDependencyError
from dataset_devkit.integrity import did_you_mean
from dataset_devkit.nuscenes.ingest.annexb import AnnexBReader
from dataset_devkit.nuscenes.ingest.video_scan import error_logging, judge_packet, logged_errors

__all__ = ["VIDEO_FORMATS", "DecodedFrame", "VideoPacketDecoder"]

#: The ``foxglove.CompressedVideo.format`` values this decoder reads.
VIDEO_FORMATS: Final = ("h264", "h265")
_CODECS: Final = {"h264": "h264", "h265": "hevc"}
#: H.264 and H.265 hold at most 16 pictures back (their decoded picture buffer); a packet
#: whose picture has not come out after this many later packets will not come out.
_MAX_DELAY: Final = 16
_NOT_DECODED: Final = "no frame decoded from its packet"
_BEFORE_KEY: Final = {
    name: "before the stream's first key frame (decoding starts at a key frame with its "
    f"parameter sets: {key})"
    for name, key in (("h264", "an IDR picture"), ("h265", "an IRAP picture"))
}


@dataclass(frozen=True, slots=True, eq=False)
class DecodedFrame:
    """The outcome of one message: its frame, or why the frame cannot be trusted.

    ``error`` is ``""`` for a trusted frame. ``pixels`` is ``uint8`` RGB ``(H, W, 3)`` for a
    trusted frame fed with ``keep=True``, else None. ``width`` and ``height`` are the
    decoded picture's size (0 when nothing was decoded), known with ``keep=False`` too.
    Compared by identity (the pixels are an array).
    """

    timestamp_ns: int
    pixels: npt.NDArray[np.uint8] | None
    error: str
    width: int = 0
    height: int = 0

    @property
    def valid(self) -> bool:
        """Whether the frame decoded cleanly and can be exported."""
        return not self.error


@dataclass(slots=True)
class _Packet:
    """A fed message waiting for its picture."""

    timestamp_ns: int
    keep: bool
    key: bool = False
    error: str = ""  # its own error: its decode's, a missing reference, a size change
    before_start: bool = False  # never decoded: no key frame had come yet
    done: bool = False  # its outcome is final (its picture came, or none can come any more)
    frame: Any = None  # the av.VideoFrame (keep=True only), until the outcome is returned
    width: int = 0
    height: int = 0


class VideoPacketDecoder:
    """A stateful decoder for one topic's ``CompressedVideo`` messages, in recording order.

    Parameters
    ----------
    format
        The messages' ``format``: ``"h264"`` or ``"h265"``.
    what
        Names the stream in errors (the topic).

    Raises
    ------
    FormatError
        An unsupported *format*, with the supported ones.
    MissingDependencyError
        PyAV is not installed (``dataset-devkit[video]``).

    Notes
    -----
    :meth:`feed` returns the outcomes that are final, in feeding order: normally the
    message's own frame, later for a decoder that holds pictures back. :meth:`flush` (at
    the end of the recording) returns the rest and leaves the decoder as new, so the next
    message fed must again be a key frame. One decoder is used by one thread at a time.
    """

    _codec: Any  # av's VideoCodecContext, opened by the first decode
    _annexb: AnnexBReader
    _pending: dict[int, _Packet]  # by sequence number (the packets' pts), feeding order
    _started: bool  # a key frame has been fed to the decoder
    _parameter_sets: bool  # an access unit with parameter sets has been fed
    _damaged: int | None  # time of the damaged frame later ones may refer to
    _scaler: Any  # this decoder's YUV -> RGB converter

    def __init__(self, format: str, what: str) -> None:
        if format not in _CODECS:
            raise FormatError(
                f"{what}: video format {format!r} is not supported"
                + did_you_mean(format, VIDEO_FORMATS, known="supported")
            )
        try:
            import av
        except ImportError as exc:  # pragma: no cover - av ships with the video and mcap extras
            raise MissingDependencyError("av", extra="video", purpose="decoding video") from exc
        self._av = av
        # A scaler of this decoder, not the one PyAV 19 keeps per thread (``to_ndarray(format=)``
        # uses it): a later fork from another thread (a DataLoader replacing a worker) drops
        # this thread's state in the child, and freeing that scaler there waits forever on
        # threads the child does not have (Python 3.13).
        import av.video.reformatter

        self._scaler = av.video.reformatter.VideoReformatter()
        self.format = format
        self.what = what
        self._size: tuple[int, int] | None = None
        self._seq = 0
        self._reset()

    @property
    def size(self) -> tuple[int, int] | None:
        """``(width, height)`` of the stream's pictures, once one has been decoded."""
        return self._size

    def feed(
        self, timestamp_ns: int, data: bytes | memoryview, *, keep: bool
    ) -> list[DecodedFrame]:
        """Decode one message; returns the outcomes now final, in feeding order.

        Parameters
        ----------
        timestamp_ns
            The message's time; its frame is reported under it.
        data
            The message's ``data``: one access unit, Annex B.
        keep
            Return the frame's RGB pixels (True) or only its size and trust (False, the
            cheaper first pass).
        """
        seq = self._seq
        self._seq += 1
        unit = self._annexb.read(data)
        packet = _Packet(timestamp_ns, keep, key=unit.key)
        self._pending[seq] = packet
        if not len(data):
            packet.error, packet.done = "the message holds no video data", True
        elif not self._started and not unit.key:
            packet.error, packet.before_start, packet.done = _BEFORE_KEY[self.format], True, True
        else:
            self._started = True
            frames, error, refused = self._decode(self._av.Packet(bytes(data)), seq)
            if error and unit.key and not unit.parameter_sets and not self._parameter_sets:
                error = f"key frame without the parameter sets it needs, none came before: {error}"
            self._parameter_sets |= unit.parameter_sets
            packet.error = error or unit.missing_reference
            packet.done = refused  # FFmpeg took nothing from it: no picture will come
            self._take(frames)
        for old, waiting in self._pending.items():
            if old > seq - _MAX_DELAY:
                break
            waiting.done = True
        return self._ready()

    def flush(self) -> list[DecodedFrame]:
        """Drain the decoder: every outcome not yet returned, then start over."""
        frames, error, _ = self._decode(None, None)
        for frame in frames:  # pictures returned while draining carry its errors too
            pending = self._pending.get(frame.pts)
            if error and pending is not None and not pending.error:
                pending.error = error
        self._take(frames)
        for packet in self._pending.values():
            packet.done = True
        ready = self._ready()
        self._reset()
        return ready

    # ------------------------------------------------------------------------ internals
    def _reset(self) -> None:
        self._codec = self._av.CodecContext.create(_CODECS[self.format], "r")
        self._codec.thread_count = 1  # see the module docstring: the log must be the packet's
        self._codec.options = {"err_detect": "explode"}  # see the module docstring
        self._annexb = AnnexBReader(self.format)
        self._pending = {}
        self._started = False
        self._parameter_sets = False
        self._damaged = None

    def _decode(self, packet: Any, seq: int | None) -> tuple[list[Any], str, bool]:
        """``(pictures out, the packet's error or "", whether the decoder refused it)``.

        *packet* None drains the decoder. Decoded inside the shared FFmpeg error capture.
        """
        av = self._av
        if packet is not None:
            packet.pts = packet.dts = seq
        failure: BaseException | None = None
        frames: list[Any] = []
        with error_logging(), av.logging.Capture(local=True) as logs:
            try:
                frames = list(self._codec.decode(packet))
            except av.FFmpegError as exc:
                failure = exc
        error = judge_packet(logs, failure)
        if failure is not None and (logged := logged_errors(logs)):
            error = f"{error}: {logged}"  # what FFmpeg said before refusing it
        return frames, error, failure is not None

    def _take(self, frames: list[Any]) -> None:
        """Match decoded pictures to their packets by ``pts``; check the stream's size."""
        for frame in frames:
            packet = self._pending.get(frame.pts) if frame.pts is not None else None
            if packet is None:
                continue  # a picture of no packet we fed (cannot happen with our pts)
            packet.done = True
            packet.width, packet.height = frame.width, frame.height
            if self._size is None:
                self._size = (frame.width, frame.height)
            elif (frame.width, frame.height) != self._size and not packet.error:
                packet.error = (
                    f"frame size {frame.width}x{frame.height} differs from the stream's "
                    f"{self._size[0]}x{self._size[1]}"
                )
            if packet.keep:
                packet.frame = frame

    def _ready(self) -> list[DecodedFrame]:
        """Pop the final outcomes at the head of the queue, judging trust in decode order.

        Feeding order is decode order, so damage is spread here: a frame with its own error
        (or no picture) is damaged, the frames after it are predicted from it until a key
        frame decodes cleanly.
        """
        out: list[DecodedFrame] = []
        for seq in list(self._pending):
            packet = self._pending[seq]
            if not packet.done:
                break
            del self._pending[seq]
            error = packet.error or ("" if packet.width else _NOT_DECODED)
            if error:
                if not packet.before_start:
                    self._damaged = packet.timestamp_ns
            elif packet.key:
                self._damaged = None
            elif self._damaged is not None:
                error = f"predicted from damaged frame at {self._damaged} ns"
            pixels = None
            if packet.frame is not None and not error:
                pixels = self._scaler.reformat(packet.frame, format="rgb24").to_ndarray()
            out.append(
                DecodedFrame(packet.timestamp_ns, pixels, error, packet.width, packet.height)
            )
        return out
