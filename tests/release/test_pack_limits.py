"""Pack refuses, when it scans the tree, paths no system could restore; modes of the folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dataset_devkit.release import PackOptions, UnsafeTreeError, pack_release
from dataset_devkit.release.scan import NAME_MAX, PATH_MAX, length_problem
from tests.release.helpers import make_tree


def _deep_tree(root: Path, levels: int, width: int) -> str:
    """A file *levels* directories deep with *width*-byte names, made relative to dir fds
    (the whole path is longer than a path string the kernel accepts)."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    parts = []
    try:
        for level in range(levels):
            name = f"{level:02d}" + "d" * (width - 2)
            os.mkdir(name, dir_fd=fd)
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
            parts.append(name)
        leaf = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"deep\n")
        os.close(leaf)
    finally:
        os.close(fd)
    return "/".join([*parts, "leaf.txt"])


def test_a_path_longer_than_path_max_is_refused_at_scan_naming_it(tmp_path: Path) -> None:
    rel = _deep_tree(tmp_path / "ds", levels=17, width=250)
    assert len(rel) > PATH_MAX
    with pytest.raises(UnsafeTreeError) as caught:
        pack_release(tmp_path / "ds", tmp_path / "release")
    assert f"{rel}: path is {len('ds/' + rel)} bytes; restorable paths have at most 4095" in str(
        caught.value
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_a_path_just_under_the_limits_packs(tmp_path: Path) -> None:
    rel = _deep_tree(tmp_path / "ds", levels=15, width=250)
    assert len("ds/" + rel) <= PATH_MAX
    result = pack_release(tmp_path / "ds", tmp_path / "release")
    assert result.manifest.snapshot.file_count == 1


def test_a_root_name_longer_than_name_max_is_refused_naming_every_file(tmp_path: Path) -> None:
    make_tree(tmp_path / "ds", {"a.txt": b"a\n", "b/c.txt": b"c\n"})
    name = "é" * 128  # 128 characters, 256 bytes in UTF-8
    with pytest.raises(UnsafeTreeError, match="is 256 bytes; names have at most 255") as caught:
        pack_release(tmp_path / "ds", tmp_path / "release", PackOptions(name=name))
    assert "a.txt: component" in str(caught.value)
    assert "b/c.txt: component" in str(caught.value)


def test_length_problem_counts_utf8_bytes_per_component_and_in_all() -> None:
    assert length_problem("ds/" + "é" * 127 + "x") == ""
    assert "256 bytes" in length_problem("ds/" + "é" * 128)
    assert length_problem("/".join(["x" * NAME_MAX] * 15)) == ""  # 3,839 bytes
    assert "4096 bytes" in length_problem("a/" + "b" * 4094)


@pytest.mark.parametrize(("readable_by", "mode"), [("owner", 0o700), ("all", 0o755)])
def test_the_release_folder_is_readable_by_whom_it_was_asked(
    tmp_path: Path, readable_by: str, mode: int
) -> None:
    make_tree(tmp_path / "ds", {"a.txt": b"a\n"})
    options = PackOptions(readable_by=readable_by, restore_test="none")  # type: ignore[arg-type]
    pack_release(tmp_path / "ds", tmp_path / "release", options)
    assert stat.S_IMODE(os.lstat(tmp_path / "release").st_mode) == mode
