"""A flaky or failing server: retries with backoff, then one line naming the object.

Every test goes through a fault proxy in front of the real test server (moto): 500
answers, connections dropped half-way through a response body, requests never answered.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import obstore
import pytest

from dataset_devkit.errors import MissingPathError
from dataset_devkit.integrity import read_manifest
from dataset_devkit.integrity.bucket import (
    ObjectStoreError,
    RetryPolicy,
    publish_remote,
    verify_remote,
)
from dataset_devkit.integrity.bucket.failures import is_transient
from dataset_devkit.objectstore import open_location
from tests.integrity.bucket.conftest import FAST, LARGE, PART, run_cli_batch
from tests.s3_faults import Fault, FaultProxy
from tests.s3_server import S3Server


def _keys(url: str) -> set[str]:
    return {m["path"] for batch in obstore.list(open_location(url).store) for m in batch}


def test_a_flaky_server_is_retried_to_a_correct_result(
    large_tree: Path, proxied: FaultProxy, proxied_bucket: str
) -> None:
    tree = large_tree
    url = f"s3://{proxied_bucket}/p"
    proxied.faults = [
        Fault("PUT", "/p/a.txt", "500", times=2),
        Fault("PUT", "partNumber=2", "drop", times=1),
        Fault("PUT", "/p/content_manifest.json", "500", times=1),
    ]
    result = publish_remote(tree, url, part_size=PART, retry=FAST)
    assert not result.already_published
    assert [f.fired for f in proxied.faults] == [2, 1, 1]
    proxied.faults = [
        Fault("GET", "/p/b/c.bin", "drop", times=2),
        Fault("GET", f"/p/{LARGE}", "drop", times=2),
        Fault("GET", "list-type", "500", times=1),
    ]
    report = verify_remote(url, retry=FAST, range_size=PART)
    assert report.ok, report.issues
    assert [f.fired for f in proxied.faults] == [2, 2, 1]


def test_a_dead_object_fails_verify_in_one_line_naming_it(
    tree: Path, proxied: FaultProxy, proxied_bucket: str
) -> None:
    url = f"s3://{proxied_bucket}/p"
    publish_remote(tree, url, part_size=PART, retry=FAST)
    for kind in ("500", "drop"):
        proxied.faults = [Fault("GET", "/p/b/d/e.json", kind, times=-1)]
        with pytest.raises(ObjectStoreError) as failed:
            verify_remote(url, retry=FAST)
        message = str(failed.value)
        assert message.startswith(f"{url}/b/d/e.json: read bytes 0-8 failed after 3 tries")
        assert "\n" not in message


@pytest.mark.parametrize(
    "where",
    ["/p/.hidden/.zarray", "/p/b/d/empty", "partNumber=3", "/p/content_manifest.json"],
    ids=["first-file", "empty-file", "large-file-part", "manifest"],
)
def test_a_publish_cut_off_at_any_object_leaves_no_manifest_and_resumes(
    large_tree: Path, proxied: FaultProxy, proxied_bucket: str, where: str
) -> None:
    tree = large_tree
    url = f"s3://{proxied_bucket}/p"
    # A suffix match: the manifest's key, not its claim's (which only starts the same).
    proxied.faults = [Fault("PUT", where, "drop", times=-1, suffix="=" not in where)]
    with pytest.raises(ObjectStoreError) as failed:
        publish_remote(tree, url, part_size=PART, workers=2, retry=FAST)
    assert "\n" not in str(failed.value)
    named = LARGE if "partNumber" in where else where.removeprefix("/p/")
    assert f"{url}/{named}:" in str(failed.value)
    left = _keys(url)
    assert "content_manifest.json" not in left
    assert "content_manifest.json.publishing" in left
    report = verify_remote(url, retry=FAST)
    assert report.details[0].kind == "missing" and "not a dataset" in report.details[0].detail
    proxied.faults = []
    resumed = publish_remote(tree, url, part_size=PART, workers=2, retry=FAST)
    assert resumed.skipped_files == len(left - {"content_manifest.json.publishing"})
    assert resumed.uploaded_files + resumed.skipped_files == resumed.file_count
    assert verify_remote(url, retry=FAST, expect_root=read_manifest(tree).root_sha256).ok
    assert "content_manifest.json.publishing" not in _keys(url)


def test_a_multipart_upload_that_fails_is_aborted_and_one_left_behind_is_swept(
    large_tree: Path, s3_server: S3Server, proxied: FaultProxy, proxied_bucket: str
) -> None:
    url = f"s3://{proxied_bucket}/p"
    # A part that never goes through: every try's multipart upload is aborted by the
    # client, nothing is left stored.
    proxied.faults = [Fault("PUT", "partNumber=2", "500", times=-1)]
    with pytest.raises(ObjectStoreError, match=re.escape(f"{url}/{LARGE}: ")):
        publish_remote(large_tree, url, part_size=PART, retry=FAST)
    assert s3_server.incomplete_uploads(proxied_bucket) == []
    # The abort requests fail too (as for a process killed mid-upload): the uploads stay
    # behind, and the next run of the same publish aborts them before uploading.
    proxied.faults = [
        Fault("PUT", "partNumber=2", "500", times=-1),
        Fault("DELETE", "uploadId=", "drop", times=-1),
    ]
    with pytest.raises(ObjectStoreError):
        publish_remote(large_tree, url, part_size=PART, retry=FAST)
    left = s3_server.incomplete_uploads(proxied_bucket)
    assert left and set(left) == {f"p/{LARGE}"}
    proxied.faults = []
    result = publish_remote(large_tree, url, part_size=PART, retry=FAST)
    assert (result.aborted_uploads, result.notice) == (len(left), None)
    assert s3_server.incomplete_uploads(proxied_bucket) == []
    assert verify_remote(url, retry=FAST, expect_root=result.root_sha256).ok


def test_a_twin_whose_upload_was_swept_uploads_that_file_again(
    s3_server: S3Server, s3_bucket: str
) -> None:
    """The sweep cannot tell a killed run's upload from a live twin's: the twin, finding
    its upload gone (NoSuchUpload), uploads that file again."""
    url = f"s3://{s3_bucket}/p"
    client = s3_server.client()
    location = open_location(url)
    started = threading.Event()

    def parts() -> Iterator[bytes]:
        yield os.urandom(PART)
        started.set()
        time.sleep(0.5)  # the sweep runs meanwhile
        yield os.urandom(PART)

    def sweep() -> None:
        started.wait(30)
        for upload in client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []):
            client.abort_multipart_upload(
                Bucket=s3_bucket, Key=upload["Key"], UploadId=upload["UploadId"]
            )

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    with pytest.raises(Exception) as aborted:
        obstore.put(location.store, "x.bin", parts(), chunk_size=PART, max_concurrency=1)
    sweeper.join()
    assert is_transient(aborted.value), aborted.value


def test_a_missing_bucket_is_one_line(tree: Path, proxied: FaultProxy) -> None:
    for call in (
        lambda: publish_remote(tree, "s3://no-such-bucket/p", retry=FAST),
        lambda: verify_remote("s3://no-such-bucket/p", retry=FAST),
    ):
        with pytest.raises(MissingPathError, match="the bucket 'no-such-bucket' does not exist"):
            call()


def test_missing_credentials_are_one_line(
    tree: Path, proxied: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    # With no keys the client asks the instance metadata service: point it at a closed
    # loopback port, never at a real address.
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")
    quick = RetryPolicy(attempts=2, request_retries=1, initial_backoff=0.01, timeout=2)
    with pytest.raises(ObjectStoreError) as failed:
        verify_remote("s3://some-bucket/p", retry=quick)
    assert "no usable credentials" in str(failed.value)
    assert "\n" not in str(failed.value)


def test_cli_errors_are_one_line_without_a_traceback(
    tree: Path, proxied: FaultProxy, package_env: dict[str, str]
) -> None:
    env = {**package_env, **os.environ}
    cases = [
        ("verify", "s3://no-such-bucket/p"),
        ("publish", str(tree), "--out", "s3://no-such-bucket/p"),
        ("verify", "s3:///nobucket"),
        ("publish", str(tree), "--out", "s3://"),
    ]
    for args, (code, _, err) in zip(cases, run_cli_batch(env, *cases), strict=True):
        assert code == 1, (args, err)
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in err, (args, err)
