"""Stereo video datasets in the GenVR-duo layout: build from renders, read, validate.

See ``docs/stereo.md`` for the source schema and the on-disk format.
"""

from __future__ import annotations

from dataset_devkit.stereo.clip import DEFAULT_MAX_ITEM_BYTES, Clip
from dataset_devkit.stereo.errors import (
    DepthNotInstalledError,
    DepthOverflowError,
    OutOfRangeError,
    SourceError,
    SourceIssues,
)
from dataset_devkit.stereo.reader import StereoDataset, StereoSample
from dataset_devkit.stereo.reader_check import reader_validation
from dataset_devkit.stereo.sample import make_sample_source
from dataset_devkit.stereo.spec import FORMAT_VERSION
from dataset_devkit.stereo.validate import StereoValidationReport, validate_stereo
from dataset_devkit.stereo.writer import BuildResult, build_stereo_dataset

__all__ = [
    "DEFAULT_MAX_ITEM_BYTES",
    "FORMAT_VERSION",
    "BuildResult",
    "Clip",
    "DepthNotInstalledError",
    "DepthOverflowError",
    "OutOfRangeError",
    "SourceError",
    "SourceIssues",
    "StereoDataset",
    "StereoSample",
    "StereoValidationReport",
    "build_stereo_dataset",
    "make_sample_source",
    "reader_validation",
    "validate_stereo",
]
