"""A user's mistakes with stereo datasets: typed errors naming the file, field and value."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from dataset_devkit.errors import ConfigError, FormatError, MissingPathError, NotFoundError
from dataset_devkit.stereo import (
    BuildResult,
    OutOfRangeError,
    SourceError,
    SourceIssues,
    StereoDataset,
    build_stereo_dataset,
    validate_stereo,
)
from tests.cli_run import run_devkit
from tests.stereo.helpers import writable_copy

PAIR = "ue5-pro/map0001/scene0001/cams00"


def _source_copy(source: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(source, tmp_path / "export"))


def _edit_export(root: Path, **pair0: Any) -> None:
    export = json.loads((root / "export.json").read_bytes())
    export["pairs"][0].update(pair0)
    (root / "export.json").write_text(json.dumps(export))


@pytest.mark.parametrize("root", [None, 3, ""])
def test_a_root_that_is_not_a_non_empty_path_is_a_config_error(root: Any) -> None:
    with pytest.raises(ConfigError, match="root must be a non-empty str or Path"):
        StereoDataset(root)
    with pytest.raises(ConfigError, match="root must be a non-empty str or Path"):
        validate_stereo(root)


def test_a_root_that_is_missing_or_a_file_is_named_in_one_line(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(MissingPathError, match="no such dataset directory"):
        StereoDataset(tmp_path / "none")
    with pytest.raises(ConfigError, match=f"{afile}: expected a dataset directory, found a file"):
        StereoDataset(afile)
    result = run_devkit(package_env, "stereo", "validate", str(afile))
    assert result.returncode == 1
    assert (
        result.stderr == f"error: {afile}: expected a stereo dataset (a directory), found a file\n"
    )


def test_use_depth_must_be_a_bool(built: BuildResult) -> None:
    with pytest.raises(ConfigError, match="use_depth must be True or False, found 'yes'"):
        StereoDataset(built.root, use_depth="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("frames", "message"),
    [
        ("012", "frames must be a list of frame numbers, found '012'"),
        (3, "frames must be a list of frame numbers, found 3"),
        (None, "frames must be a list of frame numbers, found None"),
        ([1.5], r"frames must be ints, found \[1.5\]"),
        ([True], r"frames must be ints, found \[True\]"),
    ],
)
def test_frames_that_are_not_a_list_of_ints_are_refused_not_coerced(
    built: BuildResult, frames: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        StereoDataset(built.root).read(0, frames)


def test_samples_and_frames_out_of_range_are_devkit_errors_and_index_errors(
    built: BuildResult,
) -> None:
    ds = StereoDataset(built.root)
    with pytest.raises(OutOfRangeError, match=r"sample 9 outside 0\.\.2"):
        ds[9]
    with pytest.raises(IndexError, match=re.escape(f"{PAIR}: frame 13 outside 0..12")):
        ds.read(0, [0, 13])
    with pytest.raises(ConfigError, match="sample must be an int, found '0'"):
        ds.read("0", [0])  # type: ignore[arg-type]
    assert np.asarray(ds.read(0, np.array([1, 2])).left).shape[0] == 2


def test_a_report_path_below_a_missing_folder_is_one_error_line(
    built: BuildResult, tmp_path: Path, package_env: dict[str, str]
) -> None:
    report = tmp_path / "missing" / "r.json"
    result = run_devkit(package_env, "stereo", "validate", str(built.root), "--report", str(report))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: --report {report}: cannot be created (No such file or directory)\n"
    )


def test_a_missing_nodepth_index_is_an_issue_not_a_traceback(
    built: BuildResult, tmp_path: Path
) -> None:
    root = writable_copy(built.root, tmp_path / "ds")
    (root / "genvr_i2s_nodepth.jsonl").unlink()
    report = validate_stereo(root)
    assert "genvr_i2s_nodepth.jsonl: No such file or directory" in report.issues


def test_a_meta_json_pointing_outside_the_pair_is_flagged_and_not_opened(
    built: BuildResult, source: Path, tmp_path: Path
) -> None:
    root = writable_copy(built.root, tmp_path / "ds")
    meta_path = root / PAIR / "meta.json"
    meta = json.loads(meta_path.read_bytes())
    meta["videos"]["left"] = str(source / "renders/shot000/left.mp4")
    meta["depth"]["meta"] = "../../outside/meta.json"
    meta_path.write_text(json.dumps(meta))
    issues = validate_stereo(root, with_depth=True).issues
    assert (
        f"{PAIR}/meta.json at $.videos.left: {meta['videos']['left']!r}, the index says "
        f"'{PAIR}/videos/left.mp4'"
    ) in issues
    assert (
        f"{PAIR}/meta.json at $.depth.meta: '../../outside/meta.json' is not a relative POSIX "
        "path inside the dataset root"
    ) in issues


def test_a_png_in_place_of_a_video_is_named_as_such(source: Path, tmp_path: Path) -> None:
    root = _source_copy(source, tmp_path)
    Image.new("RGB", (64, 48)).save(root / "renders/shot000/left.mp4", format="PNG")
    (root / "renders/shot001/left.mp4").write_bytes(
        (root / "renders/shot001/left.mp4").read_bytes()[:3000]
    )
    with pytest.raises(SourceIssues) as caught:
        build_stereo_dataset(root, tmp_path / "out")
    issues = "\n".join(caught.value.issues)
    assert "renders/shot000/left.mp4: is a piped png sequence file, expected an MP4 video" in (
        issues
    )
    assert "renders/shot001/left.mp4: cannot be opened as a video (Invalid data found" in issues
    assert "Errno" not in issues
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"depth_far_m": -1.0}, r"\$.pairs\[0\].depth_far_m: expected a positive number of met"),
        ({"depth_far_m": 0.0}, "found 0.0"),
        ({"num_frames": -1}, "num_frames, width, height and fps must be positive, found -1,"),
    ],
)
def test_export_numbers_out_of_range_are_refused_before_writing(
    source: Path, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    root = _source_copy(source, tmp_path)
    _edit_export(root, **change)
    with pytest.raises(SourceIssues) as caught:
        build_stereo_dataset(root, tmp_path / "out")
    assert any(re.search(message, issue) for issue in caught.value.issues)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "rel",
    ["genvr_i2s.jsonl", f"{PAIR}/videos/left.mp4", f"{PAIR}/cameras/right.json"],
)
def test_a_fifo_in_a_dataset_is_reported_never_opened(
    built: BuildResult, tmp_path: Path, package_env: dict[str, str], rel: str
) -> None:
    root = writable_copy(built.root, tmp_path / "ds")
    (root / rel).unlink()
    os.mkfifo(root / rel)
    # a regression blocks in open(): the child's timeout turns that into a test failure
    result = run_devkit(package_env, "stereo", "validate", str(root), timeout=60)
    assert result.returncode == 1
    assert f"{rel}: expected a regular file or directory, found a FIFO" in result.stderr
    with pytest.raises(FormatError, match="expected a regular file, found a FIFO"):
        StereoDataset(root)


@pytest.mark.parametrize(
    "rel", ["renders/shot000/left_camera.json", "renders/shot000/left_depth.npy", "export.json"]
)
def test_a_fifo_or_link_in_the_source_is_refused_before_it_is_opened(
    source: Path, tmp_path: Path, rel: str
) -> None:
    root = _source_copy(source, tmp_path)
    (root / rel).unlink()
    os.mkfifo(root / rel)
    with pytest.raises((SourceIssues, SourceError)) as caught:
        build_stereo_dataset(root, tmp_path / "out")
    text = str(caught.value) + "\n".join(getattr(caught.value, "issues", []))
    assert "is not a regular file" in text
    assert not (tmp_path / "out").exists()


def test_missing_depth_requirements_are_named_without_follow_on_noise(
    built: BuildResult, tmp_path: Path
) -> None:
    root = writable_copy(built.root, tmp_path / "ds")
    (root / "loader_requirements_with_depth.json").unlink()
    with pytest.raises(NotFoundError, match=r"\(loader_requirements_with_depth.json missing\)"):
        StereoDataset(root, use_depth=True)
    issues = validate_stereo(root, with_depth=True).issues
    assert any("(loader_requirements_with_depth.json missing)" in issue for issue in issues)
    assert not any(issue.startswith("source_mapping.jsonl") for issue in issues)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"clip": 3}, "clip must be a Clip or a callable (sample, num_frames) -> frames, found 3"),
        ({"max_item_bytes": 0}, "max_item_bytes must be an int >= 1, found 0"),
        ({"decoder_threads": -3}, "decoder_threads must be >= 0, found -3"),
    ],
)
def test_reader_options_out_of_range_are_config_errors(
    built: BuildResult, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        StereoDataset(built.root, **options)


def test_a_clip_with_a_negative_start_or_length_is_refused_not_empty(built: BuildResult) -> None:
    ds = StereoDataset(built.root)
    with pytest.raises(ConfigError, match="length must be an int >= 1, found -2"):
        ds.read_clip(0, 5, -2)
    with pytest.raises(ConfigError, match="start must be an int >= 0, found -1"):
        ds.read_clip(0, -1, 2)
    assert ds.read_clip(0, 10, 3).frames == (10, 11, 12)


@pytest.mark.parametrize(("source", "out"), [(None, "x"), ("src", ""), ("src", None)])
def test_build_refuses_a_source_or_out_that_is_not_a_path(
    source: Any, out: Any, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="must be a non-empty str or Path"):
        build_stereo_dataset(source, out if out != "x" else tmp_path / "x")
    assert list(tmp_path.iterdir()) == []
