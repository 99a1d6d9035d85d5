"""Bad rendered exports give clear errors naming the file, field and expected value."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dataset_devkit.errors import DevkitError
from dataset_devkit.integrity import hash_file
from dataset_devkit.stereo import SourceError, SourceIssues, build_stereo_dataset
from dataset_devkit.stereo.sample import write_clip
from dataset_devkit.stereo.source import load_source

Edit = Callable[[Path, dict[str, Any]], None]


def _broken(source: Path, tmp_path: Path, edit: Edit) -> Path:
    copy = tmp_path / "export"
    shutil.copytree(source, copy)
    export = json.loads((copy / "export.json").read_text())
    edit(copy, export)
    (copy / "export.json").write_text(json.dumps(export))
    return copy


def _issues(source: Path, tmp_path: Path, edit: Edit) -> list[str]:
    with pytest.raises(SourceIssues) as caught:
        load_source(_broken(source, tmp_path, edit))
    return caught.value.issues


def test_a_pair_without_its_right_eye_names_the_missing_field(source, tmp_path):
    def edit(_root: Path, export: dict[str, Any]) -> None:
        del export["pairs"][1]["right"]

    with pytest.raises(SourceError, match=r"export.json at \$.pairs\[1\]: .*`right`"):
        load_source(_broken(source, tmp_path, edit))


def test_a_missing_right_video_file_is_reported(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        (root / export["pairs"][0]["right"]["video"]).unlink()

    issues = _issues(source, tmp_path, edit)
    assert issues == [
        "$.pairs[0] (map0001/scene0001/cams00): right video renders/shot000/right.mp4 is missing"
    ]


def test_a_frame_count_mismatch_names_both_counts(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        write_clip(root / "short.mp4", 10, 48, 64, eye=1)
        export["pairs"][2]["right"]["video"] = "short.mp4"

    issues = _issues(source, tmp_path, edit)
    assert len(issues) == 1
    assert "right video short.mp4 has 10 frames at 64x48, export says 13 frames" in issues[0]


def test_an_improper_camera_rotation_is_rejected_with_its_frame(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        path = root / export["pairs"][0]["left"]["camera"]
        track = json.loads(path.read_text())
        track["frames"][4]["scale"] = [1.0, -1.0, 1.0]
        path.write_text(json.dumps(track))

    (issue,) = _issues(source, tmp_path, edit)
    assert "left_camera.json at $.frames[4]" in issue
    assert "not a proper rotation: det = -1" in issue


def test_an_all_nan_depth_render_stops_the_build_and_names_the_file(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        path = root / export["pairs"][1]["right"]["depth"]
        depth = np.load(path)
        depth[:] = np.nan
        path.unlink()
        np.save(path, depth)

    broken = _broken(source, tmp_path, edit)
    out = tmp_path / "out"
    with pytest.raises(
        SourceError, match=r"right_depth.npy: no valid depth pixel in any of its 13"
    ):
        build_stereo_dataset(broken, out)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_wrong_resolutions_are_all_reported_at_once(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        export["pairs"][0]["width"] = 80
        path = root / export["pairs"][1]["left"]["camera"]
        track = json.loads(path.read_text())
        track["frames"][0]["resolution"] = [1280, 720]
        path.write_text(json.dumps(track))

    issues = _issues(source, tmp_path, edit)
    assert any(
        "left video renders/shot000/left.mp4 has 13 frames at 64x48, export says "
        "13 frames at 80x48" in i
        for i in issues
    )
    assert any("right video renders/shot000/right.mp4" in i for i in issues)
    assert any(
        "shot001/left_camera.json at $.frames[0].resolution: [1280, 720], expected [64, 48]" in i
        for i in issues
    )


def test_depth_with_the_wrong_shape_is_reported(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        np.save(root / "flat.npy", np.ones((13, 48, 32), dtype=np.float32))
        export["pairs"][0]["left"]["depth"] = "flat.npy"

    (issue,) = _issues(source, tmp_path, edit)
    assert "flat.npy: depth is float32 [13, 48, 32], expected float [13, 48, 64]" in issue


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.mp4", "a\\b.mp4"])
def test_paths_outside_the_export_are_refused(source, tmp_path, path):
    def edit(_root: Path, export: dict[str, Any]) -> None:
        export["pairs"][0]["left"]["video"] = path

    with pytest.raises(SourceError, match=r"at \$.pairs\[0\].left.video: .* not a relative"):
        load_source(_broken(source, tmp_path, edit))


def test_a_missing_export_file_is_a_devkit_error(tmp_path):
    with pytest.raises(DevkitError, match=r"not a render export: it holds no export\.json"):
        load_source(tmp_path)


def test_symlinked_videos_are_refused_before_anything_is_written(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        left = root / export["pairs"][0]["left"]["video"]
        (root / "linked.mp4").symlink_to(left)
        export["pairs"][0]["right"]["video"] = "linked.mp4"

    issues = _issues(source, tmp_path, edit)
    assert any("right video linked.mp4 is a symbolic link" in issue for issue in issues)


def test_hard_linked_export_files_are_copied_as_plain_bytes(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        for eye in ("left", "right"):  # an NTFS export's hard-linked duplicates
            for kind in ("video", "camera", "depth"):
                name = export["pairs"][1][eye][kind]
                (root / f"{eye}_{kind}.link").hardlink_to(root / name)
                export["pairs"][1][eye][kind] = f"{eye}_{kind}.link"

    broken = _broken(source, tmp_path, edit)
    assert (broken / "left_video.link").stat().st_nlink == 2
    result = build_stereo_dataset(broken, tmp_path / "out")
    video = result.root / "ue5-pro/map0001/scene0002/cams00/videos/right.mp4"
    assert video.stat().st_nlink == 1
    assert video.read_bytes() == (source / "renders/shot001/right.mp4").read_bytes()
    manifest = json.loads((result.root / "source_dataset_release_manifest.json").read_text())
    by_path = {entry["path"]: entry for entry in manifest["files"]}
    assert (
        by_path["left_depth.link"]["sha256"]
        == hash_file(source / "renders/shot001/left_depth.npy")[1]
    )


def test_fortran_ordered_depth_is_reported_before_the_build(source, tmp_path):
    def edit(root: Path, export: dict[str, Any]) -> None:
        np.save(root / "f.npy", np.asfortranarray(np.ones((13, 48, 64), dtype=np.float32)))
        export["pairs"][2]["right"]["depth"] = "f.npy"

    (issue,) = _issues(source, tmp_path, edit)
    assert issue.endswith("f.npy: depth is stored in Fortran order; save it C-ordered")
