"""Validation reports every problem of a damaged root, and the reader check says what it read."""

from __future__ import annotations

import json

import msgspec

from dataset_devkit.stereo import reader_validation, validate_stereo
from dataset_devkit.stereo.spec import ReaderValidation
from tests.stereo.helpers import remove_depth, writable_copy

PAIR = "ue5-pro/map0001/scene0002/cams00"


def test_a_fresh_build_validates_with_depth_and_in_full(built):
    report = validate_stereo(built.root, with_depth=True, full=True)
    assert report.issues == [] and report.pairs == 3
    assert report.reader is not None and report.reader.scope == "full"


def test_the_build_records_its_reader_check_in_reader_validation_json(built):
    record = msgspec.json.decode(
        (built.root / "reader_validation.json").read_bytes(), type=ReaderValidation
    )
    assert record.passed and record.use_depth and record.scope == "sample"
    assert record.pairs_read == [
        "ue5-pro/map0001/scene0001/cams00",
        PAIR,
        "ue5-pro/map0002/scene0003/cams00",
    ]
    assert {r.what for r in record.reads} == {
        "left video",
        "right video",
        "left depth",
        "right depth",
    }
    assert all(r.frames == [0, 6, 12] for r in record.reads)
    assert "no training run was performed" in record.not_checked


def test_sample_scope_reads_first_middle_and_last_pairs_only(built, tmp_path):
    record = reader_validation(built.root, use_depth=False, full=False)
    assert record.pairs_not_read == 0 and len(record.reads) == 6
    assert "depth was not read (use_depth=false)" in record.not_checked


def test_every_problem_of_a_damaged_root_is_reported(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "damaged")
    pair = root / PAIR
    (pair / "depth-zstd-5-mm/group.zarr/left/2.0.0").unlink()
    camera = json.loads((pair / "cameras/right.json").read_text())
    camera["world_to_camera"][3][0][3] += 0.5
    (pair / "cameras/right.json").write_text(json.dumps(camera))
    (pair / "prompt.txt").write_text("a human caption\n")
    lines = (root / "genvr_i2s_with_depth.jsonl").read_text().splitlines()
    (root / "genvr_i2s_with_depth.jsonl").write_text("\n".join(lines[:2]) + "\n")
    req = json.loads((root / "loader_requirements.json").read_text())
    req["is_v2v"] = True
    (root / "loader_requirements.json").write_text(json.dumps(req))
    (root / "ue5-pro/map0001/scene0001/cams00/videos/left.mp4").write_bytes(b"broken")

    issues = validate_stereo(root, with_depth=True).issues
    text = "\n".join(issues)
    assert f"{PAIR}/depth-zstd-5-mm/group.zarr/left/2.0.0: chunk file missing" in text
    assert f"{PAIR}/cameras/right.json: frame 3: world_to_camera is not the inverse" in text
    assert f"{PAIR}/prompt.txt: differs from the index caption" in text
    assert "genvr_i2s_with_depth.jsonl: does not list the same samples" in text
    assert "default loader requirements: (use_depth, use_camera" in text
    assert "cams00/videos/left.mp4" in text and "cannot be opened as a video" in text
    assert "videos/left.mp4: 6 bytes, manifest says" in text
    assert issues == sorted(issues) and len(issues) >= 7


def test_a_base_only_root_validates_without_depth_and_fails_with_it(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "base")
    remove_depth(root)
    assert validate_stereo(root).issues == []
    issues = validate_stereo(root, with_depth=True).issues
    assert any("depth is not installed" in issue for issue in issues)
