"""The nuscenes demo step builds, exports and loads both sample recordings."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.demo.nuscenes import run


@pytest.mark.needs("nuscenes")
def test_demo_step_exports_both_sources_and_reports_root_hashes(tmp_path: Path) -> None:
    report = run(tmp_path)
    labels = dict(report.lines)
    assert "3 scenes" in labels["mcap official loader"]
    assert "3 scenes" in labels["decoded official loader"]
    assert sorted(report.root_sha256) == [
        "evidence-decoded",
        "evidence-mcap",
        "staging-decoded",
        "staging-mcap",
    ]
    assert (tmp_path / "staging-mcap" / "v1.0-trainval" / "sample_data.json").is_file()
