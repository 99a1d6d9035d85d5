"""ROS 2 bag folders (metadata.yaml + split .mcap files) read as one recording."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.evidence import open_recording
from dataset_devkit.nuscenes.ingest import read_mcap
from dataset_devkit.nuscenes.ingest.fingerprint import recording_digest
from tests.nuscenes.helpers import DRIVE, write_ros2_split


@pytest.fixture(scope="module")
def split_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ros2_split(tmp_path_factory.mktemp("bags") / "drive-split", DRIVE, splits=3)


def test_a_split_bag_folder_reads_as_one_recording_with_every_split_in_order(
    split_bag: Path, recordings: dict[str, Path]
) -> None:
    whole = read_mcap(recordings["ros2"])  # the same drive as a single-file bag
    source = open_recording(split_bag)
    assert len(list(split_bag.glob("*.mcap"))) == 3
    assert source.recording_id == "drive-split" and source.source_name == "drive-split"
    assert not source.truncated
    assert [(c.source_name, c.timestamps_ns) for c in source.cameras] == [
        (c.source_name, c.timestamps_ns) for c in whole.cameras
    ]
    assert source.translations == whole.translations and source.rotations == whole.rotations
    assert source.source_digest == recording_digest(split_bag)
    wanted = {c.source_name: frozenset(c.timestamps_ns) for c in source.cameras}
    assert sorted(source.extract_frames(wanted)) == sorted(whole.extract_frames(wanted))


def test_the_split_order_of_metadata_yaml_is_the_recording_order(
    split_bag: Path, tmp_path: Path
) -> None:
    swapped = tmp_path / "swapped"
    shutil.copytree(split_bag, swapped)
    meta = swapped / "metadata.yaml"
    text = meta.read_text()
    meta.write_text(
        text.replace("drive-split_0.mcap", "X")
        .replace("drive-split_2.mcap", "drive-split_0.mcap")
        .replace("X", "drive-split_2.mcap")
    )
    assert open_recording(swapped).source_digest != open_recording(split_bag).source_digest


def test_a_split_cut_by_a_crash_keeps_everything_before_the_cut(
    split_bag: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "cut"
    shutil.copytree(split_bag, cut)
    last = cut / "drive-split_2.mcap"
    data = last.read_bytes()
    last.write_bytes(data[: int(len(data) * 0.6)])
    whole = open_recording(split_bag)
    source = open_recording(cut)
    assert source.truncated
    assert source.observations.truncation_detail.startswith("drive-split_2.mcap: ")
    for kept, full in zip(source.cameras, whole.cameras, strict=True):
        assert len(full.timestamps_ns) * 2 // 3 <= len(kept.timestamps_ns) < len(full.timestamps_ns)
        assert kept.timestamps_ns == full.timestamps_ns[: len(kept.timestamps_ns)]


def test_a_folder_that_is_neither_kind_of_recording_says_what_was_expected(
    tmp_path: Path,
) -> None:
    (tmp_path / "drive").mkdir()
    (tmp_path / "drive" / "drive.mcap").write_bytes(b"")
    with pytest.raises(FormatError, match=r"metadata\.yaml \(a ROS 2 bag\) or recording\.json"):
        open_recording(tmp_path / "drive")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(FormatError, match="ROS 2 bag folder"):
        open_recording(tmp_path / "notes.txt")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace("storage_identifier: mcap", "storage_identifier: leveldb"),
            "storage_identifier is 'leveldb'; expected one of mcap, sqlite3",
        ),
        (
            lambda t: t.replace("storage_identifier: mcap", "storage_identifier: sqlite3"),
            r"relative_file_paths\[0\]: expected the name of a .db3 split file \(sqlite3",
        ),
        (
            lambda t: t.replace("- drive-split_1.mcap", "- ../elsewhere.bin"),
            r"relative_file_paths\[1\]: expected the name of an .mcap split file",
        ),
        (
            lambda t: t.replace("- drive-split_1.mcap", "- missing.mcap"),
            r"relative_file_paths\[1\]: split 'missing.mcap' is not in the bag folder",
        ),
        (lambda _t: "just: [a, list", "not valid YAML"),
        (lambda _t: "other: 1\n", "expected a rosbag2 metadata file"),
    ],
)
def test_a_bad_metadata_yaml_names_the_file_and_field(
    split_bag: Path, tmp_path: Path, edit: object, message: str
) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(split_bag, bad)
    meta = bad / "metadata.yaml"
    meta.write_text(edit(meta.read_text()))  # type: ignore[operator]
    with pytest.raises(FormatError, match=message):
        open_recording(bad)
