"""Damaged stereo files found by mutation fuzzing: issues or typed errors naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.errors import FormatError
from dataset_devkit.stereo import BuildResult, StereoDataset, validate_stereo
from tests.cli_run import run_devkit
from tests.stereo.helpers import writable_copy

PAIR = "ue5-pro/map0001/scene0002/cams00"


@pytest.fixture
def root(built: BuildResult, tmp_path: Path) -> Path:
    return writable_copy(built.root, tmp_path / "copy")


def _naming(issues: list[str], rel: str) -> list[str]:
    return [issue for issue in issues if rel in issue]


def test_a_prompt_that_is_not_utf8_is_an_issue_not_a_decode_error(
    root: Path, package_env: dict[str, str]
) -> None:
    path = root / PAIR / "prompt.txt"
    path.write_bytes(b"\xff" + path.read_bytes()[1:])
    assert _naming(validate_stereo(root).issues, f"{PAIR}/prompt.txt: not UTF-8")
    result = run_devkit(package_env, "stereo", "validate", str(root))
    assert result.returncode == 1
    assert "prompt.txt" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def _set_first_pose_element(root: Path, rel: str, value: object) -> None:
    camera = json.loads((root / rel).read_bytes())
    matrix = camera["camera_to_world"]
    (matrix[0] if isinstance(matrix[0][0], list) else matrix)[0][0] = value
    (root / rel).write_text(json.dumps(camera))


@pytest.mark.parametrize("value", [{"a": 1}, "1.0", None, [1.0], True])
def test_a_camera_element_that_is_not_a_number_is_named(root: Path, value: object) -> None:
    rel = f"{PAIR}/cameras/left.json"
    _set_first_pose_element(root, rel, value)
    assert _naming(validate_stereo(root).issues, rel)
    with pytest.raises(FormatError, match=r"left\.json.*camera_to_world must be a matrix"):
        StereoDataset(root).read(1, [0])


def test_a_huge_camera_element_is_an_issue(root: Path) -> None:
    rel = f"{PAIR}/cameras/left.json"
    _set_first_pose_element(root, rel, 1e308)
    assert any("rotation" in issue for issue in _naming(validate_stereo(root).issues, rel))


def test_a_same_size_edit_of_depth_meta_is_reported_with_depth(root: Path) -> None:
    rel = f"{PAIR}/depth-zstd-5-mm/meta.json"
    raw = (root / rel).read_bytes()
    edited = raw.replace(b'"right"', b'"rigxt"', 1).replace(b"1000.0", b"9000.0", 1)
    assert len(edited) == len(raw) and edited != raw
    (root / rel).write_bytes(edited)
    issues = _naming(validate_stereo(root, with_depth=True).issues, rel)
    assert any("$.arrays" in issue for issue in issues)
    assert any("sha256" in issue for issue in issues)  # far_limit_m is only in this file


def test_a_same_size_edit_of_far_limit_alone_is_reported(root: Path) -> None:
    rel = f"{PAIR}/depth-zstd-5-mm/meta.json"
    raw = (root / rel).read_bytes()
    (root / rel).write_bytes(raw.replace(b"1000.0", b"9000.0", 1))
    assert _naming(validate_stereo(root, with_depth=True).issues, rel)


@pytest.mark.parametrize("name", ["left/.zarray", ".zgroup"])
def test_deeply_nested_zarr_metadata_is_an_issue_and_a_reader_format_error(
    root: Path, name: str
) -> None:
    rel = f"{PAIR}/depth-zstd-5-mm/group.zarr/{name}"
    (root / rel).write_bytes(b"[" * 50_000 + b"]" * 50_000)
    assert _naming(validate_stereo(root, with_depth=True).issues, rel)
    if name != ".zgroup":
        with pytest.raises(FormatError, match=r"\.zarray"):
            StereoDataset(root, use_depth=True).read(1, [0])


def test_deeply_nested_json_in_a_pair_meta_is_an_issue(root: Path) -> None:
    rel = f"{PAIR}/meta.json"
    (root / rel).write_bytes(b'{"source": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    assert _naming(validate_stereo(root).issues, rel)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_frames", 2**32),
        ("num_frames", 0),
        ("fps", -1.0),
        ("resolution", {"width": 64, "height": -48}),
    ],
)
def test_an_index_size_out_of_bounds_is_a_format_error_naming_line_and_field(
    root: Path, field: str, value: object
) -> None:
    path = root / "genvr_i2s_with_depth.jsonl"
    lines = path.read_bytes().splitlines()
    row = json.loads(lines[1])
    row[field] = value
    lines[1] = json.dumps(row).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(FormatError, match=r"genvr_i2s_with_depth\.jsonl at line 2"):
        StereoDataset(root, use_depth=True)
    assert _naming(validate_stereo(root, with_depth=True).issues, "genvr_i2s_with_depth.jsonl")


def test_a_required_row_path_that_is_no_row_field_names_the_requirements_file(
    root: Path,
) -> None:
    path = root / "loader_requirements.json"
    doc = json.loads(path.read_bytes())
    doc["required_row_paths"][0] = "le0ft_video"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"loader_requirements\.json at \$\.required_row_paths"):
        StereoDataset(root)


def test_a_failed_reader_check_names_the_file_it_read(root: Path) -> None:
    rel = f"{PAIR}/cameras/left.json"
    _set_first_pose_element(root, rel, 2.0)  # still numbers, no longer a rotation
    reader_issues = [i for i in validate_stereo(root).issues if i.startswith("reader:")]
    assert reader_issues and all(rel in issue for issue in reader_issues)


def _edit_row(root: Path, index: str, line: int, edit: object) -> None:
    path = root / index
    lines = path.read_bytes().splitlines()
    row = json.loads(lines[line])
    edit(row)  # type: ignore[operator]
    lines[line] = json.dumps(row).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_a_depth_row_without_an_eye_is_a_format_error_naming_the_line(root: Path) -> None:
    def edit(row: dict[str, Any]) -> None:
        row["depth"]["arrays"]["rigxt"] = row["depth"]["arrays"].pop("right")

    _edit_row(root, "genvr_i2s_with_depth.jsonl", 0, edit)
    with pytest.raises(FormatError, match=r"with_depth\.jsonl at line 1 \$\.depth\.arrays"):
        StereoDataset(root, use_depth=True)


def test_a_frame_beyond_the_indexed_count_names_the_index(root: Path) -> None:
    def edit(row: dict[str, Any]) -> None:
        row["num_frames"] = 2

    _edit_row(root, "genvr_i2s.jsonl", 0, edit)
    with pytest.raises(IndexError, match=r"outside 0\.\.1 \(num_frames of line 1 of genvr_i2s"):
        StereoDataset(root).read(0, [5])


def test_a_prompt_path_that_names_no_file_names_the_index(root: Path) -> None:
    for index in ("genvr_i2s.jsonl", "genvr_i2s_nodepth.jsonl"):
        _edit_row(root, index, 1, lambda row: row.update(prompt_path=f"{PAIR}/pr[ompt.txt"))
    issues = validate_stereo(root).issues
    assert (
        f"{PAIR}/pr[ompt.txt: No such file or directory (the prompt_path of genvr_i2s.jsonl)"
        in issues
    )
