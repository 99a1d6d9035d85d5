"""The commands a user types: publish --out URL, verify/validate/inspect URL."""

from __future__ import annotations

import json
import os
from pathlib import Path

from dataset_devkit.integrity import read_manifest, write_manifest
from tests.integrity.bucket.conftest import run_cli_batch
from tests.integrity.helpers import make_tree


def test_publish_then_read_back_through_every_command(
    tree: Path, tmp_path: Path, bucket_url: str, package_env: dict[str, str]
) -> None:
    url = f"{bucket_url}/datasets/demo"
    other = make_tree(tmp_path / "other", {"a.txt": b"another dataset\n"})
    write_manifest(other)
    root = read_manifest(tree).root_sha256
    local_copy = tmp_path / "mirror" / "demo"
    runs = run_cli_batch(
        {**package_env, **os.environ},
        ["publish", str(tree), "--out", url],
        ["publish", str(tree), "--out", url, "--json"],
        ["publish", str(other), "--out", url],
        ["verify", url, "--expect-root", root],
        ["validate", url],
        ["inspect", url, "--json"],
        ["publish", str(tree), "--out", local_copy.as_uri()],
        ["verify", str(local_copy)],
    )
    (code, out, err), (again_code, again, _), (lost_code, _, lost) = runs[:3]
    assert code == 0, err
    assert out.splitlines() == [
        f"published {url}: {read_manifest(tree).file_count} files "
        f"({read_manifest(tree).file_count} uploaded), manifest content_manifest.json",
        f"root_sha256 {root}",
    ]
    report = json.loads(again)
    assert again_code == 0 and report["already_published"] is True
    assert report["root"] == url and report["uploaded_files"] == 0
    assert lost_code == 1 and len(lost.strip().splitlines()) == 1
    assert f"already holds a dataset with root_sha256 {root}" in lost
    for code, _out, err in runs[3:]:
        assert code == 0, err
    assert runs[3][1].startswith(f"OK {url}: ")
    assert "valid content-manifest-tree" in runs[4][1]
    inspected = json.loads(runs[5][1])
    assert (inspected["root_sha256"], inspected["files"]) == (root, read_manifest(tree).file_count)
    assert read_manifest(local_copy).root_sha256 == root


def test_transfer_options_reach_the_upload_and_are_refused_for_a_local_path(
    large_tree: Path, tmp_path: Path, s3_bucket: str, package_env: dict[str, str]
) -> None:
    url = f"s3://{s3_bucket}/tuned"
    tuned = ["--workers", "2", "--part-size", "5MiB", "--part-concurrency", "3", "--retries", "1"]
    runs = run_cli_batch(
        {**package_env, **os.environ},
        ["publish", str(large_tree), "--out", url, *tuned, "--json"],
        ["verify", url, "--workers", "3", "--retries", "0"],
        ["publish", str(large_tree), "--out", str(tmp_path / "final"), "--part-size", "8MiB"],
        ["verify", str(large_tree), "--retries", "2"],
        ["publish", str(large_tree), "--out", url + "-2", "--part-size", "lots"],
    )
    (code, out, err), (verified, _, verify_err) = runs[:2]
    assert code == 0, err
    assert json.loads(out)["uploaded_files"] == read_manifest(large_tree).file_count
    assert verified == 0, verify_err
    for code, _, err in runs[2:4]:
        assert code == 2
        assert "apply to an object store URL, not to the local path" in err
    assert not (tmp_path / "final").exists()
    assert runs[4][0] == 2 and "expected a size such as" in runs[4][2]
