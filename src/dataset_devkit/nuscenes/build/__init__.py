"""The build service: build.toml → ingest → evidence → export → validation → publish.

In: a :class:`~dataset_devkit.nuscenes.config.BuildConfig` (recordings, labels, output
paths). Out: a read-only published dataroot with its content manifest and root hash
(:class:`~.service.BuildResult`). :mod:`.export` runs ingest, evidence and export into a
sibling staging directory, :mod:`.service` orders the stages and reports progress,
:mod:`.publish` finalizes, seals and renames atomically. Contract:
:mod:`dataset_devkit.nuscenes.config` and :mod:`dataset_devkit.nuscenes.spec`. Top of the
pipeline: it may import every stage, and no stage imports it.
"""

from __future__ import annotations

from dataset_devkit.nuscenes.build.publish import PublishedDataroot, publish_dataroot
from dataset_devkit.nuscenes.build.service import BUILD_STAGES, BuildResult, build_dataset

__all__ = [
    "BUILD_STAGES",
    "BuildResult",
    "PublishedDataroot",
    "build_dataset",
    "publish_dataroot",
]
