"""``stereo build`` holds descriptors bounded by the tree's depth, not its width.

300 one-frame pairs in one map (300 sibling scene directories, more than the 256 descriptors
the child may hold): every video is probed and copied byte for byte, cameras converted,
frames read back, and the tree published, as for the 2,008 pairs of the real release.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from tests.scale_tree import make_stereo_export, run_limited


def test_stereo_build_runs_under_256_descriptors(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    source = make_stereo_export(tmp_path / "export", 300)
    out = tmp_path / "GenVR-duo-20261023"
    done = run_limited(
        package_env, ["stereo", "build", str(source), "--out", str(out), "--readable-by", "all"]
    )
    assert done.returncode == 0, done.stderr
    assert len(os.listdir(out / "ue5-pro" / "map0001")) == 300
    summary = json.loads((out / "content_manifest.json").read_bytes())
    assert summary["file_count"] == 300 * 6 + 7  # 6 per pair, 7 at the root
    assert stat.S_IMODE(os.lstat(out).st_mode) == 0o555
    assert stat.S_IMODE(os.lstat(out / "genvr_i2s.jsonl").st_mode) == 0o444
