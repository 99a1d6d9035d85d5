"""The nuscenes demo step builds, exports and loads its three sample recordings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataset_devkit.demo.nuscenes import run
from dataset_devkit.nuscenes import load_build_config
from dataset_devkit.nuscenes.options import PoseSourceConfig


@pytest.mark.needs("nuscenes")
def test_demo_step_exports_every_source_and_reports_root_hashes(tmp_path: Path) -> None:
    report = run(tmp_path)
    labels = dict(report.lines)
    assert "3 scenes" in labels["mcap official loader"]
    assert "3 scenes" in labels["decoded official loader"]
    assert "3 scenes" in labels["robot official loader"]
    assert sorted(report.root_sha256) == [
        "evidence-decoded",
        "evidence-mcap",
        "evidence-robot",
        "staging-decoded",
        "staging-mcap",
        "staging-robot",
    ]
    assert (tmp_path / "staging-mcap" / "v1.0-trainval" / "sample_data.json").is_file()
    # The robot's bag: no GNSS, poses from tf in map, its topics on official channels.
    bag = tmp_path / "recordings" / "robot-bag"
    assert sorted(p.name for p in bag.iterdir()) == ["metadata.yaml", "robot-bag.mcap"]
    toml = tmp_path / "robot-build.toml"
    config = load_build_config(toml)
    assert config.sources.paths == (bag,)
    assert config.pipeline.ingest.pose == PoseSourceConfig(source="tf", world_frame="map")
    staging = tmp_path / "staging-robot"
    sensors = json.loads((staging / "v1.0-trainval" / "sensor.json").read_text())
    assert sorted(s["channel"] for s in sensors) == ["CAM_BACK", "CAM_FRONT"]
    source = json.loads((staging / "mz_extensions" / "source.json").read_text())
    assert (source["pose_frame"], source["world_frame"]) == ("recording_local_tf_v1", "map")
    assert report.try_next == [
        ("recording", "inspect", str(bag), "--config", str(toml)),
        ("build", str(toml)),
    ]
