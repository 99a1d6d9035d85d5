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
        "left camera",
        "right camera",
        "left depth",
        "right depth",
        "prompt",
    }
    assert len(record.reads) == 3 * 7 and record.pairs_not_read == []
    assert all(r.frames == [0, 6, 12] for r in record.reads)
    hashed = {r.what for r in record.reads if r.sha256 is not None}
    assert hashed == {"left camera", "right camera", "left depth", "right depth", "prompt"}
    assert "no training run was performed" in record.not_checked
    assert not any("were not decoded" in line for line in record.not_checked)  # they were
    assert any(
        "video frames were checked for shape and dtype only" in line for line in record.not_checked
    )


def test_the_recorded_depth_hash_is_the_hash_of_what_the_reader_returns(built):
    import hashlib

    from dataset_devkit.stereo import StereoDataset

    record = msgspec.json.decode(
        (built.root / "reader_validation.json").read_bytes(), type=ReaderValidation
    )
    (read,) = [r for r in record.reads if r.id == PAIR and r.what == "right depth"]
    depth = StereoDataset(built.root, use_depth=True).read(1, read.frames).depth
    assert depth is not None
    assert hashlib.sha256(depth["right"].tobytes()).hexdigest() == read.sha256


def test_sample_scope_names_the_pairs_it_did_not_read(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "four")
    rows = (root / "genvr_i2s.jsonl").read_text().splitlines()
    ids = [json.loads(row)["id"] for row in rows]
    record = reader_validation(root, use_depth=False, full=False)
    assert record.pairs_not_read == []
    for name in ("genvr_i2s.jsonl", "genvr_i2s_nodepth.jsonl"):
        (root / name).write_text("\n".join([rows[0], rows[1], rows[2], rows[1]]) + "\n")
    req = json.loads((root / "loader_requirements.json").read_text())
    req["num_samples"] = 4
    (root / "loader_requirements.json").write_text(json.dumps(req))
    record = reader_validation(root, use_depth=False, full=False)
    assert record.pairs_read == [ids[0], PAIR, PAIR]  # samples 0, 1 and 3 (the last)
    assert record.pairs_not_read == [ids[2]]


def test_validate_reports_a_camera_that_reads_differently_from_the_build_record(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "refocused")
    path = root / PAIR / "cameras/left.json"
    camera = json.loads(path.read_text())
    camera["K"][0][0] *= 1.5  # still a valid pinhole K: only the recorded hash can tell
    path.write_text(json.dumps(camera))
    issues = validate_stereo(root).issues
    assert any(
        f"reader_validation.json: {PAIR} left camera frames [0, 6, 12] now read as" in issue
        for issue in issues
    )
    (root / "reader_validation.json").unlink()
    assert any("reader_validation.json: " in i for i in validate_stereo(root).issues)


def test_sample_scope_reads_first_middle_and_last_pairs_only(built, tmp_path):
    record = reader_validation(built.root, use_depth=False, full=False)
    assert record.pairs_not_read == [] and len(record.reads) == 3 * 5
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
    assert "loader_requirements.json: default loader requirements (use_depth, use_camera" in text
    assert "cams00/videos/left.mp4" in text and "cannot be opened as a video" in text
    assert "videos/left.mp4: 6 bytes, manifest says" in text
    assert issues == sorted(issues) and len(issues) >= 7


def test_a_base_only_root_validates_without_depth_and_fails_with_it(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "base")
    remove_depth(root)
    assert validate_stereo(root).issues == []
    issues = validate_stereo(root, with_depth=True).issues
    assert any("depth is not installed" in issue for issue in issues)


def test_a_corrupt_depth_chunk_is_reported_as_an_issue_not_raised(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "corrupt")
    pair = root / "ue5-pro/map0001/scene0001/cams00"
    (pair / "depth-zstd-5-mm/group.zarr/right/0.0.0").write_bytes(b"garbage" * 8)
    issues = validate_stereo(root, with_depth=True).issues
    assert any(
        "right/0.0.0: depth chunk of frames 0..3 is not a valid Blosc block" in issue
        for issue in issues
    )


def test_validate_reports_an_fps_mismatch_and_an_improper_camera_rotation(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "skewed")
    pair = root / PAIR
    meta = json.loads((pair / "meta.json").read_text())
    meta["fps"] = 30.0
    (pair / "meta.json").write_text(json.dumps(meta))
    camera = json.loads((pair / "cameras/left.json").read_text())
    for c2w, w2c in zip(camera["camera_to_world"], camera["world_to_camera"], strict=True):
        for row in range(3):  # mirror the x axis: still an exact inverse pair, det -1
            c2w[row][0] = -c2w[row][0]
        for col in range(4):
            w2c[0][col] = -w2c[0][col]
    (pair / "cameras/left.json").write_text(json.dumps(camera))
    issues = validate_stereo(root).issues
    assert f"{PAIR}/videos/left.mp4: 24.0 fps, meta says 30.0" in issues
    assert any(
        f"{PAIR}/cameras/left.json: frame 0: camera_to_world not a proper rotation: det = -1"
        in issue
        for issue in issues
    )
    assert not any("not the inverse" in issue for issue in issues)


def test_validate_checks_the_source_records_and_manifest_paths(built, tmp_path):
    root = writable_copy(built.root, tmp_path / "records")
    lines = (root / "source_mapping.jsonl").read_text().splitlines()
    (root / "source_mapping.jsonl").write_text("\n".join(lines[:2]) + "\n")
    (root / "source_dataset_release_manifest.json").write_text("{}")
    manifest = json.loads((root / "release_manifest.json").read_text())
    manifest["files"][0]["path"] = "../../etc/passwd"
    (root / "release_manifest.json").write_text(json.dumps(manifest))
    issues = validate_stereo(root).issues
    assert "source_mapping.jsonl: does not map the samples of genvr_i2s.jsonl" in issues
    assert any(i.startswith("source_dataset_release_manifest.json: ") for i in issues)
    assert "release_manifest.json: '../../etc/passwd' is not a path inside the root" in issues
