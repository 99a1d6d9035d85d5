"""The build service's default exporter: recordings -> evidence -> staging dataroot.

Evidence is immutable: when ``paths.evidence_dir`` already holds evidence (an earlier build of
the same recordings), it is verified and reused, and ``export_dataset`` refuses it unless its
recorded config and namespace equal this build's. Otherwise it is built from the recordings.
"""

from __future__ import annotations

import os
from pathlib import Path

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes.config import BuildConfig
from dataset_devkit.nuscenes.evidence import build_evidence, read_evidence
from dataset_devkit.nuscenes.export import export_dataset
from dataset_devkit.nuscenes.validation import Progress

__all__ = ["export_from_recordings"]


def export_from_recordings(config: BuildConfig, staging: Path, progress: Progress) -> None:
    """Build or reuse the evidence of *config*, then export it into *staging*."""
    reused = os.path.lexists(config.evidence_dir)
    if reused:
        evidence = read_evidence(config.evidence_dir)
    else:
        evidence = build_evidence(
            config.sources.paths,
            config.pipeline,
            config.evidence_dir,
            labels=config.sources.labels,
            progress=progress,
        )
    found = evidence.document.source_type
    if found != config.sources.type:
        raise ConfigError(
            f"sources.type is {config.sources.type!r} but the recordings are {found!r}",
            key="sources.type",
        )
    try:
        export_dataset(staging, evidence, config=config.pipeline, progress=progress)
    except ConfigError as exc:
        if not reused:
            raise
        # The evidence of an earlier build with another config: say where it is and what to do.
        raise ConfigError(
            f"{config.evidence_dir}: existing evidence was built with another config ({exc}); "
            "remove that directory or set paths.evidence_dir to a new one",
            key=exc.key,
        ) from None
