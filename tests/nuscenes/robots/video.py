"""H.264 / H.265 camera streams as a camera's hardware encoder sends them, through PyAV.

One Annex-B access unit per message, no B-frames (each frame leaves the encoder as it is
captured), a keyframe every ``keyframe_interval`` frames carrying its parameter sets
(SPS/PPS, and VPS for H.265) as Foxglove's ``CompressedVideo`` requires. Encoders run on
one thread so the bitstream is the same on every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, cast

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from av.video.codeccontext import VideoCodecContext
    from av.video.frame import VideoFrame

__all__ = ["VideoPacket", "decode_packets", "encode_video"]

_ENCODERS = {"h264": "libx264", "h265": "libx265"}


@dataclass(frozen=True, slots=True)
class VideoPacket:
    index: int
    keyframe: bool
    data: bytes


def _codec_context(
    codec: str, width: int, height: int, rate_hz: float, keyint: int
) -> VideoCodecContext:
    import av

    ctx = cast("VideoCodecContext", av.CodecContext.create(_ENCODERS[codec], "w"))
    ctx.width, ctx.height, ctx.pix_fmt = width, height, "yuv420p"
    rate = Fraction(rate_hz).limit_denominator(1000)
    ctx.time_base = 1 / rate
    ctx.framerate = rate
    ctx.gop_size = keyint
    ctx.max_b_frames = 0
    ctx.thread_count = 1
    common = f"keyint={keyint}:min-keyint={keyint}:scenecut=0:bframes=0:repeat-headers=1"
    if codec == "h264":
        ctx.options = {
            "preset": "veryfast",
            "tune": "zerolatency",
            "crf": "14",
            "x264-params": f"{common}:threads=1",
        }
    else:
        ctx.options = {
            "preset": "ultrafast",
            "tune": "zerolatency",
            "crf": "16",
            "x265-params": f"{common}:pools=none:frame-threads=1:log-level=error:info=0",
        }
    return ctx


def encode_video(
    codec: str,
    frames: Iterator[NDArray[np.uint8]],
    *,
    width: int,
    height: int,
    rate_hz: float,
    keyframe_interval: int,
) -> Iterator[VideoPacket]:
    """Encode RGB *frames* lazily; yields exactly one packet per frame, in order."""
    import av
    from av.video.reformatter import VideoReformatter

    ctx = _codec_context(codec, width, height, rate_hz, keyframe_interval)
    # One reformatter for the stream: ``VideoFrame.reformat`` builds a scaler per frame.
    to_yuv = VideoReformatter()
    for index, rgb in enumerate(frames):
        frame = to_yuv.reformat(av.VideoFrame.from_ndarray(rgb, format="rgb24"), format="yuv420p")
        frame.pts = index
        packets = ctx.encode(frame)
        if len(packets) != 1:
            raise RuntimeError(f"{codec} frame {index}: {len(packets)} packets, expected 1")
        packet = packets[0]
        yield VideoPacket(index=index, keyframe=bool(packet.is_keyframe), data=bytes(packet))
    remaining = ctx.encode(None)
    if remaining:
        raise RuntimeError(f"{codec}: {len(remaining)} packets held back by the encoder")


def decode_packets(codec: str, packets: list[bytes]) -> list[NDArray[np.uint8] | None]:
    """Decode each packet with PyAV's FFmpeg decoder: RGB per packet, None where it cannot.

    A packet decodes once a keyframe has been seen; FFmpeg's frame delay is taken up by
    flushing at the end (each packet still maps to its own output frame, in order).
    """
    import av

    ctx = cast(
        "VideoCodecContext", av.CodecContext.create(codec if codec == "h264" else "hevc", "r")
    )
    ctx.thread_count = 1
    out: list[NDArray[np.uint8] | None] = []
    seen_key = False
    decodable: list[int] = []
    frames: list[NDArray[np.uint8]] = []
    for index, data in enumerate(packets):
        packet = av.Packet(data)
        seen_key = seen_key or _is_keyframe(codec, data)
        if not seen_key:
            out.append(None)
            continue
        decodable.append(index)
        frames.extend(_rgb(f) for f in ctx.decode(packet))
        out.append(None)
    frames.extend(_rgb(f) for f in ctx.decode(None))
    if len(frames) != len(decodable):
        raise RuntimeError(f"{len(frames)} frames from {len(decodable)} decodable packets")
    for index, rgb in zip(decodable, frames, strict=True):
        out[index] = rgb
    return out


def _rgb(frame: VideoFrame) -> NDArray[np.uint8]:
    """Through a scaler of this call, not PyAV 19's per-thread one: that one, freed in a child
    forked from another thread later in the session, hangs the child on Python 3.13."""
    import av.video.reformatter

    rgb = av.video.reformatter.VideoReformatter().reformat(frame, format="rgb24")
    return np.asarray(rgb.to_ndarray(), dtype=np.uint8)


def _is_keyframe(codec: str, data: bytes) -> bool:
    """Whether an Annex-B access unit holds an IDR (H.264) or IRAP (H.265) picture."""
    for nal in _nal_headers(data):
        if codec == "h264" and nal & 0x1F == 5:
            return True
        if codec == "h265" and 16 <= (nal >> 1) & 0x3F <= 23:
            return True
    return False


def _nal_headers(data: bytes) -> Iterator[int]:
    start = 0
    while (at := data.find(b"\x00\x00\x01", start)) != -1 and at + 3 < len(data):
        yield data[at + 3]
        start = at + 3
