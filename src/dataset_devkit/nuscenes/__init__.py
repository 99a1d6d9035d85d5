"""nuScenes export: recordings (MCAP, decoded video) to an official ``v1.0-trainval`` dataroot.

The folders are the pipeline, in the order the data flows; imports run one way (a stage never
imports a later one, ``tests/test_architecture.py`` checks it):

- :mod:`.ingest` — recordings to frames, poses and calibrations;
- :mod:`.evidence` — ``build_evidence`` writes the immutable evidence (scenes, 2 Hz grid,
  validity, selection, splits, tags, labels, frame JPEGs);
- :mod:`.export` — ``export_dataset`` turns evidence into a staging dataroot that
  nuscenes-devkit 1.2.0 loads (13 tables, images, extensions);
- :mod:`.validation` — ``validate_dataroot`` and ``inspect_dataroot`` check a dataroot;
- :mod:`.sdk` — ``Dataset``, the read-only SDK;
- :mod:`.build` — ``build_dataset`` runs the whole pipeline from a TOML config
  (:mod:`.config`) through validation and atomic publication.

:mod:`.common` holds leaf helpers (tokens, geometry, JPEG). The on-disk contract is
:mod:`dataset_devkit.nuscenes.spec`.
"""

from __future__ import annotations

from dataset_devkit.nuscenes.build import build_dataset, publish_dataroot
from dataset_devkit.nuscenes.config import BuildConfig, load_build_config
from dataset_devkit.nuscenes.evidence import Evidence, build_evidence, read_evidence
from dataset_devkit.nuscenes.export import ExportResult, export_dataset
from dataset_devkit.nuscenes.ingest import RecordingSource, read_decoded, read_mcap
from dataset_devkit.nuscenes.sdk import Dataset, MalformedDataset
from dataset_devkit.nuscenes.spec import (
    ExportConfig,
    ImageConfig,
    IngestConfig,
    PipelineConfig,
    ScenarioConfig,
    SelectionRule,
    SplitConfig,
)
from dataset_devkit.nuscenes.validation import inspect_dataroot, validate_dataroot

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
