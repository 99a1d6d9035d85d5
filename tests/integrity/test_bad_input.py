"""A user's mistakes with the integrity commands: messages name the full path and the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.errors import MissingPathError, UnsafePathError
from dataset_devkit.integrity import publish_tree, write_manifest
from tests.cli_run import run_devkit
from tests.integrity.helpers import make_tree


def test_publishing_a_missing_staging_names_its_full_path(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    staging = tmp_path / "stage"
    with pytest.raises(MissingPathError, match=f"^{staging}: no such directory$"):
        publish_tree(staging, tmp_path / "final")
    result = run_devkit(package_env, "publish", str(staging), "--to", str(tmp_path / "final"))
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
