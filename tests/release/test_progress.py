"""Release verify and restore report every package and byte through the progress protocol."""

from __future__ import annotations

import json
from pathlib import Path

from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.release import restore_release, verify_release
from tests.release.helpers import make_tree, pack


def test_verify_and_restore_report_each_package_and_its_bytes(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", package_limit=8 << 10)
    packages = json.loads((release / "manifest.json").read_text())["packages"]
    assert len(packages) > 2  # several packages, so each one must be counted
    total = sum(p["size"] for p in packages)
    for stage, run in (
        ("verify", lambda progress: verify_release(release, ["all"], progress=progress)),
        (
            "restore",
            lambda progress: restore_release(
                release, tmp_path / "out", ["all"], fsync=False, progress=progress
            ),
        ),
    ):
        updates: list[ProgressUpdate] = []
        run(updates.append)
        assert {u.stage for u in updates} == {stage} and {u.unit for u in updates} == {"packages"}
        first = updates[0]
        assert (first.total_items, first.total_bytes) == (len(packages), total)
        # The log lines of unpack.py are what is counted: every package exactly once.
        assert sum(u.items for u in updates) == len(packages)
        assert sum(u.nbytes for u in updates) == total
