"""nuScenes export: recordings (MCAP, decoded video) to an official ``v1.0-trainval`` dataroot.

``build_evidence`` ingests recordings and writes the immutable evidence (scenes, 2 Hz grid,
validity, selection, splits, tags, labels, frame JPEGs); ``export_dataset`` turns evidence
into a staging dataroot that nuscenes-devkit 1.2.0 loads. The on-disk contract is
:mod:`dataset_devkit.nuscenes.spec`.
"""

from __future__ import annotations

from dataset_devkit.nuscenes.evidence import Evidence, build_evidence, read_evidence
from dataset_devkit.nuscenes.export import ExportResult, export_dataset
from dataset_devkit.nuscenes.ingest import RecordingSource, read_decoded, read_mcap
from dataset_devkit.nuscenes.spec import (
    ExportConfig,
    ImageConfig,
    IngestConfig,
    PipelineConfig,
    ScenarioConfig,
    SelectionRule,
    SplitConfig,
)

__all__ = [
    "Evidence",
    "ExportConfig",
    "ExportResult",
    "ImageConfig",
    "IngestConfig",
    "PipelineConfig",
    "RecordingSource",
    "ScenarioConfig",
    "SelectionRule",
    "SplitConfig",
    "build_evidence",
    "export_dataset",
    "read_decoded",
    "read_evidence",
    "read_mcap",
]
