"""croissant_document / write_croissant: deterministic bytes, never a byte of the tree."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from dataset_devkit.croissant import CroissantOptions, croissant_document, write_croissant
from dataset_devkit.croissant._tree import FileFacts, TreeFiles
from dataset_devkit.errors import ConfigError, DestinationExistsError, FormatError
from dataset_devkit.integrity import scan_tree
from dataset_devkit.kinds import UnknownTreeError


def _state(tree: Path) -> dict[str, tuple[int, str, int]]:
    """Every file's size, digest and mode: what must not change when a tree is described."""
    modes = {p.relative_to(tree).as_posix(): p.lstat().st_mode for p in tree.rglob("*")}
    return {path: (*facts, modes[path]) for path, facts in scan_tree(tree).files.items()}


def test_the_same_tree_and_options_give_the_same_bytes_wherever_it_lies(
    demo_trees: dict[str, Path], tmp_path: Path
) -> None:
    tree = demo_trees["stereo-dataset"]
    options = CroissantOptions(license="https://spdx.org/licenses/CC-BY-4.0.html")
    first = croissant_document(tree, options).to_bytes()
    assert croissant_document(tree, options).to_bytes() == first
    moved = tmp_path / "elsewhere" / tree.name
    shutil.copytree(tree, moved)
    assert croissant_document(moved, options).to_bytes() == first
    text = first.decode()
    assert str(tree.parent) not in text and "1970-01-01" not in text  # no paths, no dates
    assert first == (json.dumps(json.loads(first), indent=2, sort_keys=True) + "\n").encode()


def test_write_croissant_writes_beside_the_tree_and_changes_nothing_in_it(
    demo_trees: dict[str, Path], tmp_path: Path
) -> None:
    tree = demo_trees["vin-store"]
    before = _state(tree)
    out = tmp_path / "meta" / "croissant.json"
    described = write_croissant(tree, out)
    assert out.read_bytes() == described.to_bytes()
    assert (
        described.root_sha256
        == json.loads((tree / "content_manifest.json").read_bytes())["root_sha256"]
    )
    again = write_croissant(tree, out)  # a re-run finds its own bytes there
    assert again.to_bytes() == out.read_bytes()
    assert _state(tree) == before
    assert [p.name for p in out.parent.iterdir()] == ["croissant.json"]  # no partial left


def test_a_file_inside_the_tree_is_refused_before_anything_is_written(
    demo_trees: dict[str, Path],
) -> None:
    tree = demo_trees["content-manifest-tree"]
    before = _state(tree)
    for out in (tree / "croissant.json", tree / "data" / "x.json", tree / ".." / tree.name / "c"):
        with pytest.raises(ConfigError, match="inside the tree"):
            write_croissant(tree, out)
    assert _state(tree) == before


def test_an_existing_file_with_other_bytes_is_never_replaced(
    demo_trees: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "croissant.json"
    out.write_bytes(b"{}\n")
    os.chmod(out, 0o640)
    with pytest.raises(DestinationExistsError, match="exists with other content"):
        write_croissant(demo_trees["vin-store"], out)
    assert out.read_bytes() == b"{}\n" and (out.stat().st_mode & 0o777) == 0o640


def test_options_are_written_only_when_given_and_base_url_prefixes_every_content_url(
    demo_trees: dict[str, Path],
) -> None:
    tree = demo_trees["nuscenes-dataroot"]
    bare = croissant_document(tree)
    assert bare.missing == ("license", "url", "creator", "datePublished")
    assert not {"license", "url", "creator", "datePublished", "version"} & set(bare.document)
    base = "https://data.example.org/v1.0-trainval/"
    given = croissant_document(
        tree, CroissantOptions(name="Drives", creators=("Lab A", "Lab B"), base_url=base)
    ).document
    assert given["name"] == "Drives"
    assert [c["name"] for c in given["creator"]] == ["Lab A", "Lab B"]
    urls = [n["contentUrl"] for n in given["distribution"] if n["@type"] == "cr:FileObject"]
    assert urls and all(url.startswith(base) for url in urls)


def test_a_restored_tree_is_described_as_what_it_holds(demo_trees: dict[str, Path]) -> None:
    restored = croissant_document(demo_trees["restored-release"])
    published = croissant_document(demo_trees["release"])
    assert restored.kind.value == "content-manifest-tree"
    assert restored.root_sha256 == published.root_sha256  # the tree the packages restore


def test_a_directory_of_no_known_kind_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(UnknownTreeError, match="not a dataset-devkit tree"):
        croissant_document(tmp_path)


def test_an_unpublished_dataroot_without_a_content_manifest_is_refused(
    demo_trees: dict[str, Path], tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    shutil.copytree(demo_trees["nuscenes-dataroot"], staging)
    (staging / "mz_extensions" / "content_manifest.json").unlink()
    with pytest.raises(FormatError, match="no content manifest"):
        croissant_document(staging)


def test_a_file_the_records_do_not_list_is_an_error_naming_the_record(tmp_path: Path) -> None:
    files = TreeFiles.from_facts(tmp_path, [FileFacts("a.json", 2, "0" * 64)], "SHA256SUMS")
    assert files.get("a.json").size == 2
    with pytest.raises(FormatError, match=r"'b\.json' is not listed in SHA256SUMS"):
        files.get("b.json")


def test_a_release_whose_metadata_does_not_verify_is_refused(
    demo_trees: dict[str, Path], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    shutil.copytree(demo_trees["release"], release)
    rows = release / "files.jsonl"
    rows.chmod(0o600)
    rows.write_bytes(rows.read_bytes().replace(b'"size":17', b'"size":18', 1))
    with pytest.raises(FormatError, match="not a release that verifies"):
        croissant_document(release)
