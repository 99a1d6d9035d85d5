"""Exact frame access: seeking to keyframes must give the same frames as decoding in order."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import av
import numpy as np
import pytest
from av.video.frame import PictureType

from dataset_devkit.errors import FormatError
from dataset_devkit.stereo.sample import write_clip
from dataset_devkit.stereo.video import VideoReader, probe_video
from tests.stereo.helpers import decode_all


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    write_clip(path, 25, 48, 64, eye=0, gop=6)
    return path


def test_probe_counts_frames_and_finds_the_fixed_gop_keyframes(clip):
    info = probe_video(clip)
    assert (info.num_frames, info.width, info.height, info.fps) == (25, 64, 48, 24.0)
    assert info.keyframes == (0, 6, 12, 18, 24)
    assert info.keyframe_for(17) == 12


def test_random_single_frames_equal_the_sequentially_decoded_frames(clip):
    reference = decode_all(clip)
    reader = VideoReader(clip)
    order = list(range(25))
    random.Random(7).shuffle(order)
    for frame in order:
        assert np.array_equal(reader.read([frame])[0], reference[frame]), frame


def test_a_batch_in_any_order_with_repeats_returns_frames_in_request_order(clip):
    reference = decode_all(clip)
    frames = [24, 3, 3, 13, 0, 7]
    assert np.array_equal(VideoReader(clip).read(frames), reference[frames])


def test_out_of_range_frames_are_rejected(clip):
    with pytest.raises(IndexError, match=r"frame 25 outside 0\.\.24"):
        VideoReader(clip).read([25])


def test_a_pickled_reader_reopens_its_file(clip):
    reader = VideoReader(clip)
    first = reader.read([5])
    clone = pickle.loads(pickle.dumps(reader))
    assert np.array_equal(clone.read([5]), first)


def test_a_file_that_is_not_a_video_is_a_format_error(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video at all")
    with pytest.raises(FormatError, match="cannot be opened as a video"):
        probe_video(bad)


def test_a_corrupt_packet_is_a_format_error_naming_the_file_and_frame(clip, tmp_path):
    with av.open(str(clip)) as container:
        packets = [(int(p.pos or 0), p.size) for p in container.demux(video=0) if p.pts is not None]
    pos, size = packets[6]  # the second keyframe, in decode order
    data = bytearray(clip.read_bytes())
    data[pos + 4 : pos + size] = b"\xff" * (size - 4)
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(bytes(data))
    reader = VideoReader(broken)
    with pytest.raises(FormatError, match=r"broken\.mp4: decoding failed on the way to frame \d+"):
        reader.read(list(range(25)))
    assert np.array_equal(reader.read([0]), decode_all(clip)[:1])  # the handle still works


def test_the_test_clip_really_has_b_frames_so_decode_order_differs(clip):
    with av.open(str(clip)) as container:
        types = [PictureType(f.pict_type) for f in container.decode(video=0)]
    assert types.count(PictureType.B) >= 5 and types[0] == PictureType.I


def test_every_frame_through_a_fresh_handle_equals_the_sequential_decode(clip):
    reference = decode_all(clip)
    assert len(reference) == 25
    for frame in range(25):  # a cold handle must seek to the keyframe and stop at the pts
        assert np.array_equal(VideoReader(clip).read([frame])[0], reference[frame]), frame
    backwards = VideoReader(clip)
    for frame in reversed(range(25)):  # every read seeks backwards from the last position
        assert np.array_equal(backwards.read([frame])[0], reference[frame]), frame
    assert np.array_equal(VideoReader(clip).read(list(range(25))), reference)
