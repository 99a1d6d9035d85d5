"""Memory of ingest, evidence and export stays flat in the number of sweep frames.

Two drives of the same length and rig, so the same key-frame samples, one filmed four times
as fast: every extra frame is a sweep that is read, indexed and recorded in the evidence but
never exported. The peak traced memory (tracemalloc) of the whole pipeline may grow only a
few dozen bytes per extra frame (its capture time in the evidence); per-frame Python
objects (dicts, tuples, wrappers) cost hundreds.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig, build_evidence, export_dataset
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap

#: Peak bytes allowed per extra sweep frame. The capture time is kept as an int in the
#: evidence (about 40 bytes per copy, a copy or two alive at once); the old per-frame
#: dict/tuple index and whole-document JSON encoding cost over 300.
_PER_SWEEP_FRAME = 0


def _peak(tmp: Path, fps: float) -> tuple[int, int, int]:
    drive = SampleDrive(
        cameras=("cam_front", "cam_back"), duration_s=60.0, fps=fps, width=16, height=8
    )
    # Small chunks: both drives span many, as long recordings do (a chunk is read whole).
    mcap = write_sample_mcap(tmp / f"drive-{fps:g}.mcap", drive, chunk_size=8192)
    config = PipelineConfig(namespace="mem", scenario=ScenarioConfig(scene_duration_s=20.0))
    gc.collect()
    tracemalloc.start()
    try:
        evidence = build_evidence([mcap], config, tmp / f"evidence-{fps:g}")
        result = export_dataset(tmp / f"staging-{fps:g}", evidence, workers=1)
        del evidence
        gc.collect()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, result.table_counts["sample"], int(drive.duration_s * fps) * 2


def test_peak_memory_does_not_grow_with_sweep_frames(tmp_path: Path) -> None:
    slow_peak, slow_samples, slow_frames = _peak(tmp_path, 6.0)
    fast_peak, fast_samples, fast_frames = _peak(tmp_path, 24.0)
    assert slow_samples == fast_samples  # same key-frame samples: only sweeps were added
    per_frame = (fast_peak - slow_peak) / (fast_frames - slow_frames)
    assert per_frame < _PER_SWEEP_FRAME, (
        f"peak traced memory grew {per_frame:.0f} bytes per sweep frame "
        f"({slow_peak:,} B at {slow_frames} frames, {fast_peak:,} B at {fast_frames})"
    )
