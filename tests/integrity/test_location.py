"""A content manifest in a subdirectory: written, found, read and verified only where it says."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from dataset_devkit.errors import (
    ConfigError,
    DestinationExistsError,
    FormatError,
    UnsafePathError,
)
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    AmbiguousManifestError,
    ManifestNotFoundError,
    build_manifest,
    locate_manifest,
    read_manifest,
    verify_tree,
    write_manifest,
)
from tests.integrity.helpers import SAMPLE, make_tree

NESTED = "meta/content_manifest.json"


def _nested(tmp_path: Path, name: str = "t") -> Path:
    root = make_tree(tmp_path / name, {**SAMPLE, "meta/config.json": b"{}\n"})
    write_manifest(root, location=NESTED)
    return root


def test_a_nested_manifest_round_trips_through_write_read_and_verify(tmp_path: Path) -> None:
    root = _nested(tmp_path)
    assert not (root / CONTENT_MANIFEST_NAME).exists()
    written = read_manifest(root, location=NESTED)
    assert written.excluded == (NESTED,)
    assert written.location == NESTED
    assert read_manifest(root) == written  # found without being told
    report = verify_tree(root)
    assert report.ok, report.issues
    assert report.manifest_location == NESTED
    assert report.to_json()["manifest"] == NESTED
    assert report.actual_root_sha256 == written.root_sha256


def test_the_root_hash_of_a_nested_manifest_is_the_documented_formula(tmp_path: Path) -> None:
    root = _nested(tmp_path)
    document = json.loads((root / NESTED).read_text("utf-8"))
    assert document["excluded"] == [NESTED]
    files = {**SAMPLE, "meta/config.json": b"{}\n"}
    entries = [
        {"path": p, "sha256": hashlib.sha256(files[p]).hexdigest(), "size": len(files[p])}
        for p in sorted(files)
    ]
    by_hand = hashlib.sha256(
        json.dumps(entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    assert document["root_sha256"] == by_hand
    assert [e["path"] for e in document["files"]] == sorted(files)


def test_the_same_tree_has_the_same_root_hash_wherever_its_manifest_lives(
    tmp_path: Path,
) -> None:
    files = {**SAMPLE, "meta/config.json": b"{}\n"}
    top = make_tree(tmp_path / "top", files)
    nested = make_tree(tmp_path / "nested", files)
    assert write_manifest(top).root_sha256 == write_manifest(nested, location=NESTED).root_sha256


def test_a_manifest_moved_to_another_location_is_rejected_naming_excluded(
    tmp_path: Path,
) -> None:
    root = _nested(tmp_path)
    (root / "b" / CONTENT_MANIFEST_NAME).write_bytes((root / NESTED).read_bytes())
    with pytest.raises(FormatError) as caught:
        read_manifest(root, location="b/content_manifest.json")
    assert caught.value.field == "$.excluded"
    assert "expected exactly ['b/content_manifest.json']" in str(caught.value)
    assert f"found [{NESTED!r}]" in str(caught.value)
    shutil.copy(root / NESTED, root / CONTENT_MANIFEST_NAME)  # a copy at the top
    with pytest.raises(FormatError, match=r"at \$\.excluded: expected exactly"):
        read_manifest(root)  # the top wins discovery, and that file is not its manifest
    report = verify_tree(root)
    assert [(i.path, i.kind) for i in report.details] == [(CONTENT_MANIFEST_NAME, "manifest")]


def test_a_manifest_listing_its_own_location_is_rejected(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", {"a": b"1", "x/content_manifest.json": b"old"})
    listed = build_manifest(root, location=NESTED)  # lists x/content_manifest.json
    document = json.loads(listed.to_bytes())
    document["excluded"] = ["x/content_manifest.json"]
    (root / "x/content_manifest.json").write_text(json.dumps(document))
    with pytest.raises(FormatError, match="cannot list itself") as caught:
        read_manifest(root, location="x/content_manifest.json")
    assert caught.value.field == "$.files[1]"


def test_discovery_finds_the_top_manifest_first(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t")
    write_manifest(root)
    assert locate_manifest(root) == CONTENT_MANIFEST_NAME
    assert verify_tree(root).manifest_location == CONTENT_MANIFEST_NAME


def test_discovery_without_any_manifest_names_what_it_passed_over(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t")
    with pytest.raises(ManifestNotFoundError, match="no content manifest"):
        locate_manifest(root)
    (root / "b" / CONTENT_MANIFEST_NAME).write_text('{"excluded": ["elsewhere.json"]}')
    with pytest.raises(ManifestNotFoundError) as caught:
        read_manifest(root)
    assert "b/content_manifest.json (its excluded is ['elsewhere.json']" in str(caught.value)
    assert verify_tree(root).issues == ["content_manifest.json: missing: no content manifest"]


def test_a_nested_file_that_names_another_location_is_ignored_by_discovery(
    tmp_path: Path,
) -> None:
    root = _nested(tmp_path)
    # A published store copied into a subdirectory keeps its own top-level manifest, which
    # says "content_manifest.json", not "b/content_manifest.json": it is not this tree's.
    (root / "b" / CONTENT_MANIFEST_NAME).write_bytes(b'{"excluded": ["content_manifest.json"]}')
    assert locate_manifest(root) == NESTED
    report = verify_tree(root)
    assert [(i.path, i.kind) for i in report.details] == [("b/content_manifest.json", "extra")]


def test_two_nested_manifests_that_claim_their_location_are_ambiguous(tmp_path: Path) -> None:
    files = {**SAMPLE, "meta/config.json": b"{}\n", "other/x": b"x"}
    root = make_tree(tmp_path / "t", files)
    write_manifest(root, location=NESTED)
    document = json.loads((root / NESTED).read_text("utf-8"))
    document["excluded"] = ["other/content_manifest.json"]
    (root / "other/content_manifest.json").write_text(json.dumps(document))
    with pytest.raises(AmbiguousManifestError) as caught:
        read_manifest(root)
    assert "meta/content_manifest.json, other/content_manifest.json" in str(caught.value)
    (issue,) = verify_tree(root).details
    assert (issue.path, issue.kind) == (".", "manifest")
    assert read_manifest(root, location=NESTED).location == NESTED  # an explicit location
    report = verify_tree(root, location=NESTED)
    assert [(i.path, i.kind) for i in report.details] == [("other/content_manifest.json", "extra")]


def test_a_stray_manifest_copy_elsewhere_is_an_extra_file(tmp_path: Path) -> None:
    root = _nested(tmp_path)
    shutil.copy(root / NESTED, root / "b/d" / CONTENT_MANIFEST_NAME)
    report = verify_tree(root, location=NESTED)
    assert [(i.path, i.kind) for i in report.details] == [("b/d/content_manifest.json", "extra")]


def test_build_excludes_only_the_exact_location_and_lists_same_named_files(
    tmp_path: Path,
) -> None:
    root = make_tree(tmp_path / "t", {"meta/x": b"1", "content_manifest.json": b"data, not mine"})
    manifest = build_manifest(root, location=NESTED)
    assert [e.path for e in manifest.files] == ["content_manifest.json", "meta/x"]


def test_a_directory_at_the_manifest_location_is_never_skipped(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", {"meta/content_manifest.json/hidden": b"content"})
    manifest = build_manifest(root, location=NESTED)
    assert [e.path for e in manifest.files] == ["meta/content_manifest.json/hidden"]
    with pytest.raises(DestinationExistsError):
        write_manifest(root, location=NESTED)


def test_write_needs_an_existing_real_parent_and_never_replaces(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", {"a": b"1"})
    with pytest.raises(FileNotFoundError, match="meta"):
        write_manifest(root, location=NESTED)
    (tmp_path / "real").mkdir()
    (root / "meta").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePathError):
        write_manifest(root, location=NESTED)
    assert list((tmp_path / "real").iterdir()) == []
    (root / "meta").unlink()
    (root / "meta").mkdir()
    (root / NESTED).write_text("keep me")
    with pytest.raises(DestinationExistsError):
        write_manifest(root, location=NESTED)
    assert (root / NESTED).read_text() == "keep me"


@pytest.mark.parametrize(
    "location", ["", "/abs/content_manifest.json", "../content_manifest.json", "a//c"]
)
def test_unsafe_locations_are_refused(tmp_path: Path, location: str) -> None:
    root = make_tree(tmp_path / "t", {"a": b"1"})
    with pytest.raises(UnsafePathError):
        build_manifest(root, location=location)


def test_a_location_must_be_named_content_manifest_json(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", {"a/b": b"1"})
    with pytest.raises(ConfigError, match=r"must end in 'content_manifest\.json'"):
        write_manifest(root, location="a/manifest.json")
    assert sorted(p.name for p in (root / "a").iterdir()) == ["b"]


def test_verify_reports_a_missing_linked_or_unreachable_nested_manifest(tmp_path: Path) -> None:
    root = _nested(tmp_path)
    data = (root / NESTED).read_bytes()
    (root / NESTED).unlink()
    assert verify_tree(root, location=NESTED).issues == [f"{NESTED}: missing: no content manifest"]
    (tmp_path / "elsewhere.json").write_bytes(data)
    (root / NESTED).symlink_to(tmp_path / "elsewhere.json")
    assert verify_tree(root, location=NESTED).issues == [f"{NESTED}: linked: is a symlink"]
    (root / NESTED).unlink()
    (root / NESTED).write_bytes(data)
    shutil.move(root / "meta", tmp_path / "meta")
    (root / "meta").symlink_to(tmp_path / "meta")
    (issue,) = verify_tree(root, location=NESTED).details
    assert (issue.path, issue.kind) == (NESTED, "unsafe")


def test_a_deeply_nested_candidate_manifest_is_not_found_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "meta").mkdir()
    (tmp_path / NESTED).write_bytes(b'{"other": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(ManifestNotFoundError, match="not a content manifest document"):
        locate_manifest(tmp_path)
    assert verify_tree(tmp_path).issues  # reported, not raised


def test_a_deeply_nested_manifest_is_a_format_error_naming_it(tmp_path: Path) -> None:
    make_tree(tmp_path, SAMPLE)
    write_manifest(tmp_path)
    path = tmp_path / CONTENT_MANIFEST_NAME
    path.chmod(0o644)
    path.write_bytes(b'{"files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(FormatError, match=CONTENT_MANIFEST_NAME):
        read_manifest(tmp_path)
