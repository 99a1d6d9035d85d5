"""A user's mistakes with the integrity commands: messages name the full path and the option."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.errors import ConfigError, MissingPathError, UnsafePathError
from dataset_devkit.integrity import (
    build_manifest,
    publish_tree,
    read_manifest,
    verify_tree,
    write_manifest,
)
from tests.cli_run import run_devkit
from tests.integrity.helpers import make_tree


def test_publishing_a_missing_staging_names_its_full_path(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    staging = tmp_path / "stage"
    with pytest.raises(MissingPathError, match=f"^{staging}: no such directory$"):
        publish_tree(staging, tmp_path / "final")
    result = run_devkit(package_env, "publish", str(staging), "--out", str(tmp_path / "final"))
    assert result.returncode == 1
    assert result.stderr == f"error: {staging}: no such directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_publishing_a_file_as_staging_names_its_full_path(tmp_path: Path) -> None:
    staging = tmp_path / "stage"
    staging.write_text("x")
    with pytest.raises(UnsafePathError, match=f"^{staging}: expected a real directory, found a"):
        publish_tree(staging, tmp_path / "final")
    assert staging.read_text() == "x"


@pytest.mark.parametrize("location", ["../content_manifest.json", "/abs/content_manifest.json"])
def test_an_unsafe_manifest_location_is_named_as_the_manifest_location(
    tmp_path: Path, location: str
) -> None:
    root = make_tree(tmp_path / "t")
    with pytest.raises(UnsafePathError, match=r"^manifest location: not a safe relative POSIX"):
        write_manifest(root, location=location)
    assert not (root / "content_manifest.json").exists()


@pytest.mark.parametrize("root", [None, "", 3])
def test_a_root_that_is_not_a_non_empty_path_is_refused_not_read_as_the_working_dir(
    root: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(tmp_path / "t")
    monkeypatch.chdir(tmp_path)  # Path("") would have meant this directory
    for call in (build_manifest, verify_tree, read_manifest, write_manifest):
        with pytest.raises(ConfigError, match="root must be a non-empty str or Path"):
            call(root)
    with pytest.raises(ConfigError, match="staging must be a non-empty str or Path"):
        publish_tree(root, tmp_path / "final")
    assert not (tmp_path / "content_manifest.json").exists()


def test_a_symlinked_root_names_its_target_so_the_user_can_pass_that(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    root = make_tree(tmp_path / "t")
    write_manifest(root)
    (tmp_path / "link").symlink_to(root)
    result = run_devkit(package_env, "verify", str(tmp_path / "link"))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {tmp_path / 'link'}: expected a real directory, found a symlink to "
        f"'{root}' (links are not followed)\n"
    )
