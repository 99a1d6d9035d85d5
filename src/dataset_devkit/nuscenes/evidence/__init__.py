"""Evidence stages (the seed's Tasks 5-7): scenes, selection, splits, tags, labels."""

from __future__ import annotations

from dataset_devkit.nuscenes.evidence.derive import check_config, derive
from dataset_devkit.nuscenes.evidence.reader import Evidence, read_evidence, recheck_evidence
from dataset_devkit.nuscenes.evidence.records import EvidenceDocument
from dataset_devkit.nuscenes.evidence.writer import (
    build_evidence,
    config_fingerprint,
    open_recording,
)

__all__ = [
    "Evidence",
    "EvidenceDocument",
    "build_evidence",
    "check_config",
    "config_fingerprint",
    "derive",
    "open_recording",
    "read_evidence",
    "recheck_evidence",
]
