"""Release verify reports every package, restore its packages' bytes then every file."""

from __future__ import annotations

import json
from pathlib import Path

from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.release import restore_release, verify_release
from tests.release.helpers import make_tree, pack


def test_verify_reports_each_package_and_restore_each_file_with_their_bytes(
    tmp_path: Path,
) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", package_limit=8 << 10)
    packages = json.loads((release / "manifest.json").read_text())["packages"]
    assert len(packages) > 2  # several packages, so each one must be counted
    rows = [json.loads(line) for line in (release / "files.jsonl").read_text().splitlines()]
    assert len(rows) > len(packages)  # files are not packages
    for stage, unit, count, total, run in (
        (
            "verify",
            "packages",
            len(packages),
            sum(p["size"] for p in packages),
            lambda progress: verify_release(release, ["all"], progress=progress),
        ),
        (
            "restore",
            "files",
            len(rows),
            sum(r["size"] for r in rows),
            lambda progress: restore_release(
                release, tmp_path / "out", ["all"], fsync=False, progress=progress
            ),
        ),
    ):
        updates: list[ProgressUpdate] = []
        run(updates.append)
        if stage == "restore":
            # Where the package check is a pass of its own (no syncfs), every package is
            # hashed before anything is written; otherwise each one is hashed in the read
            # that restores it and there is no check stage at all.
            checked = [u for u in updates if u.stage == "check packages"]
            assert updates[: len(checked)] == checked
            if checked:
                assert sum(u.nbytes for u in checked) == sum(p["size"] for p in packages)
                assert {u.total_bytes for u in checked} == {sum(p["size"] for p in packages)}
            updates = updates[len(checked) :]
        assert {u.stage for u in updates} == {stage} and {u.unit for u in updates} == {unit}
        first = updates[0]
        assert (first.total_items, first.total_bytes) == (count, total)
        # Every package (verify) or file (restore) counted exactly once, with its bytes.
        assert sum(u.items for u in updates) == count
        assert sum(u.nbytes for u in updates) == total
