"""``verify --expect-root``: a tree edited and re-manifested is not the dataset published."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import IssueKind, verify_tree, write_manifest
from tests.cli_run import run_devkit
from tests.integrity.helpers import make_tree


def _edited_and_remanifested(tmp_path: Path) -> tuple[Path, str]:
    root = make_tree(tmp_path / "tree")
    published = write_manifest(root).root_sha256
    (root / "content_manifest.json").unlink()
    (root / "a.txt").write_bytes(b"edited\n")
    write_manifest(root)
    return root, published


def test_a_consistent_tree_with_another_root_fails_against_the_pinned_root(
    tmp_path: Path,
) -> None:
    root, published = _edited_and_remanifested(tmp_path)
    assert verify_tree(root).ok  # consistent with its own (new) manifest...
    report = verify_tree(root, expect_root=published)  # ...but not what was published
    assert not report.ok
    [issue] = report.details
    assert issue.kind is IssueKind.MANIFEST
    assert published in issue.detail
    assert report.root_sha256 is not None and report.root_sha256 in issue.detail


def test_the_pinned_root_of_the_tree_itself_verifies(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    pinned = write_manifest(root).root_sha256
    assert verify_tree(root, expect_root=pinned).ok


@pytest.mark.parametrize("bad", ["", "abc", "A" * 64, "g" * 64, "a" * 65, 12])
def test_a_pinned_root_that_is_not_64_lowercase_hex_digits_is_a_config_error(
    tmp_path: Path, bad: object
) -> None:
    root = make_tree(tmp_path / "tree")
    with pytest.raises(ConfigError, match="64 lowercase hex digits"):
        verify_tree(root, expect_root=bad)  # type: ignore[arg-type]


def test_cli_fails_on_another_root_passes_on_its_own_and_rejects_bad_hex(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    root, published = _edited_and_remanifested(tmp_path)
    other = run_devkit(package_env, "verify", str(root), "--expect-root", published)
    assert other.returncode == 1
    assert f"expected the pinned {published}" in other.stderr
    own = write_manifest(make_tree(tmp_path / "own")).root_sha256
    ok = run_devkit(package_env, "verify", str(tmp_path / "own"), "--expect-root", own)
    assert ok.returncode == 0, ok.stderr
    bad = run_devkit(package_env, "verify", str(root), "--expect-root", published.upper())
    assert bad.returncode == 2
    assert "--expect-root" in bad.stderr
