"""Stage 6, build: recordings to a validated, published, read-only dataroot in one call.

In: a :class:`~dataset_devkit.nuscenes.config.BuildConfig`. Out: ``output_dir/v1.0-trainval``,
validated, checked by the official loader, sealed and atomically published
(:mod:`.service`, :mod:`.publish`; :mod:`.export` runs ingest, evidence and export). Sits on
top of every earlier stage; never imported by them or by the SDK.
"""

from __future__ import annotations

from dataset_devkit.nuscenes.build.publish import PublishedDataroot, publish_dataroot
from dataset_devkit.nuscenes.build.service import BuildResult, build_dataset

__all__ = ["BuildResult", "PublishedDataroot", "build_dataset", "publish_dataroot"]
