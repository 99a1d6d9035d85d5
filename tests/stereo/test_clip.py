"""Items read an explicit clip; whole videos only when asked, and never past the memory cap."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.stereo import DEFAULT_MAX_ITEM_BYTES, Clip, OutOfRangeError, StereoDataset
from dataset_devkit.stereo.clip import check_item_bytes, item_bytes
from tests.stereo.conftest import FRAMES, HEIGHT, WIDTH


def test_random_starts_fit_follow_seed_epoch_and_sample_and_repeat():
    clip = Clip(4, stride=3, seed=11)
    for total in (10, 13, 300):
        for sample in range(20):
            frames = clip.frames(sample, total, epoch=0)
            assert len(frames) == 4 and np.all(np.diff(frames) == 3)
            assert frames[0] >= 0 and frames[-1] < total
            assert frames == clip.frames(sample, total, epoch=0)  # any worker, any re-run
    starts = {e: [clip.frames(s, 300, epoch=e)[0] for s in range(20)] for e in range(3)}
    assert starts[0] != starts[1] != starts[2]  # a new epoch draws new starts
    assert [Clip(4, stride=3, seed=12).frames(s, 300)[0] for s in range(20)] != starts[0]


def test_fixed_start_whole_clip_and_clips_that_do_not_fit():
    assert Clip(3, stride=2, start=5).frames(0, 13) == [5, 7, 9]
    assert Clip.whole().frames(0, 5) == [0, 1, 2, 3, 4]
    assert Clip.whole(stride=2).frames(0, 5) == [0, 2, 4]
    with pytest.raises(ValueError, match="has 13 frames; a clip of 8 frames at stride 2 spans 15"):
        Clip(8, stride=2).frames(0, 13)
    with pytest.raises(ValueError, match="from frame 10 ends at frame 13"):
        Clip(4, start=10).frames(0, 13)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_frames": 0}, "num_frames must be an int >= 1, found 0"),
        ({"num_frames": 4, "stride": 0}, "stride must be an int >= 1, found 0"),
        ({"num_frames": 4, "start": "first"}, "start must be an int >= 0, found 'first'"),
        ({"num_frames": 4, "start": -1}, "start must be an int >= 0, found -1"),
        ({"num_frames": 4, "seed": True}, "seed must be an int >= 0, found True"),
    ],
)
def test_bad_clip_options_are_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        Clip(**kwargs)


def test_items_need_a_clip_and_the_reader_names_a_clip_that_does_not_fit(built):
    with pytest.raises(ConfigError, match=r"dataset\[i\] needs a clip"):
        StereoDataset(built.root)[0]
    dataset = StereoDataset(built.root, clip=Clip(8, stride=2))
    with pytest.raises(OutOfRangeError, match=r"ue5-pro/map0001/scene0001/cams00 has 13 frames"):
        dataset[0]


def test_whole_clip_only_when_asked_and_under_the_memory_cap(built):
    whole = StereoDataset(built.root, clip=Clip.whole())
    assert whole[1].frames == tuple(range(FRAMES))
    size = item_bytes(FRAMES, HEIGHT, WIDTH, depth=True)
    assert size == 2 * FRAMES * HEIGHT * WIDTH * 7
    capped = StereoDataset(built.root, use_depth=True, clip=Clip.whole(), max_item_bytes=size - 1)
    with pytest.raises(
        ConfigError,
        match=rf"13 frames of both eyes and depth at 64x48 would take "
        rf".* \({size:,} bytes\) in memory, over max_item_bytes={size - 1:,}",
    ):
        capped[0]
    with pytest.raises(ConfigError, match="max_item_bytes"):
        capped.read(0, list(range(FRAMES)))  # explicit reads are capped too
    assert StereoDataset(built.root, use_depth=True, max_item_bytes=size).read(0, [0]).depth


def test_a_full_hd_pair_of_241_frames_is_refused_by_default_with_its_size():
    assert item_bytes(241, 720, 1280, depth=False) == 1_332_633_600
    with pytest.raises(
        ConfigError, match=r"241 frames of both eyes at 1280x720 would take 1\.3 GB"
    ):
        check_item_bytes("pair", 241, 720, 1280, depth=False, cap=DEFAULT_MAX_ITEM_BYTES)
    check_item_bytes("pair", 16, 720, 1280, depth=True, cap=DEFAULT_MAX_ITEM_BYTES)
