"""nuScenes export: recordings (MCAP, decoded video) to an official ``v1.0-trainval`` dataroot.

``build_evidence`` ingests recordings and writes the immutable evidence (scenes, 2 Hz grid,
validity, selection, splits, tags, labels, frame JPEGs); ``export_dataset`` turns evidence
into a staging dataroot that nuscenes-devkit 1.2.0 loads; ``build_dataset`` runs the whole
pipeline from a TOML config through validation and atomic publication; ``validate_dataroot``
and ``inspect_dataroot`` revalidate a published dataroot; ``Dataset`` is the read-only SDK.
The on-disk contract is :mod:`dataset_devkit.nuscenes.spec`.
"""

from __future__ import annotations

from dataset_devkit.nuscenes.config import BuildConfig, load_build_config
from dataset_devkit.nuscenes.evidence import Evidence, build_evidence, read_evidence
from dataset_devkit.nuscenes.export import ExportResult, export_dataset
from dataset_devkit.nuscenes.ingest import RecordingSource, read_decoded, read_mcap
from dataset_devkit.nuscenes.publish import publish_dataroot
from dataset_devkit.nuscenes.sdk import Dataset
from dataset_devkit.nuscenes.sdk_load import MalformedDataset
from dataset_devkit.nuscenes.service import build_dataset
from dataset_devkit.nuscenes.spec import (
    ExportConfig,
    ImageConfig,
    IngestConfig,
    PipelineConfig,
    ScenarioConfig,
    SelectionRule,
    SplitConfig,
)
from dataset_devkit.nuscenes.validation import validate_dataroot
from dataset_devkit.nuscenes.validation_summary import inspect_dataroot

__all__ = [
    "BuildConfig",
    "Dataset",
    "Evidence",
    "ExportConfig",
    "ExportResult",
    "ImageConfig",
    "IngestConfig",
    "MalformedDataset",
    "PipelineConfig",
    "RecordingSource",
    "ScenarioConfig",
    "SelectionRule",
    "SplitConfig",
    "build_dataset",
    "build_evidence",
    "export_dataset",
    "inspect_dataroot",
    "load_build_config",
    "publish_dataroot",
    "read_decoded",
    "read_evidence",
    "read_mcap",
    "validate_dataroot",
]
