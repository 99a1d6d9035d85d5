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
