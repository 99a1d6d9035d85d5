"""Peak memory of ingest, evidence and export stays flat in the number of sweep frames.

Drives are written with small MCAP chunks so that even short ones read like long recordings,
many chunks long (a chunk is read whole). The peak traced memory (tracemalloc) of evidence
plus export is compared between two drives of the same length and rig, one filmed four
times as fast: every extra frame is a sweep, read, indexed and recorded in the evidence but
never exported, so it may cost only its capture time.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest

from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig, build_evidence, export_dataset
from dataset_devkit.nuscenes.ingest import source
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap

#: Peak bytes allowed per extra sweep frame: its capture time, an int kept in the evidence
#: (about 40 bytes per copy; a second copy lives while the evidence is built).
_PER_SWEEP_FRAME = 150


def _peak(tmp: Path, name: str, duration_s: float, fps: float) -> tuple[int, int, int]:
    """Peak traced bytes of build_evidence + export_dataset, samples exported, frames read."""
    drive = SampleDrive(
        cameras=("cam_front", "cam_back"), duration_s=duration_s, fps=fps, width=16, height=8
    )
    mcap = write_sample_mcap(tmp / f"{name}.mcap", drive, chunk_size=8192)
    config = PipelineConfig(namespace="mem", scenario=ScenarioConfig(scene_duration_s=20.0))
    gc.collect()
    tracemalloc.start()
    try:
        evidence = build_evidence([mcap], config, tmp / f"evidence-{name}")
        result = export_dataset(tmp / f"staging-{name}", evidence, workers=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, result.table_counts["sample"], int(duration_s * fps) * len(drive.cameras)


def test_peak_memory_is_flat_in_sweep_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fixed-size buffers (the 1 MiB read block that hashes a recording) hold a whole short
    # test drive: made small, so that what grows with the drive is what grows per frame.
    monkeypatch.setattr(source, "_BLOCK", 16 * 1024)
    _peak(tmp_path, "warm-up", 20.0, 6.0)  # imports and caches out of the figures
    base, samples, frames = _peak(tmp_path, "base", 40.0, 6.0)
    fast, fast_samples, fast_frames = _peak(tmp_path, "fast", 40.0, 24.0)
    assert fast_samples == samples  # only sweeps were added
    per_frame = (fast - base) / (fast_frames - frames)
    assert per_frame < _PER_SWEEP_FRAME, (
        f"{per_frame:.0f} B per sweep frame: {base:,} B at {frames} frames, "
        f"{fast:,} B at {fast_frames} frames ({samples} samples each)"
    )
