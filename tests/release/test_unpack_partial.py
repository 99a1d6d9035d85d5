"""A partial restore (base without depth) is a state ``dataset-devkit verify`` understands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dataset_devkit.cli.release import verify_partial_restore
from dataset_devkit.errors import VerificationFailed
from dataset_devkit.integrity import write_manifest
from dataset_devkit.release import unpack
from tests.cli_run import run_devkit
from tests.release.helpers import SAMPLE, make_tree, pack

DEPTH = "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/"
DEPTH_FILES = sum(1 for p in SAMPLE if p.startswith(DEPTH))


@pytest.fixture
def base_only(tmp_path: Path) -> tuple[Path, Path]:
    tree = make_tree(tmp_path / "ds")
    write_manifest(tree)
    release = pack(tree, tmp_path / "rel", restore_test="none")
    out = tmp_path / "out"
    unpack.unpack_release(str(release), str(out), ["base"])
    return release, out / "ds"


def test_verify_of_a_base_only_restore_checks_base_and_names_depth_once(
    base_only: tuple[Path, Path], package_env: dict[str, str]
) -> None:
    _release, tree = base_only
    done = run_devkit(package_env, "verify", str(tree))
    assert done.returncode == 0, done.stderr
    assert "families base of release ds verified" in done.stdout
    assert f"not restored: depth ({DEPTH_FILES} files)" in done.stdout
    assert "missing" not in done.stdout + done.stderr
    report = json.loads(run_devkit(package_env, "verify", str(tree), "--json").stdout)
    assert report["ok"] is True
    assert report["families_absent"] == {"depth": DEPTH_FILES}
    assert report["file_count"] == len(SAMPLE) - DEPTH_FILES + 1  # + content_manifest.json


def test_a_damaged_or_missing_file_of_a_present_family_still_fails(
    base_only: tuple[Path, Path], package_env: dict[str, str]
) -> None:
    _release, tree = base_only
    (tree / "README.md").write_bytes(b"# changed\n")
    (tree / "genvr_i2s.jsonl").unlink()
    done = run_devkit(package_env, "verify", str(tree))
    assert done.returncode == 1
    assert "README.md: 10 bytes" in done.stderr
    assert "genvr_i2s.jsonl: missing (family base was restored)" in done.stderr


def test_a_half_restored_family_is_named_with_the_command_that_finishes_it(
    base_only: tuple[Path, Path], package_env: dict[str, str]
) -> None:
    _release, tree = base_only
    stray = tree / DEPTH / "meta.json"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(SAMPLE[DEPTH + "meta.json"])
    done = run_devkit(package_env, "verify", str(tree))
    assert done.returncode == 1
    assert f"family depth: 1 of {DEPTH_FILES} files present" in done.stderr
    assert "--family depth --output" in done.stderr


def test_once_every_family_is_restored_verify_uses_the_content_manifest_again(
    base_only: tuple[Path, Path], package_env: dict[str, str]
) -> None:
    release, tree = base_only
    unpack.unpack_release(str(release), str(tree.parent), ["depth"])
    done = run_devkit(package_env, "verify", str(tree))
    assert done.returncode == 0, done.stderr
    assert "match content_manifest.json" in done.stdout


def test_a_tampered_recorded_index_is_refused(
    base_only: tuple[Path, Path], package_env: dict[str, str]
) -> None:
    _release, tree = base_only
    index = tree.parent / "ds.unpack-index.jsonl"
    os.chmod(index, 0o644)
    index.write_bytes(index.read_bytes().replace(b'"base"', b'"depth"', 1))
    done = run_devkit(package_env, "verify", str(tree))
    assert done.returncode == 1
    assert "ds.unpack-index.jsonl: does not match" in done.stderr


def test_a_partial_restore_is_held_to_a_pinned_root(base_only: tuple[Path, Path]) -> None:
    release, tree = base_only
    root = unpack.load_release(str(release)).snapshot_root
    with pytest.raises(VerificationFailed, match="not the expected 0000"):
        verify_partial_restore(tree, as_json=False, expect_root="0" * 64)
    assert verify_partial_restore(tree, as_json=False, expect_root=root.upper()) is True


@pytest.mark.parametrize("damage", ["none", "changed", "half a family"])
def test_validate_gives_the_verdict_verify_gives(
    base_only: tuple[Path, Path], package_env: dict[str, str], damage: str
) -> None:
    """A base-only restore is one state with one verdict, whichever command is asked."""
    _release, tree = base_only
    if damage == "changed":
        (tree / "README.md").write_bytes(b"# changed\n")
    elif damage == "half a family":
        stray = tree / DEPTH / "meta.json"
        stray.parent.mkdir(parents=True)
        stray.write_bytes(SAMPLE[DEPTH + "meta.json"])
    verified = run_devkit(package_env, "verify", str(tree))
    validated = run_devkit(package_env, "validate", str(tree))
    assert (validated.returncode, validated.stdout, validated.stderr) == (
        verified.returncode,
        verified.stdout,
        verified.stderr,
    )
    assert verified.returncode == (0 if damage == "none" else 1)
    if damage == "none":
        assert f"not restored: depth ({DEPTH_FILES} files)" in validated.stdout
        report = json.loads(run_devkit(package_env, "validate", str(tree), "--json").stdout)
        assert report["ok"] is True and report["kind"] == "restored-release"
        assert report["families"] == ["base"]
        assert report["families_absent"] == {"depth": DEPTH_FILES}
        # the folder holding the restored tree means that tree, as validate says elsewhere
        parent = run_devkit(package_env, "validate", str(tree.parent))
        assert parent.returncode == 0 and "not restored: depth" in parent.stdout
