"""Stereo build and validate report progress; the terminal shows it, pipes and JSON do not."""

from __future__ import annotations

import json
import re
from pathlib import Path

from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.stereo import BuildResult, validate_stereo
from tests.cli.report_check import check_report
from tests.tty_run import BAR, assert_full, last_frames, run_on_tty


def test_validate_full_reports_every_pair_checked_and_read(built: BuildResult) -> None:
    updates: list[ProgressUpdate] = []
    report = validate_stereo(built.root, full=True, progress=updates.append)
    assert report.ok
    done = {
        stage: sum(u.items for u in updates if u.stage == stage)
        for stage in {"check pairs", "read back"}
    }
    assert done == {"check pairs": built.pairs, "read back": built.pairs}
    totals = {u.stage: u.total_items for u in updates if u.total_items is not None}
    assert totals == {"check pairs": built.pairs, "read back": built.pairs}


def test_build_and_validate_draw_bars_on_a_terminal_and_json_stays_clean(
    source: Path, tmp_path: Path, package_env: dict[str, str]
) -> None:
    out = tmp_path / "GenVR-duo-20261023"
    code, shown = run_on_tty(package_env, "stereo", "build", str(source), "--out", str(out))
    assert code == 0, shown
    frames = last_frames(shown)
    assert list(frames) == ["check source", "write pairs", "read back", "hash", "verify"]
    assert "3/3 pairs" in frames["check source"] and "3/3 pairs" in frames["read back"]
    assert re.search(r"\d+\.\d (?:KiB|MiB) · 3/3 pairs .*B/s", frames["write pairs"]), frames
    files = len(json.loads((out / "content_manifest.json").read_text())["files"])
    assert_full(frames["hash"], files)
    assert_full(frames["verify"], files)
    code, shown = run_on_tty(package_env, "stereo", "validate", str(out), "--full")
    assert code == 0, shown
    frames = last_frames(shown)
    assert "3/3 pairs" in frames["check pairs"] and "3/3 pairs" in frames["read back"]
    code, shown = run_on_tty(package_env, "stereo", "validate", str(out), "--full", "--json")
    assert code == 0 and BAR not in shown
    report = check_report(shown.replace("\r\n", "\n"), ok=True, kind="stereo-dataset")
    assert report["pairs"] == 3 and len(report["root_sha256"]) == 64
    assert json.loads(shown.replace("\r\n", "\n"))["reader_validation"]["scope"] == "full"
