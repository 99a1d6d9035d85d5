"""Stage 3, export: immutable evidence to a staging dataroot in the official nuScenes layout.

In: an :class:`~dataset_devkit.nuscenes.evidence.Evidence` directory and its config. Out: a
staging dataroot with the 13 ``v1.0-trainval`` tables (:mod:`.tables`), the frame JPEGs
(:mod:`.images`) and the ``mz_extensions`` documents (:mod:`.extensions`), written through
no-follow directory descriptors. Contract: the official table records and the extension
records of :mod:`dataset_devkit.nuscenes.spec`. Imports ingest/evidence, never validation.
"""

from __future__ import annotations

from dataset_devkit.nuscenes.export.dataset import ExportResult, export_dataset, scaffold_png

__all__ = ["ExportResult", "export_dataset", "scaffold_png"]
