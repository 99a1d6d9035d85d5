"""``release pack`` and ``release verify`` hold descriptors bounded by the tree's depth.

The pack runs in a child limited to 256 descriptors on a GenVR-shaped tree with 260 sibling
directories in one folder. Its listing once kept every pushed sibling open and failed with
"Too many open files" (and a traceback). The default restore test runs ``unpack.py``'s own
code in the same child, so its descriptors are bounded under the same limit too.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from dataset_devkit.integrity import read_manifest
from tests.scale_tree import TreeShape, run_limited


def test_pack_and_verify_run_under_256_descriptors(
    genvr_tree: TreeShape, tmp_path: Path, package_env: dict[str, str]
) -> None:
    release = tmp_path / "release"
    options = ["--package-limit", str(4 << 20), "--readable-by", "group"]
    done = run_limited(
        package_env, ["release", "pack", str(genvr_tree.root), "--out", str(release), *options]
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((release / "manifest.json").read_bytes())
    assert manifest["snapshot"]["root_sha256"] == read_manifest(genvr_tree.root).root_sha256
    assert manifest["snapshot"]["file_count"] == genvr_tree.files
    assert len(manifest["packages"]) > 3
    assert stat.S_IMODE(os.lstat(release).st_mode) == 0o750
    verified = run_limited(package_env, ["release", "verify", str(release)])
    assert verified.returncode == 0, verified.stderr
    assert f"{len(manifest['packages'])} packages" in verified.stdout
