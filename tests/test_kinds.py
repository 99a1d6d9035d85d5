"""Kind detection: each format's own markers tell it, most specific kind first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataset_devkit import kinds
from dataset_devkit.errors import ConfigError, MissingPathError
from dataset_devkit.integrity import write_manifest
from dataset_devkit.kinds import TreeKind, UnknownTreeError, detect_tree
from dataset_devkit.release import spec as release_spec
from dataset_devkit.release import unpack
from dataset_devkit.stereo import spec as stereo_spec
from dataset_devkit.vin_store import spec as vin_spec


def _touch(root: Path, *names: str) -> Path:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/"):
            path.mkdir(exist_ok=True)
        else:
            path.write_text("{}\n")
    return root


def test_the_markers_are_the_names_each_system_writes() -> None:
    assert kinds.RELEASE_MARKERS == (
        release_spec.MANIFEST_NAME,
        release_spec.FILES_NAME,
        release_spec.UNPACK_NAME,
        release_spec.SUMS_NAME,
    )
    assert kinds.UNPACK_STATE_SUFFIX == unpack.STATE_SUFFIX
    assert kinds.STEREO_MARKERS == (
        stereo_spec.INDEX_DEFAULT,
        stereo_spec.REQUIREMENTS,
        stereo_spec.RELEASE_MANIFEST,
    )
    assert kinds.VIN_MARKERS == (
        vin_spec.MANIFEST_NAME,
        vin_spec.SAMPLE_INDEX_NAME,
        vin_spec.SHARDS_DIR,
        vin_spec.SPLITS_DIR,
    )


@pytest.mark.parametrize(
    ("names", "kind"),
    [
        (("manifest.json", "files.jsonl", "unpack.py", "SHA256SUMS", "base/"), TreeKind.RELEASE),
        (("v1.0-trainval/scene.json", "mz_extensions/", "samples/"), TreeKind.NUSCENES_DATAROOT),
        (
            ("genvr_i2s.jsonl", "loader_requirements.json", "release_manifest.json"),
            TreeKind.STEREO_DATASET,
        ),
        (("manifest.json", "sample_index.jsonl", "shards/", "splits/"), TreeKind.VIN_STORE),
    ],
)
def test_each_kind_is_told_by_its_markers_even_next_to_a_content_manifest(
    tmp_path: Path, names: tuple[str, ...], kind: TreeKind
) -> None:
    root = _touch(tmp_path / "tree", *names)
    write_manifest(root)  # every published kind has one: it must not win over the markers
    assert detect_tree(root).kind is kind


def test_a_plain_tree_with_a_manifest_is_a_content_manifest_tree(tmp_path: Path) -> None:
    root = _touch(tmp_path / "tree", "a.bin", "meta/config.json")
    write_manifest(root, location="meta/content_manifest.json")
    found = detect_tree(root)
    assert found.kind is TreeKind.CONTENT_MANIFEST_TREE
    assert found.markers == ("meta/content_manifest.json",)


def test_a_restored_release_is_told_by_its_state_record_from_the_tree_or_its_parent(
    tmp_path: Path,
) -> None:
    out = tmp_path / "data"
    _touch(out / "ds", "genvr_i2s.jsonl", "loader_requirements.json", "release_manifest.json")
    state = {"name": "ds", "snapshot_root_sha256": "0" * 64, "families": ["base"]}
    (out / "ds.unpack-state.json").write_text(json.dumps(state))
    for path in (out / "ds", out):
        found = detect_tree(path)
        assert found.kind is TreeKind.RESTORED_RELEASE and found.root == out / "ds"
    # A state record naming another tree marks nothing.
    (out / "ds.unpack-state.json").write_text(json.dumps({**state, "name": "other"}))
    assert detect_tree(out / "ds").kind is TreeKind.STEREO_DATASET


def test_an_unknown_tree_says_what_it_is_not(tmp_path: Path) -> None:
    root = _touch(tmp_path / "tree", "manifest.json", "notes.txt")
    with pytest.raises(UnknownTreeError) as raised:
        detect_tree(root)
    message = str(raised.value)
    assert message.startswith(f"{root}: not a dataset-devkit tree: ")
    for kind in TreeKind:
        assert f"not a {kind.value} (needs " in message
    assert "sample_index.jsonl" in message and "files.jsonl" in message


def test_a_file_a_link_and_a_missing_path_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    with pytest.raises(ConfigError, match="expected a dataset directory, found a file"):
        detect_tree(tmp_path / "file")
    with pytest.raises(ConfigError, match="expected a dataset directory, found a symlink"):
        detect_tree(tmp_path / "link")
    with pytest.raises(MissingPathError):
        detect_tree(tmp_path / "missing")
    with pytest.raises(ConfigError):
        detect_tree("")


@pytest.mark.parametrize(
    ("names", "kind"),
    [
        (("v1.0-trainval/scene.json", "mz_extensions/"), TreeKind.NUSCENES_DATAROOT),
        (
            ("genvr_i2s.jsonl", "loader_requirements.json", "release_manifest.json"),
            TreeKind.STEREO_DATASET,
        ),
        (("manifest.json", "sample_index.jsonl", "shards/", "splits/"), TreeKind.VIN_STORE),
        (("a.bin", "content_manifest.json"), None),
    ],
)
def test_a_restored_tree_says_which_dataset_it_holds(
    tmp_path: Path, names: tuple[str, ...], kind: TreeKind | None
) -> None:
    root = _touch(tmp_path / "out" / "ds", *names)
    (tmp_path / "out" / f"ds{kinds.UNPACK_STATE_SUFFIX}").write_text(json.dumps({"name": "ds"}))
    assert detect_tree(root).kind is TreeKind.RESTORED_RELEASE
    found = kinds.detect_content(root)
    assert (found.kind if found is not None else None) is kind
    assert kinds.detect_content(tmp_path / "absent") is None
