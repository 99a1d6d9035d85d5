"""Publishing a tree to an object store: verified uploads, the manifest as commit marker."""

from __future__ import annotations

import hashlib
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import obstore
import pytest

from dataset_devkit.errors import (
    DestinationExistsError,
    IntegrityError,
    PublicationError,
    VerificationFailed,
)
from dataset_devkit.integrity import build_manifest, read_manifest, write_manifest
from dataset_devkit.integrity.bucket import publish_remote, verify_remote
from dataset_devkit.integrity.bucket.objects import SHA256_METADATA, keeps_metadata
from dataset_devkit.integrity.bucket.upload import upload_file
from dataset_devkit.integrity.manifest import ManifestEntry
from dataset_devkit.objectstore import open_location
from tests.integrity.bucket.conftest import FAST, LARGE, PART
from tests.integrity.helpers import make_tree
from tests.s3_server import S3Server


def _keys(url: str) -> dict[str, str | None]:
    store = open_location(url, create=True).store
    return {m["path"]: m["e_tag"] for batch in obstore.list(store) for m in batch}


def test_published_objects_are_the_tree_with_its_manifest_last(
    large_tree: Path, bucket_url: str
) -> None:
    tree = large_tree
    url = f"{bucket_url}/datasets/one"
    result = publish_remote(tree, url, part_size=PART, retry=FAST)
    manifest = read_manifest(tree)
    assert (result.root_sha256, result.uploaded_files) == (
        manifest.root_sha256,
        manifest.file_count,
    )
    assert result.already_published is False
    store = open_location(url, create=True).store
    assert set(_keys(url)) == {e.path for e in manifest.files} | {"content_manifest.json"}
    assert bytes(obstore.get(store, "content_manifest.json").bytes()) == manifest.to_bytes()
    for entry in manifest.files:  # the digest recorded with each object is its own
        head = obstore.get(store, entry.path, options={"head": True})
        if keeps_metadata(open_location(url)):
            assert head.attributes[SHA256_METADATA] == entry.sha256
    report = verify_remote(url, retry=FAST, range_size=PART)
    assert report.ok and report.actual_root_sha256 == manifest.root_sha256


def test_file_urls_publish_the_same_tree(large_tree: Path, tmp_path: Path) -> None:
    tree = large_tree
    url = (tmp_path / "bucket" / "ds").as_uri()
    result = publish_remote(tree, url, part_size=PART)
    assert not result.already_published
    copy = tmp_path / "bucket" / "ds"
    assert build_manifest(copy).root_sha256 == result.root_sha256
    assert (copy / "content_manifest.json").read_bytes() == (
        tree / "content_manifest.json"
    ).read_bytes()
    assert verify_remote(url).ok


def test_a_tree_without_a_manifest_is_hashed_and_published(tmp_path: Path, s3_bucket: str) -> None:
    staging = make_tree(tmp_path / "staging")
    result = publish_remote(staging, f"s3://{s3_bucket}/s", retry=FAST)
    assert result.root_sha256 == build_manifest(staging).root_sha256
    assert not (staging / "content_manifest.json").exists()  # the local tree is not changed
    assert verify_remote(f"s3://{s3_bucket}/s", retry=FAST).ok


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda root: (root / "a.txt").write_bytes(b"edited, longer\n"), "a.txt"),
        (lambda root: (root / "b" / "stray.txt").write_bytes(b"not listed"), "b/stray.txt"),
        (lambda root: (root / "b" / "c.bin").unlink(), "b/c.bin"),
    ],
    ids=["size", "extra", "missing"],
)
def test_a_tree_whose_listing_does_not_match_uploads_nothing(
    tree: Path, s3_bucket: str, change: Callable[[Path], object], named: str
) -> None:
    change(tree)
    with pytest.raises(VerificationFailed, match=re.escape(named)):
        publish_remote(tree, f"s3://{s3_bucket}/p", retry=FAST)
    assert _keys(f"s3://{s3_bucket}/p") == {}


@pytest.mark.parametrize("path", ["a.txt", LARGE], ids=["single-request", "multipart"])
def test_a_file_whose_bytes_do_not_match_never_becomes_an_object(
    large_tree: Path, s3_server: S3Server, s3_bucket: str, path: str
) -> None:
    """Contents are checked as they are uploaded (one read per file), not before: a file of
    the right size but other bytes fails the publish naming it, no object is created for
    it, no manifest is written, and the claim this run made is withdrawn."""
    url = f"s3://{s3_bucket}/p"
    original = (large_tree / path).read_bytes()
    (large_tree / path).write_bytes(bytes([original[0] ^ 1]) + original[1:])
    with pytest.raises(VerificationFailed) as failed:
        publish_remote(large_tree, url, part_size=PART, workers=1, retry=FAST)
    message = str(failed.value)
    assert message.startswith(f"{large_tree / path}: does not match the content manifest (")
    assert "\n" not in message
    left = _keys(url)
    assert path not in left
    assert "content_manifest.json" not in left
    assert "content_manifest.json.publishing" not in left
    assert s3_server.incomplete_uploads(s3_bucket) == []
    (large_tree / path).write_bytes(original)
    resumed = publish_remote(large_tree, url, part_size=PART, retry=FAST)
    assert resumed.skipped_files == len(left)
    assert verify_remote(url, retry=FAST, expect_root=resumed.root_sha256).ok


def test_publishing_again_is_already_published_and_changes_nothing(
    tree: Path, bucket_url: str
) -> None:
    url = f"{bucket_url}/p"
    publish_remote(tree, url, part_size=PART, retry=FAST)
    before = _keys(url)
    again = publish_remote(tree, url, part_size=PART, retry=FAST)
    assert again.already_published and again.uploaded_files == 0
    assert _keys(url) == before


def test_another_tree_never_replaces_a_published_dataset(
    tree: Path, tmp_path: Path, bucket_url: str
) -> None:
    url = f"{bucket_url}/p"
    first = publish_remote(tree, url, part_size=PART, retry=FAST)
    before = _keys(url)
    other = make_tree(tmp_path / "other", {"a.txt": b"another dataset\n"})
    with pytest.raises(DestinationExistsError, match=first.root_sha256) as refused:
        publish_remote(other, url, retry=FAST)
    assert "\n" not in str(refused.value)
    assert _keys(url) == before


def test_a_prefix_holding_other_objects_is_refused(tree: Path, s3_bucket: str) -> None:
    url = f"s3://{s3_bucket}/p"
    obstore.put(open_location(url, create=True).store, "notes/readme.txt", b"someone else's")
    with pytest.raises(PublicationError, match=r"notes/readme\.txt"):
        publish_remote(tree, url, retry=FAST)
    assert set(_keys(url)) == {"notes/readme.txt"}


def test_an_unfinished_publish_of_another_tree_is_not_mixed_in(
    tree: Path, tmp_path: Path, bucket_url: str
) -> None:
    url = f"{bucket_url}/p"
    other = make_tree(tmp_path / "other", {"a.txt": b"another dataset\n"})
    write_manifest(other)
    store = open_location(url, create=True).store
    root = read_manifest(other).root_sha256
    claim = b'{"format":"dataset-devkit/publish-claim","root_sha256":"' + root.encode() + b'"}\n'
    obstore.put(store, "content_manifest.json.publishing", claim)
    with pytest.raises(PublicationError, match="unfinished publish of another tree"):
        publish_remote(tree, url, retry=FAST)
    assert set(_keys(url)) == {"content_manifest.json.publishing"}
    # the tree whose claim it is finishes, and removes its claim
    publish_remote(other, url, retry=FAST)
    assert set(_keys(url)) == {"a.txt", "content_manifest.json"}


def test_objects_already_there_are_skipped_only_with_the_right_digest(
    tree: Path, cloud_bucket_url: str
) -> None:
    url = f"{cloud_bucket_url}/p"
    store = open_location(url, create=True).store
    manifest = read_manifest(tree)
    entries = manifest.by_path()
    # A previous run's object (our digest recorded), a same-size object of other bytes with
    # our digest missing, and a same-size object that claims a wrong digest.
    obstore.put(store, "a.txt", b"alpha\n", attributes={SHA256_METADATA: entries["a.txt"].sha256})
    obstore.put(store, "b/d/e.json", b'{"y": 2}\n')
    obstore.put(store, "b/c.bin", bytes(10240), attributes={SHA256_METADATA: "0" * 64})
    result = publish_remote(tree, url, part_size=PART, retry=FAST)
    assert result.skipped_files == 1
    assert result.uploaded_files == manifest.file_count - 1
    assert verify_remote(url, retry=FAST).ok


def test_identical_concurrent_publishers_all_succeed_and_one_commits(
    tree: Path, s3_bucket: str
) -> None:
    url = f"s3://{s3_bucket}/p"
    results = []
    start = threading.Barrier(3)

    def run() -> None:
        start.wait()
        results.append(publish_remote(tree, url, part_size=PART, retry=FAST))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3
    assert sorted(r.already_published for r in results)[0] is False
    assert {r.root_sha256 for r in results} == {read_manifest(tree).root_sha256}
    assert verify_remote(url, retry=FAST).ok
    assert "content_manifest.json.publishing" not in _keys(url)


def test_different_concurrent_publishers_get_exactly_one_winner(
    tree: Path, tmp_path: Path, bucket_url: str
) -> None:
    url = f"{bucket_url}/p"
    trees = [tree]
    for n in range(3):
        other = tmp_path / f"copy{n}"
        shutil.copytree(tree, other)
        (other / "content_manifest.json").unlink()
        (other / "a.txt").write_bytes(f"variant {n}\n".encode())
        write_manifest(other)
        trees.append(other)
    won: list[str] = []
    lost: list[Exception] = []
    start = threading.Barrier(len(trees))

    def run(root: Path) -> None:
        start.wait()
        try:
            won.append(publish_remote(root, url, part_size=PART, retry=FAST).root_sha256)
        except (PublicationError, DestinationExistsError) as exc:
            lost.append(exc)

    threads = [threading.Thread(target=run, args=(root,)) for root in trees]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(lost) == len(trees) - 1
    report = verify_remote(url, retry=FAST, expect_root=won[0])
    assert report.ok, report.issues


def test_a_loser_that_claims_after_the_winner_released_leaves_no_claim(
    tree: Path, tmp_path: Path, bucket_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of the test above, made to happen: the other tree looks at the manifest
    before the winner commits, and claims the prefix after the winner released its claim."""
    from dataset_devkit.integrity.bucket import publish
    from dataset_devkit.integrity.bucket.commit import committed

    url = f"{bucket_url}/p"
    other = tmp_path / "other"
    shutil.copytree(tree, other)
    (other / "content_manifest.json").unlink()
    (other / "a.txt").write_bytes(b"another tree\n")
    write_manifest(other)
    winner = publish_remote(tree, url, part_size=PART, retry=FAST)
    looks: list[str] = []

    def first_look_before_the_commit(*args: Any) -> bool:
        looks.append("look")
        return False if len(looks) == 1 else committed(*args)

    monkeypatch.setattr(publish, "committed", first_look_before_the_commit)
    with pytest.raises(DestinationExistsError, match="already holds a dataset"):
        publish_remote(other, url, part_size=PART, retry=FAST)
    assert len(looks) == 2, "the loser claimed, then found the manifest"
    assert "content_manifest.json.publishing" not in _keys(url)
    assert verify_remote(url, retry=FAST, expect_root=winner.root_sha256).ok


def test_a_file_that_changed_after_verification_never_lands(
    large_tree: Path, bucket_url: str
) -> None:
    tree = large_tree
    url = f"{bucket_url}/p"
    location = open_location(url, create=True)
    for path, size in (("a.txt", 6), (LARGE, 2 * PART + 12345)):
        lie = ManifestEntry(path=path, size=size, sha256=hashlib.sha256(b"other").hexdigest())
        with pytest.raises(IntegrityError, match="does not match the content manifest"):
            upload_file(
                location,
                tree,
                lie,
                part_size=PART,
                part_concurrency=2,
                metadata=keeps_metadata(location),
            )
    assert _keys(url) == {}  # the small one was never sent, the large upload was aborted


def test_a_claim_left_beside_a_committed_manifest_is_cleared_by_a_rerun(
    tree: Path, bucket_url: str
) -> None:
    # A publisher killed between writing the manifest and removing its claim.
    url = f"{bucket_url}/p"
    result = publish_remote(tree, url, retry=FAST)
    claim = b'{"format":"dataset-devkit/publish-claim","root_sha256":"'
    claim += result.root_sha256.encode() + b'"}\n'
    obstore.put(open_location(url, create=True).store, "content_manifest.json.publishing", claim)
    stale = verify_remote(url, retry=FAST)
    assert [(i.path, i.kind) for i in stale.details] == [
        ("content_manifest.json.publishing", "extra")
    ]
    assert publish_remote(tree, url, retry=FAST).already_published
    assert verify_remote(url, retry=FAST).ok


def test_a_file_url_publish_killed_mid_file_resumes(large_tree: Path, tmp_path: Path) -> None:
    # What a SIGKILL in the middle of a large file leaves in a file:// folder: the claim, the
    # small files, and obstore's staging file of the large one ("NAME#N", never listed).
    url = (tmp_path / "bucket" / "ds").as_uri()
    folder = tmp_path / "bucket" / "ds"
    (folder / "large").mkdir(parents=True)
    (folder / f"{LARGE}#1").write_bytes(b"half of it")
    root = read_manifest(large_tree).root_sha256
    claim = b'{"format":"dataset-devkit/publish-claim","root_sha256":"' + root.encode() + b'"}\n'
    (folder / "content_manifest.json.publishing").write_bytes(claim)
    assert not verify_remote(url).ok
    result = publish_remote(large_tree, url, part_size=PART)
    assert not result.already_published and result.root_sha256 == root
    assert verify_remote(url, expect_root=root).ok
    assert not (folder / "content_manifest.json.publishing").exists()
