"""Published trees are owner-only by default; ``readable_by`` opens them to a group or all."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import publish_tree, staged_publication
from tests.cli_run import run_devkit
from tests.integrity.helpers import make_tree


def _modes(root: Path) -> tuple[set[int], set[int]]:
    files, dirs = set(), {stat.S_IMODE(os.lstat(root).st_mode)}
    for folder, subdirs, names in os.walk(root):
        dirs |= {stat.S_IMODE(os.lstat(Path(folder) / d).st_mode) for d in subdirs}
        files |= {stat.S_IMODE(os.lstat(Path(folder) / n).st_mode) for n in names}
    return files, dirs


@pytest.mark.parametrize(
    ("readable_by", "file_mode", "dir_mode"),
    [("owner", 0o400, 0o500), ("group", 0o440, 0o550), ("all", 0o444, 0o555)],
)
def test_publish_tree_seals_every_file_and_directory_with_the_chosen_modes(
    tmp_path: Path, readable_by: str, file_mode: int, dir_mode: int
) -> None:
    staging = make_tree(tmp_path / "staging")
    publish_tree(staging, tmp_path / "final", readable_by=readable_by)  # type: ignore[arg-type]
    assert _modes(tmp_path / "final") == ({file_mode}, {dir_mode})


def test_owner_only_is_the_default(tmp_path: Path) -> None:
    with staged_publication(tmp_path / "final") as staging:
        make_tree(staging)
    assert _modes(tmp_path / "final") == ({0o400}, {0o500})


def test_an_unknown_choice_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    with (
        pytest.raises(ConfigError, match="owner, group, all"),
        staged_publication(tmp_path / "final", readable_by="world") as staging,  # type: ignore[arg-type]
    ):
        make_tree(staging)
    assert list(tmp_path.iterdir()) == []


def test_cli_publish_readable_by_group(tmp_path: Path, package_env: dict[str, str]) -> None:
    staging = make_tree(tmp_path / "staging")
    done = run_devkit(
        package_env, "publish", str(staging), "--out", str(tmp_path / "f"), "--readable-by", "group"
    )
    assert done.returncode == 0, done.stderr
    assert _modes(tmp_path / "f") == ({0o440}, {0o550})
    wrong = run_devkit(
        package_env, "publish", str(tmp_path), "--out", str(tmp_path / "g"), "--readable-by", "me"
    )
    assert wrong.returncode == 2
