"""Verifying a dataset in place: the same issues and report as a local verify."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import obstore
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import IssueKind, read_manifest, write_manifest
from dataset_devkit.integrity.bucket import publish_remote, verify_remote
from dataset_devkit.integrity.bucket.objects import RemoteObject
from dataset_devkit.integrity.bucket.reads import hash_objects
from dataset_devkit.objectstore import open_location
from tests.integrity.bucket.conftest import FAST, PART, run_cli_batch
from tests.integrity.helpers import make_tree


@pytest.fixture
def published(tree: Path, bucket_url: str) -> str:
    """The tree published on each backend in turn."""
    url = f"{bucket_url}/ds"
    publish_remote(tree, url, part_size=PART, retry=FAST)
    return url


def test_every_difference_is_reported_like_on_disk(published: str) -> None:
    store = open_location(published).store
    obstore.put(store, "a.txt", b"ALPHA\n")  # same size, other bytes
    obstore.put(store, "b/d/e.json", b"{}")  # other size
    obstore.delete(store, "b/c.bin")
    obstore.put(store, "stray.bin", b"1234")
    report = verify_remote(published, retry=FAST, range_size=PART)
    assert [(i.path, i.kind) for i in report.details] == [
        ("a.txt", IssueKind.CHANGED),
        ("b/c.bin", IssueKind.MISSING),
        ("b/d/e.json", IssueKind.CHANGED),
        ("stray.bin", IssueKind.EXTRA),
    ]
    assert "sha256" in report.details[0].detail and "size 2" in report.details[2].detail
    assert report.root_sha256 is not None and report.actual_root_sha256 != report.root_sha256


def test_cli_verify_url_json_has_the_local_schema(
    published: str, tree: Path, package_env: dict[str, str]
) -> None:
    tampered = published + "-tampered"
    publish_remote(tree, tampered, retry=FAST)
    obstore.put(open_location(tampered).store, "a.txt", b"ALPHA\n")
    runs = run_cli_batch(
        {**package_env, **os.environ},
        ["verify", published, "--json"],
        ["verify", str(tree), "--json"],
        ["verify", tampered, "--json"],
        ["verify", tampered],
    )
    (code, good, err), (_, local, _), (bad_code, bad, _), (text_code, _, text) = runs
    assert code == 0, err
    ours, theirs = json.loads(good), json.loads(local)
    assert set(ours) == set(theirs)
    assert ours["root"] == published and ours["root_sha256"] == theirs["root_sha256"]
    report = json.loads(bad)
    assert bad_code == 1 and report["ok"] is False
    assert report["issues"] == [
        {"path": "a.txt", "kind": "changed", "detail": report["issues"][0]["detail"]}
    ]
    assert text_code == 1 and "a.txt: changed: sha256" in text
    assert "Traceback" not in text


def test_expect_root_pins_the_published_dataset(published: str, tree: Path) -> None:
    root = read_manifest(tree).root_sha256
    assert verify_remote(published, expect_root=root, retry=FAST).ok
    other = verify_remote(published, expect_root="0" * 64, retry=FAST)
    assert [(i.path, i.kind) for i in other.details] == [
        ("content_manifest.json", IssueKind.MANIFEST)
    ]
    with pytest.raises(ConfigError):
        verify_remote(published, expect_root="nothex")


def test_a_prefix_without_its_manifest_is_not_a_dataset(published: str) -> None:
    store = open_location(published).store
    obstore.delete(store, "content_manifest.json")
    report = verify_remote(published, retry=FAST)
    assert [(i.path, i.kind) for i in report.details] == [
        ("content_manifest.json", IssueKind.MISSING)
    ]
    assert "not a dataset" in report.details[0].detail
    obstore.put(store, "content_manifest.json.publishing", b"{}")
    hinted = verify_remote(published, retry=FAST)
    assert "unfinished publish" in hinted.details[0].detail


def test_a_broken_manifest_is_one_issue_naming_the_field(published: str) -> None:
    store = open_location(published).store
    raw = json.loads(bytes(obstore.get(store, "content_manifest.json").bytes()))
    raw["file_count"] += 1
    obstore.put(store, "content_manifest.json", json.dumps(raw).encode())
    report = verify_remote(published, retry=FAST)
    assert [(i.kind, "$.file_count" in i.detail) for i in report.details] == [
        (IssueKind.MANIFEST, True)
    ]


def test_a_nested_manifest_is_found(tmp_path: Path, s3_bucket: str) -> None:
    root = make_tree(tmp_path / "dataroot", {"samples/x.jpg": b"jpeg", "mz_extensions/a": b"1"})
    write_manifest(root, location="mz_extensions/content_manifest.json")
    url = f"s3://{s3_bucket}/nested"
    result = publish_remote(root, url, retry=FAST)
    assert result.manifest_location == "mz_extensions/content_manifest.json"
    report = verify_remote(url, retry=FAST)
    assert report.ok and report.manifest_location == "mz_extensions/content_manifest.json"


def test_an_object_replaced_while_read_is_raced_not_hashed(published: str) -> None:
    location = open_location(published)
    stale = RemoteObject(size=6, e_tag='"0123456789abcdef0123456789abcdef"')
    found = hash_objects(location, [("a.txt", stale)], workers=2, policy=FAST)
    outcome = found["a.txt"]
    assert not isinstance(outcome, str) and outcome.kind is IssueKind.RACED


@settings(max_examples=10, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=4),
    range_size=st.integers(1, 1500),
    workers=st.integers(1, 4),
    whole_limit=st.sampled_from([0, 2000, 1 << 30]),
)
def test_ranges_in_any_order_hash_to_the_whole_object(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    range_size: int,
    workers: int,
    whole_limit: int,
) -> None:
    # file:// runs the same range scheduler and streams without a server; sizes straddle
    # range edges, and the whole-object limit sends some objects each way.
    folder = tmp_path_factory.mktemp("ranges")
    location = open_location(folder.as_uri())
    blobs = {f"o{n}": os.urandom(size) for n, size in enumerate(sizes)}
    for key, data in blobs.items():
        (folder / key).write_bytes(data)
    listed = {
        m["path"]: RemoteObject(m["size"], m["e_tag"])
        for batch in obstore.list(location.store)
        for m in batch
    }
    found = hash_objects(
        location,
        sorted(listed.items()),
        workers=workers,
        policy=FAST,
        range_size=range_size,
        whole_limit=whole_limit,
        window=workers + 1,
    )
    assert found == {key: hashlib.sha256(data).hexdigest() for key, data in blobs.items()}
