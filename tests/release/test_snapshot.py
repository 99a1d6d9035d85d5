"""The snapshot identity of a tree whose content manifest lives in a subdirectory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dataset_devkit.errors import VerificationFailed
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, verify_tree, write_manifest
from dataset_devkit.release import unpack
from tests.release.helpers import SAMPLE, make_tree, pack

NESTED = "meta/content_manifest.json"


def _nested_tree(root: Path) -> Path:
    tree = make_tree(root, {**SAMPLE, "meta/config.json": b"{}\n"})
    write_manifest(tree, location=NESTED)
    return tree


def test_a_nested_manifest_is_verified_and_its_root_and_location_recorded(
    tmp_path: Path,
) -> None:
    tree = _nested_tree(tmp_path / "ds")
    root = verify_tree(tree).root_sha256
    release = pack(tree, tmp_path / "rel")  # with the full restore test
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["snapshot"]["source"] == "content_manifest"
    assert manifest["snapshot"]["excluded"] == [NESTED]
    assert manifest["snapshot"]["root_sha256"] == root
    validation = json.loads((release / "validation.json").read_text())
    assert validation["source_check"].startswith(f"{NESTED} verified")
    unpack.unpack_release(str(release), str(tmp_path / "data"), everything=True)
    report = verify_tree(tmp_path / "data" / "ds")
    assert (report.ok, report.manifest_location, report.root_sha256) == (True, NESTED, root)


def test_a_tree_that_differs_from_its_nested_manifest_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    tree = _nested_tree(tmp_path / "ds")
    shutil.copy(tree / NESTED, tree / "other.json")
    with pytest.raises(VerificationFailed) as caught:
        pack(tree, tmp_path / "rel")
    assert caught.value.issues == [f"other.json: extra file not in {NESTED}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_a_nested_file_that_does_not_claim_the_tree_is_ordinary_content(
    tmp_path: Path,
) -> None:
    tree = make_tree(tmp_path / "ds", {**SAMPLE, "meta/content_manifest.json": b"{}"})
    release = pack(tree, tmp_path / "rel")
    snapshot = json.loads((release / "manifest.json").read_text())["snapshot"]
    assert (snapshot["source"], snapshot["excluded"]) == ("computed", [])
    rows = (release / "files.jsonl").read_text().splitlines()
    assert any(json.loads(r)["path"] == "meta/content_manifest.json" for r in rows)


def test_a_published_nuscenes_dataroot_packs_against_its_mz_extensions_manifest(
    tmp_path: Path,
) -> None:
    from dataset_devkit.nuscenes import spec
    from dataset_devkit.nuscenes.validation.dataroot import validate_dataroot
    from tests.nuscenes.dataroot_fixture import publish_fixture

    final, _ = publish_fixture(tmp_path / "out")
    root = validate_dataroot(final).root_sha256
    release = pack(final, tmp_path / "rel", package_limit=1 << 20)
    snapshot = json.loads((release / "manifest.json").read_text())["snapshot"]
    assert snapshot["source"] == "content_manifest"
    assert snapshot["excluded"] == [spec.CONTENT_MANIFEST_PATH]
    assert snapshot["root_sha256"] == root
    unpack.unpack_release(str(release), str(tmp_path / "data"), everything=True)
    restored = tmp_path / "data" / spec.VERSION
    assert not (restored / CONTENT_MANIFEST_NAME).exists()
    assert verify_tree(restored).manifest_location == spec.CONTENT_MANIFEST_PATH
    report = validate_dataroot(restored)
    assert report.ok, report.issues
    assert report.root_sha256 == root
