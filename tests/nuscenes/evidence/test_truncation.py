"""A recording cut by a crash keeps every complete scene window before the cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig
from dataset_devkit.nuscenes.evidence import derive, open_recording
from dataset_devkit.nuscenes.evidence.inputs import channel_mapping
from dataset_devkit.nuscenes.evidence.scenes import complete_until
from dataset_devkit.nuscenes.evidence.writer import _to_evidence
from dataset_devkit.nuscenes.samples import SampleDrive
from tests.nuscenes.helpers import write_ros2

CONFIG = PipelineConfig(
    namespace="trunc", scenario=ScenarioConfig(scene_duration_s=5.0, min_scene_duration_s=1.0)
)


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    drive = SampleDrive(duration_s=12.0, fps=12.0, width=32, height=24)
    return write_ros2(tmp_path_factory.mktemp("trunc") / "bag", drive)


@pytest.mark.parametrize("fraction", [0.55, 0.65, 0.75, 0.85])
def test_every_window_before_the_cut_is_kept_whole(
    bag: Path, tmp_path: Path, fraction: float
) -> None:
    data = bag.read_bytes()
    cut = tmp_path / bag.name
    cut.write_bytes(data[: int(len(data) * fraction)])
    source = open_recording(cut)
    assert source.truncated
    rec = _to_evidence(source, channel_mapping([source]))
    scenes = derive([rec], CONFIG).scenes
    # The streams stop at different times; the last window ends where all of them reach.
    # (a tail shorter than min_scene_duration_s is the only window left out).
    long_enough = [
        s for s in scenes if s.grid_timestamps_ns[-1] - s.start_timestamp_ns >= 1_000_000_000
    ]
    assert all(s.valid for s in long_enough), [s.reasons for s in scenes]
    assert all(s.valid or "min_scene_duration_s" in s.reasons[0] for s in scenes)
    assert scenes[-1].grid_timestamps_ns[-1] <= complete_until(rec)
    assert complete_until(rec) - scenes[-1].grid_timestamps_ns[-1] < 500_000_000
    assert len(scenes) == 1 + (complete_until(rec) - scenes[0].start_timestamp_ns) // 5_000_000_000
