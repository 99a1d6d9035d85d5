"""A publish killed mid-upload resumes; many files under a tight descriptor limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import obstore

from dataset_devkit.integrity import read_manifest, write_manifest
from dataset_devkit.integrity.bucket import verify_remote
from dataset_devkit.objectstore import open_location
from tests.integrity.bucket.conftest import FAST, LARGE, kill_publish_while_held, run_cli_batch
from tests.s3_faults import Fault, FaultProxy
from tests.s3_server import S3Server


def test_a_publish_killed_mid_upload_leaves_no_dataset_and_resumes(
    large_tree: Path,
    s3_server: S3Server,
    proxied: FaultProxy,
    proxied_bucket: str,
    package_env: dict[str, str],
) -> None:
    url = f"s3://{proxied_bucket}/killed"
    env = {**package_env, **os.environ}
    # A part of the large file never gets an answer while the publisher is killed.
    command = ["publish", str(large_tree), "--out", url, "--part-size", "5MiB"]
    held = Fault("PUT", "partNumber=1", "hold", times=-1)
    kill_publish_while_held(command, env, proxied, held)
    keys = {m["path"] for b in obstore.list(open_location(url).store) for m in b}
    assert "content_manifest.json" not in keys and "content_manifest.json.publishing" in keys
    assert not verify_remote(url, retry=FAST).ok
    # The killed run's multipart upload is invisible to listings but stored (and billed):
    # the re-run finds it and aborts it.
    assert s3_server.incomplete_uploads(proxied_bucket) == [f"killed/{LARGE}"]
    [(code, out, err)] = run_cli_batch(env, command)
    assert code == 0, err
    assert out.startswith(f"published {url}: ")
    assert "notice: aborted 1 unfinished multipart upload(s)" in err
    assert s3_server.incomplete_uploads(proxied_bucket) == []
    root = read_manifest(large_tree).root_sha256
    assert verify_remote(url, retry=FAST, expect_root=root).ok


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def test_many_files_publish_and_verify_under_256_descriptors(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    # file:// runs the same publish and verify code as s3:// (the store client aside)
    # without a server's request rate, so the test stays fast at more files than
    # descriptors: one leaked per file fails it.
    root = tmp_path / "many"
    for index in range(300):
        folder = root / f"{index % 7}" / f"{index % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{index:04d}.bin").write_bytes(index.to_bytes(4, "big") * 16)
    write_manifest(root)
    url = (tmp_path / "bucket" / "many").as_uri()
    env = package_env
    for args in (["publish", str(root), "--out", url], ["verify", url]):
        done = subprocess.run(
            [sys.executable, "-m", "dataset_devkit", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=_limit_descriptors,
            check=False,
        )
        assert done.returncode == 0, done.stderr
