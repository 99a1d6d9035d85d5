"""The bytes of a release's packages and index are pinned: a faster packer writes them the
same, GNU tar lists and extracts them, and a change to them is a deliberate format change."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from tests.release.helpers import make_tree, pack, read_tree

#: A fixed tree that takes every header path: short ASCII names (the hand-built ustar
#: header), a name past 100 bytes and a non-ASCII one (tarfile's pax header), an empty
#: file, sizes either side of a 512-byte block, and a member larger than the write buffer.
GOLDEN_TREE: dict[str, bytes] = {
    "a.txt": b"alpha\n",
    "empty": b"",
    "block/511.bin": bytes(range(256)) + bytes(range(255)),
    "block/512.bin": bytes(range(256)) * 2,
    "block/513.bin": bytes(range(256)) * 2 + b"!",
    "big/one-and-a-half-mebibytes.bin": bytes(range(251)) * (3 * 512 * 1024 // 251),
    "données/名前.txt": "ünïcode\n".encode(),
    "x" * 60 + "/" + "y" * 80 + ".bin": b"long name needs pax\n",
    "scene/depth-zstd-5-mm/group.zarr/.zgroup": b'{"zarr_format": 2}',
    "scene/depth-zstd-5-mm/group.zarr/0.0.0": bytes(range(100)) * 30,
}

#: SHA-256 of every package and of files.jsonl, as the packer wrote them before its
#: per-file speed work (dataset-devkit at the merge of s3-backends).
GOLDEN_SHA256 = {
    "files.jsonl": "c51f0e95209336c0ba54b0e28e64d0cfb6f06805f53b3094e1d6be7f96ffbaa0",
    "base/base-0001.tar": "cd4b8b00149481c0215370829feb099b6748438a1d78e7209dae20e9cfdf74b9",
    "depth/depth-0001.tar": "d71c9363b4bea3236221be16abebc99a93cdb04243e948f31a3254e9eb75314e",
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_packages_and_index_are_the_pinned_bytes_and_gnu_tar_reads_them(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", GOLDEN_TREE)
    release = pack(tree, tmp_path / "rel", package_limit=2 << 20, restore_test="none")
    packages = sorted(p.relative_to(release).as_posix() for p in release.glob("*/*.tar"))
    found = {name: _digest(release / name) for name in ["files.jsonl", *packages]}
    assert found == GOLDEN_SHA256
    rows = [json.loads(line) for line in (release / "files.jsonl").read_text().splitlines()]
    out = tmp_path / "tar-out"
    out.mkdir()
    for name in packages:
        listed = subprocess.run(
            ["tar", "-tf", str(release / name)], check=True, capture_output=True, text=True
        ).stdout.splitlines()
        assert listed == [f"ds/{r['path']}" for r in rows if r["package"] == name]
        subprocess.run(["tar", "-xf", str(release / name), "-C", str(out)], check=True)
    assert read_tree(out / "ds") == GOLDEN_TREE
