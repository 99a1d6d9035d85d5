"""foxglove.CompressedVideo messages (H.264, H.265) to frames, damage judged per message.

The streams are encoded in the test with PyAV's libx264 and libx265, one access unit per
message in Annex B form with the parameter sets in every key frame, as Foxglove's schema asks.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.jpeg import encode_pixels
from dataset_devkit.nuscenes.ingest.video_packets import (
    VIDEO_FORMATS,
    DecodedFrame,
    VideoPacketDecoder,
)
from tests.nuscenes.camera_content import Array, psnr, scene

FORMATS = ("h264", "h265")
_ENCODERS = {"h264": "libx264", "h265": "libx265"}
WIDTH, HEIGHT = 96, 64
GOP = 6
T0 = 1_700_000_000_000_000_000


def _times(count: int) -> list[int]:
    """Irregular message times (a camera's jitter), strictly increasing."""
    return [T0 + k * 33_333_333 + (k * k % 7) * 1_000 for k in range(count)]


@dataclass(frozen=True)
class Stream:
    """One encoded camera stream: messages (access units), their times and the source frames."""

    format: str
    messages: list[bytes]
    times: list[int]
    sources: list[Array]
    keys: list[int]  # indexes of the key-frame messages

    def without(self, index: int) -> tuple[list[int], list[bytes]]:
        keep = [k for k in range(len(self.messages)) if k != index]
        return [self.times[k] for k in keep], [self.messages[k] for k in keep]


def _encoder(fmt: str, width: int, height: int, gop: int, bframes: int) -> Any:
    name = _ENCODERS[fmt]
    assert name in av.codecs_available, f"this PyAV build has no {name} encoder"
    encoder: Any = av.CodecContext.create(name, "w")
    encoder.width, encoder.height, encoder.pix_fmt = width, height, "yuv420p"
    encoder.time_base, encoder.framerate = Fraction(1, 30), Fraction(30)
    encoder.gop_size, encoder.max_b_frames = gop, bframes
    gop_params = f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes={bframes}"
    if fmt == "h264":
        encoder.options = {"preset": "veryfast", "crf": "16", "x264-params": gop_params}
    else:
        params = f"{gop_params}:log-level=error:crf=16:repeat-headers=1"
        encoder.options = {"preset": "ultrafast", "x265-params": params}
    return encoder


def _nal_types(fmt: str, message: bytes) -> list[int]:
    shift, mask = (0, 0x1F) if fmt == "h264" else (1, 0x3F)
    return [(message[m.end()] >> shift) & mask for m in re.finditer(b"\x00\x00\x01", message)]


def encode_stream(
    fmt: str,
    count: int = 3 * GOP,
    *,
    width: int = WIDTH,
    height: int = HEIGHT,
    gop: int = GOP,
    bframes: int = 0,
    seed: int = 0,
) -> Stream:
    """*count* frames of a moving scene as one message per access unit."""
    encoder = _encoder(fmt, width, height, gop, bframes)
    sources = [scene(height, width, seed, shift=2 * k) for k in range(count)]
    packets = []
    to_yuv = av.video.reformatter.VideoReformatter()  # not PyAV's per-thread one (fork-safe)
    for k, pixels in enumerate(sources):
        frame = to_yuv.reformat(
            av.VideoFrame.from_ndarray(pixels, format="rgb24"), format="yuv420p"
        )
        frame.pts = k
        packets += encoder.encode(frame)
    packets += encoder.encode(None)
    assert len(packets) == count, "one access unit per frame"
    messages = [bytes(p) for p in packets]
    times = _times(count)
    if bframes:  # decode order differs: each message carries its picture's own time
        times = [times[p.pts] for p in packets]
    keys = [k for k, p in enumerate(packets) if p.is_keyframe]
    parameter_sets = {7} if fmt == "h264" else {32, 33, 34}
    for k in keys:  # Foxglove: every key frame carries its parameter sets
        assert parameter_sets <= set(_nal_types(fmt, messages[k])), k
    return Stream(fmt, messages, times, sources, keys)


def decode_all(
    fmt: str, times: list[int], messages: list[bytes], *, keep: bool = True
) -> list[DecodedFrame]:
    decoder = VideoPacketDecoder(fmt, "/cam/video")
    out: list[DecodedFrame] = []
    for t, message in zip(times, messages, strict=True):
        out += decoder.feed(t, message, keep=keep)
    return out + decoder.flush()


@pytest.fixture(scope="module", params=FORMATS)
def stream(request: pytest.FixtureRequest) -> Stream:
    return encode_stream(request.param)


def _reasons(frames: list[DecodedFrame]) -> dict[int, str]:
    return {f.timestamp_ns: f.error for f in frames if f.error}


# ------------------------------------------------------------------------------ intact
def test_every_installed_encoder_is_there() -> None:
    assert {"libx264", "libx265"} <= set(av.codecs_available)
    assert VIDEO_FORMATS == FORMATS


def test_frames_decode_close_to_the_source_under_their_own_timestamps(stream: Stream) -> None:
    assert VideoPacketDecoder(stream.format, "/cam/video").size is None
    decoder = VideoPacketDecoder(stream.format, "/cam/video")
    frames: list[DecodedFrame] = []
    for t, message in zip(stream.times, stream.messages, strict=True):
        answered = decoder.feed(t, message, keep=True)
        assert [f.timestamp_ns for f in answered] == [t]  # no B-frames: answered at once
        frames += answered
    assert decoder.flush() == []
    assert decoder.size == (WIDTH, HEIGHT)
    assert [f.timestamp_ns for f in frames] == stream.times
    for frame, source in zip(frames, stream.sources, strict=True):
        assert frame.valid and frame.error == ""
        assert (frame.width, frame.height) == (WIDTH, HEIGHT)
        assert frame.pixels is not None and frame.pixels.dtype == np.uint8
        assert frame.pixels.shape == (HEIGHT, WIDTH, 3)
        assert psnr(frame.pixels, source) >= 32.0


def test_the_first_pass_reports_sizes_and_trust_without_pixels(stream: Stream) -> None:
    light = decode_all(stream.format, stream.times, stream.messages, keep=False)
    full = decode_all(stream.format, stream.times, stream.messages, keep=True)
    assert all(f.pixels is None for f in light)
    assert [(f.timestamp_ns, f.error, f.width, f.height) for f in light] == [
        (f.timestamp_ns, f.error, f.width, f.height) for f in full
    ]


def test_the_same_messages_give_byte_identical_jpegs_twice(stream: Stream) -> None:
    def jpegs() -> list[bytes]:
        frames = decode_all(stream.format, stream.times, stream.messages)
        return [encode_pixels(f.pixels, 95) for f in frames if f.pixels is not None]

    first = jpegs()
    assert len(first) == len(stream.messages)
    assert jpegs() == first


def test_a_decoder_that_holds_pictures_back_still_maps_them_to_their_timestamps() -> None:
    """B-frames are outside Foxglove's schema; a decoder that delays and reorders output must
    still put each picture under its own message's time (matched by pts, not by counting)."""
    for fmt in FORMATS:
        stream = encode_stream(fmt, 2 * GOP, bframes=2)
        assert stream.times != sorted(stream.times), "the stream reorders"
        decoder = VideoPacketDecoder(fmt, "/cam/video")
        answers = [
            decoder.feed(t, m, keep=True)
            for t, m in zip(stream.times, stream.messages, strict=True)
        ]
        assert [] in answers, "the decoder held pictures back"
        frames = [f for answer in answers for f in answer] + decoder.flush()
        assert [f.timestamp_ns for f in frames] == stream.times  # feeding order
        by_time = dict(zip(_times(2 * GOP), stream.sources, strict=True))
        for frame in frames:
            assert frame.valid and frame.pixels is not None, frame.error
            assert psnr(frame.pixels, by_time[frame.timestamp_ns]) >= 32.0


# ------------------------------------------------------------------------------ damage
def test_a_stream_starting_without_a_key_frame_is_invalid_until_its_first_one(
    stream: Stream,
) -> None:
    start = 2
    frames = decode_all(stream.format, stream.times[start:], stream.messages[start:])
    first_key = stream.keys[1]
    assert len(frames) == len(stream.messages) - start
    picture = "an IDR picture" if stream.format == "h264" else "an IRAP picture"
    for frame in frames[: first_key - start]:
        assert frame.error == (
            "before the stream's first key frame (decoding starts at a key frame with its "
            f"parameter sets: {picture})"
        )
        assert frame.pixels is None and frame.width == 0
    assert all(f.valid for f in frames[first_key - start :])


def test_a_first_key_frame_without_parameter_sets_names_them(stream: Stream) -> None:
    sets = {7, 8} if stream.format == "h264" else {32, 33, 34}
    shift, mask = (0, 0x1F) if stream.format == "h264" else (1, 0x3F)
    units = stream.messages[0].split(b"\x00\x00\x01")
    kept = [u for u in units[1:] if (u[0] >> shift) & mask not in sets]
    bare = b"".join(b"\x00\x00\x01" + u for u in kept)
    frames = decode_all(stream.format, stream.times, [bare, *stream.messages[1:]])
    assert frames[0].error.startswith(
        "key frame without the parameter sets it needs, none came before: packet does not decode"
    )
    damaged = stream.times[0]
    for frame in frames[1 : stream.keys[1]]:
        assert not frame.valid and frame.pixels is None
        assert frame.error == f"predicted from damaged frame at {damaged} ns" or (
            "does not decode" in frame.error
        )
    assert all(f.valid for f in frames[stream.keys[1] :])


def test_a_dropped_packet_invalidates_the_frames_that_refer_to_it(stream: Stream) -> None:
    dropped = 2
    times, messages = stream.without(dropped)
    frames = decode_all(stream.format, times, messages)
    reasons = _reasons(frames)
    after = stream.times[dropped + 1]  # the first frame that refers to the missing one
    assert set(reasons) == set(stream.times[dropped + 1 : stream.keys[1]])
    missing = (
        "a reference frame before it is missing (H.264 frame_num 3 follows 1, expected 2)"
        if stream.format == "h264"
        else "Could not find ref with POC 2"
    )
    assert missing in reasons[after]
    for t in stream.times[dropped + 2 : stream.keys[1]]:
        assert reasons[t] == f"predicted from damaged frame at {after} ns" or (
            stream.format == "h265" and "Could not find ref" in reasons[t]
        )


def test_a_truncated_key_frame_invalidates_its_group_of_pictures(stream: Stream) -> None:
    key = stream.keys[1]
    messages = list(stream.messages)
    messages[key] = messages[key][: len(messages[key]) // 2]
    frames = decode_all(stream.format, stream.times, messages)
    reasons = _reasons(frames)
    assert set(reasons) == set(stream.times[key : stream.keys[2]])
    assert reasons[stream.times[key]].startswith("packet does not decode")
    assert all(f.pixels is None for f in frames if f.error)


def test_a_truncated_p_frame_is_caught_by_h264() -> None:
    stream = encode_stream("h264")
    messages = list(stream.messages)
    messages[3] = messages[3][: len(messages[3]) // 2]
    reasons = _reasons(decode_all("h264", stream.times, messages))
    assert set(reasons) == set(stream.times[3 : stream.keys[1]])
    assert reasons[stream.times[3]].startswith("packet does not decode")


def test_flipped_bytes_in_a_slice_make_the_frame_and_its_dependants_invalid(
    stream: Stream,
) -> None:
    index = 3
    message = bytearray(stream.messages[index])
    slice_start = [m.end() for m in re.finditer(b"\x00\x00\x01", bytes(message))][-1]
    message[slice_start + 2 : slice_start + 6] = bytes(
        b ^ 0xFF for b in message[slice_start + 2 : slice_start + 6]
    )
    messages = list(stream.messages)
    messages[index] = bytes(message)
    frames = decode_all(stream.format, stream.times, messages)
    reasons = _reasons(frames)
    assert set(reasons) == set(stream.times[index : stream.keys[1]])
    own = reasons[stream.times[index]]
    assert own.startswith(("packet does not decode", "decoder concealed damaged data"))
    intact = decode_all(stream.format, stream.times, stream.messages)
    for got, want in zip(frames, intact, strict=True):
        if got.valid:
            assert want.pixels is not None and got.pixels is not None
            np.testing.assert_array_equal(got.pixels, want.pixels)


def test_an_empty_message_is_an_invalid_frame_not_an_exception(stream: Stream) -> None:
    messages = list(stream.messages)
    messages[1] = b""
    reasons = _reasons(decode_all(stream.format, stream.times, messages))
    assert reasons[stream.times[1]] == "the message holds no video data"
    assert stream.times[2] in reasons  # frame 2 refers to frame 1
    assert all(t not in reasons for t in stream.times[stream.keys[1] :])


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=25, deadline=None)
@given(
    index=st.integers(0, 3 * GOP - 1),
    kind=st.sampled_from(["random bytes", "0xFF run", "zero run", "cut", "drop"]),
    where=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**16),
)
def test_any_damage_to_one_message_never_raises_and_never_reaches_past_the_next_key_frame(
    fmt: str, index: int, kind: str, where: float, seed: int
) -> None:
    stream = _STREAMS.get(fmt) or _STREAMS.setdefault(fmt, encode_stream(fmt))
    intact = _INTACT.get(fmt) or _INTACT.setdefault(
        fmt, decode_all(fmt, stream.times, stream.messages)
    )
    times, messages = list(stream.times), list(stream.messages)
    damaged = bytearray(messages[index])
    at = min(int(where * len(damaged)), len(damaged) - 1)
    if kind == "drop":
        times, messages = stream.without(index)
    elif kind == "cut":
        messages[index] = bytes(damaged[:at])
    else:
        run = {"random bytes": random.Random(seed).randbytes(8), "0xFF run": b"\xff" * 8}
        damaged[at : at + 8] = run.get(kind, b"\x00" * 8)
        messages[index] = bytes(damaged)
    frames = decode_all(fmt, times, messages)
    assert [f.timestamp_ns for f in frames] == times  # one outcome per message, in order
    by_time = {f.timestamp_ns: f for f in intact}
    next_key = min((k for k in stream.keys if k > index), default=len(stream.times))
    for frame in frames:
        assert (frame.pixels is None) == (not frame.valid)
        position = stream.times.index(frame.timestamp_ns)
        reference = by_time[frame.timestamp_ns].pixels
        assert reference is not None
        if position < index or position >= next_key:  # untouched by the damage
            assert frame.valid, frame.error
            assert frame.pixels is not None
            np.testing.assert_array_equal(frame.pixels, reference)


_STREAMS: dict[str, Stream] = {}
_INTACT: dict[str, list[DecodedFrame]] = {}


# ----------------------------------------------------------------- stream-level rules
def test_a_size_change_mid_recording_makes_the_other_size_invalid(stream: Stream) -> None:
    smaller = encode_stream(stream.format, GOP, width=64, height=48, seed=1)
    times = _times(len(stream.messages) + GOP)
    frames = decode_all(stream.format, times, stream.messages + smaller.messages)
    assert all(f.valid for f in frames[: len(stream.messages)])
    for frame in frames[len(stream.messages) :]:
        assert (frame.width, frame.height) == (64, 48)
        assert frame.error in (
            f"frame size 64x48 differs from the stream's {WIDTH}x{HEIGHT}",
            f"predicted from damaged frame at {times[len(stream.messages)]} ns",
        )
    assert frames[len(stream.messages)].error.startswith("frame size 64x48 differs")


def test_after_flush_the_decoder_starts_over_at_a_key_frame(stream: Stream) -> None:
    decoder = VideoPacketDecoder(stream.format, "/cam/video")
    for t, message in zip(stream.times[:3], stream.messages[:3], strict=True):
        decoder.feed(t, message, keep=False)
    assert decoder.flush() == []
    answer = decoder.feed(stream.times[3], stream.messages[3], keep=True)
    assert [f.error.startswith("before the stream's first key frame") for f in answer] == [True]
    key = stream.keys[1]
    answer = decoder.feed(stream.times[key], stream.messages[key], keep=True)
    assert [f.valid for f in answer] == [True]
    assert decoder.size == (WIDTH, HEIGHT)


def test_streams_decode_on_threads_at_once_with_their_own_error_logs() -> None:
    streams = {fmt: encode_stream(fmt) for fmt in FORMATS}
    damaged = {}
    for fmt, stream in streams.items():  # every group of pictures loses its second packet
        drop = {key + 1 for key in stream.keys}
        damaged[fmt] = (
            [t for k, t in enumerate(stream.times) if k not in drop],
            [m for k, m in enumerate(stream.messages) if k not in drop],
        )
    jobs = [(fmt, s.times, s.messages) for fmt, s in streams.items()]
    jobs += [(fmt, times, messages) for fmt, (times, messages) in damaged.items()]

    def outcomes(job: tuple[str, list[int], list[bytes]]) -> list[tuple[int, str]]:
        return [(f.timestamp_ns, f.error) for f in decode_all(*job)]

    alone = [outcomes(job) for job in jobs]
    results: dict[int, list[list[tuple[int, str]]]] = {}

    def run(slot: int) -> None:
        results[slot] = [outcomes(jobs[slot]) for _ in range(3)]

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    for slot, expected in enumerate(alone):
        assert results[slot] == [expected] * 3
    assert all(not error for _, error in alone[0])
    assert sum(bool(error) for _, error in alone[2]) >= 3


def test_an_unknown_format_is_refused_listing_the_supported_ones() -> None:
    with pytest.raises(FormatError) as info:
        VideoPacketDecoder("H264", "/cam/video")
    assert str(info.value) == (
        "/cam/video: video format 'H264' is not supported; did you mean 'h264' or 'h265'? "
        "(supported: h264, h265)"
    )
    with pytest.raises(FormatError) as info:
        VideoPacketDecoder("vp9", "/cam/video")
    assert str(info.value) == (
        "/cam/video: video format 'vp9' is not supported; supported: h264, h265"
    )
