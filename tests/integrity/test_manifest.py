"""Content manifests: exact format, determinism, strict reading."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import FormatError, VerificationFailed
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    build_manifest,
    canonical_json,
    read_manifest,
    write_manifest,
)
from tests.integrity.helpers import SAMPLE, make_tree


def test_same_content_made_differently_gives_identical_manifest_bytes(tmp_path: Path) -> None:
    first = make_tree(tmp_path / "one")
    second = make_tree(tmp_path / "two", reverse=True)
    for index, path in enumerate(sorted(second.rglob("*"))):
        if path.is_file():
            os.utime(path, ns=(index * 10**9, index * 10**9))
            path.chmod(0o600 if index % 2 else 0o644)
    write_manifest(first)
    write_manifest(second)
    assert (first / CONTENT_MANIFEST_NAME).read_bytes() == (
        second / CONTENT_MANIFEST_NAME
    ).read_bytes()


def test_manifest_lists_every_file_sorted_with_size_and_sha256(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t")
    manifest = write_manifest(root)
    document = json.loads((root / CONTENT_MANIFEST_NAME).read_text("utf-8"))
    assert document["excluded"] == [CONTENT_MANIFEST_NAME]
    assert [entry["path"] for entry in document["files"]] == sorted(SAMPLE)
    for entry in document["files"]:
        data = SAMPLE[entry["path"]]
        assert entry["size"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    entries = [
        {"path": e["path"], "sha256": e["sha256"], "size": e["size"]} for e in document["files"]
    ]
    expected_root = hashlib.sha256(
        json.dumps(entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    assert document["root_sha256"] == manifest.root_sha256 == expected_root
    text = (root / CONTENT_MANIFEST_NAME).read_text("utf-8")
    assert str(tmp_path) not in text
    assert "time" not in text


def test_write_manifest_never_replaces_an_existing_one(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t")
    (root / CONTENT_MANIFEST_NAME).write_text("keep me")
    with pytest.raises(FileExistsError):
        write_manifest(root)
    assert (root / CONTENT_MANIFEST_NAME).read_text() == "keep me"


def test_build_manifest_refuses_a_tree_with_a_symlink(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t")
    (root / "link").symlink_to("a.txt")
    with pytest.raises(VerificationFailed) as caught:
        build_manifest(root)
    assert caught.value.issues == ["link: linked: is a symlink"]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.update(extra=1), None),
        (lambda d: d.update(format_version=2), "$.format_version"),
        (lambda d: d.update(root_sha256="0" * 64), "$.root_sha256"),
        (lambda d: d.update(file_count=99), "$.file_count"),
        (lambda d: d.update(excluded=[]), "$.excluded"),
        (lambda d: d["files"].reverse(), "$.files[1].path"),
        (lambda d: d["files"][0].update(path="../escape"), "$.files[0].path"),
        (lambda d: d["files"][0].update(sha256="XYZ"), "$.files[0].sha256"),
        (lambda d: d["files"][0].update(size="12"), "$.files[0].size"),
    ],
)
def test_read_manifest_rejects_malformed_documents_naming_the_field(
    tmp_path: Path, mutate: object, field: str | None
) -> None:
    root = make_tree(tmp_path / "t", {"a": b"1", "b": b"2"})
    write_manifest(root)
    path = root / CONTENT_MANIFEST_NAME
    document = json.loads(path.read_text())
    mutate(document)  # type: ignore[operator]
    path.write_text(json.dumps(document))
    with pytest.raises(FormatError) as caught:
        read_manifest(root)
    assert str(path) in str(caught.value)
    if field is not None:
        assert caught.value.field == field


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8),
        st.binary(max_size=64),
        max_size=6,
    )
)
def test_root_hash_round_trips_through_the_file(tmp_path_factory, files) -> None:
    root = make_tree(tmp_path_factory.mktemp("h"), files)
    written = write_manifest(root)
    read = read_manifest(root)
    assert read == written
    assert (
        read.root_sha256
        == hashlib.sha256(canonical_json([e.to_json() for e in written.files])).hexdigest()
    )
