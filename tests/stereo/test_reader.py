"""StereoDataset against the source: frames, cameras, depth; installs with and without depth."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dataset_devkit.errors import ConfigError, NotFoundError
from dataset_devkit.stereo import Clip, DepthNotInstalledError, StereoDataset
from dataset_devkit.stereo.cameras import ue_pose_to_opencv
from dataset_devkit.stereo.depth import encode_depth_mm
from tests.stereo.helpers import decode_all, remove_depth, writable_copy
from tests.workers import START_METHODS, run_in_worker


def test_frames_of_both_eyes_equal_a_plain_decode_of_the_source_videos(built, source):
    dataset = StereoDataset(built.root)
    frames = [12, 0, 6, 7, 3]
    item = dataset.read(1, frames)
    assert item.id == "ue5-pro/map0001/scene0002/cams00"
    assert item.left.dtype == np.uint8 and item.left.shape == (5, 48, 64, 3)
    assert np.array_equal(item.left, decode_all(source / "renders/shot001/left.mp4")[frames])
    assert np.array_equal(item.right, decode_all(source / "renders/shot001/right.mp4")[frames])
    # brightness of the red channel encodes the frame number of the synthetic renders
    assert np.allclose(item.left[:, 30, :, 0].mean(axis=1), [16 + 9 * f for f in frames], atol=4)


def test_depth_is_float32_metres_exactly_as_encoded_from_the_source(built, source):
    dataset = StereoDataset(built.root, use_depth=True)
    item = dataset.read(2, [12, 1])
    assert item.depth is not None
    for eye in ("left", "right"):
        raw = np.load(source / f"renders/shot002/{eye}_depth.npy")
        expected, _ = encode_depth_mm(raw, 1000.0, where="", first=0)
        assert item.depth[eye].dtype == np.float32
        assert np.array_equal(item.depth[eye], expected[[12, 1]].astype(np.float32) / 1000)
    assert item.depth["left"][0, 0, :4].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_cameras_are_per_frame_opencv_poses_of_the_ue_track(built, source):
    import json

    track = json.loads((source / "renders/shot000/right_camera.json").read_text())
    item = StereoDataset(built.root).read(0, [9])
    ue = track["frames"][9]
    rot = ue["rotation_deg"]
    expected = ue_pose_to_opencv(ue["location_cm"], rot["pitch"], rot["yaw"], rot["roll"])
    assert np.allclose(item.camera_to_world["right"][0], expected)
    assert item.K["left"].shape == (1, 3, 3)
    assert item.K["left"][0, 0, 2] == 31.5 and item.K["left"][0, 1, 2] == 23.5
    baseline = (
        item.camera_to_world["right"][0, :3, 3]
        - StereoDataset(built.root).read(0, [9]).camera_to_world["left"][0, :3, 3]
    )
    assert np.isclose(np.linalg.norm(baseline), 0.065)


def test_items_use_the_clip_option_and_carry_the_prompt(built):
    dataset = StereoDataset(built.root, clip=Clip(4, start=0))
    item = dataset[0]
    assert item.frames == (0, 1, 2, 3) and item.depth is None
    assert item.prompt.startswith("A rendered harbour street scene")
    picked = StereoDataset(built.root, clip=lambda i, n: [n - 1, i])[2]
    assert picked.frames == (12, 2)
    assert len(dataset) == 3 and dataset.read_clip(0, 9, 4).frames == (9, 10, 11, 12)


def test_a_base_only_install_reads_the_default_index_and_names_the_depth_download(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "GenVR-duo-20261023")
    remove_depth(root)
    dataset = StereoDataset(root, clip=Clip.whole())
    assert dataset[0].left.shape == (13, 48, 64, 3)
    with pytest.raises(DepthNotInstalledError, match=r"unpack.py --depth --output DIR"):
        StereoDataset(root, use_depth=True)


def test_use_depth_must_agree_with_the_index_requirements(built):
    with pytest.raises(ConfigError, match=r"genvr_i2s\.jsonl is read with use_depth=false"):
        StereoDataset(built.root, index="genvr_i2s.jsonl", use_depth=True)
    with pytest.raises(ConfigError, match="use_depth=true"):
        StereoDataset(built.root, index="genvr_i2s_with_depth.jsonl")
    with pytest.raises(NotFoundError, match="no loader requirements file lists"):
        StereoDataset(built.root, index="other.jsonl")


def test_out_of_range_samples_and_frames_are_index_errors(built):
    dataset = StereoDataset(built.root)
    with pytest.raises(IndexError, match=r"sample 3 outside 0\.\.2"):
        dataset.read(3, [0])
    with pytest.raises(IndexError, match=r"frame 13 outside 0\.\.12"):
        dataset.read(0, [13])


def _read_in_worker(dataset: StereoDataset) -> tuple[Any, ...]:
    item = dataset.read(0, [5, 11, 2])
    assert item.depth is not None
    return item.left, item.right, item.depth["left"], item.depth["right"]


@pytest.mark.parametrize("decoder_threads", [1, 0])
@pytest.mark.parametrize("method", START_METHODS)
def test_a_dataset_used_in_the_parent_reads_the_same_in_a_worker(built, method, decoder_threads):
    # FFmpeg's decoder and scaler threads (PyAV >= 19 keeps one scaler per thread) exist only
    # in the parent: a forked worker that touched an inherited one would wait forever.
    dataset = StereoDataset(built.root, use_depth=True, decoder_threads=decoder_threads)
    expected = _read_in_worker(dataset)  # opens containers and scalers in the parent
    got = run_in_worker(method, _read_in_worker, dataset)
    assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
    assert all(
        np.array_equal(a, b) for a, b in zip(_read_in_worker(dataset), expected, strict=True)
    )


def test_pickling_drops_open_handles(built):
    dataset = StereoDataset(built.root)
    first = dataset.read(1, [2]).right
    clone = pickle.loads(pickle.dumps(dataset))
    assert clone._videos == {}
    assert np.array_equal(clone.read(1, [2]).right, first)


def test_a_reopened_video_reuses_its_frame_index_instead_of_demuxing_again(built, monkeypatch):
    import dataset_devkit.stereo.reader as reader_module
    import dataset_devkit.stereo.video as video_module

    calls: list[Path] = []
    index = video_module._index

    def counting(container: Any, path: Path) -> Any:
        calls.append(path)
        return index(container, path)

    monkeypatch.setattr(video_module, "_index", counting)
    monkeypatch.setattr(reader_module, "_MAX_OPEN_VIDEOS", 1)  # every other read evicts
    dataset = StereoDataset(built.root)
    first = [dataset.read(sample, [7]).right for sample in range(3)]
    again = [dataset.read(sample, [7]).right for sample in range(3)]
    assert len(calls) == 6 and len(set(calls)) == 6  # each of the 6 videos demuxed once
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    clone = pickle.loads(pickle.dumps(dataset))  # spawn workers inherit the indexes too
    clone.read(0, [1])
    assert len(calls) == 6


_WITHOUT_EXTRAS = """
import sys
sys.modules["av"] = None  # the video extra is not installed
sys.modules["torch"] = None  # nor the torch extra
from dataset_devkit.errors import MissingDependencyError
from dataset_devkit.stereo import StereoDataset
dataset = StereoDataset(sys.argv[1])  # opening needs neither
for attempt in (lambda: dataset.read(0, [0]), lambda: __import__(
        "dataset_devkit.stereo.torch_dataset")):
    try:
        attempt()
    except MissingDependencyError as exc:
        print(exc)
"""


def test_without_the_video_and_torch_extras_reads_fail_naming_the_extra(built, package_env):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRAS, str(built.root)],
        capture_output=True,
        text=True,
        env=package_env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert "'av'" in lines[0] and "pip install 'dataset-devkit[video]'" in lines[0]
    assert "'torch'" in lines[1] and "pip install 'dataset-devkit[torch]'" in lines[1]


@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside/left.mp4", "a\\b.mp4", "C:/x.mp4", ""])
def test_an_index_path_leaving_the_root_is_a_format_error_naming_line_and_field(
    built, tmp_path, bad
):
    import json

    from dataset_devkit.errors import FormatError

    root = writable_copy(built.root, tmp_path / "escaped")
    for name in ("genvr_i2s.jsonl", "genvr_i2s_nodepth.jsonl"):
        rows = [json.loads(line) for line in (root / name).read_text().splitlines()]
        rows[1]["right_video"] = bad
        (root / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(FormatError, match=r"genvr_i2s\.jsonl at line 2 \$\.right_video: .*inside"):
        StereoDataset(root)
