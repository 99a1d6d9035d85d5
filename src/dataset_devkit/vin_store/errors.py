"""Errors specific to the VIN offline store, each a subclass of the devkit tree.

::

    FormatError
    └── VinOfflineFormatError            a store file does not match the format
        ├── UnsupportedVersionError      manifest version this code cannot read
        └── InventoryError               manifest, shards, index or splits disagree
    ConfigError
    └── VinOfflineSchemaError            samples disagree on block names, dtypes or shapes
    NotFoundError
    └── SampleIndexNotFoundError         a sample index or block the store does not hold
        └── PositionOutOfRangeError      a position outside the split (also an IndexError)
    DevkitError
    └── SampleSourceError                the user's sample function raised
"""

from __future__ import annotations

from dataset_devkit.errors import ConfigError, DevkitError, FormatError, NotFoundError

__all__ = [
    "InventoryError",
    "PositionOutOfRangeError",
    "SampleIndexNotFoundError",
    "SampleSourceError",
    "UnsupportedVersionError",
    "VinOfflineFormatError",
    "VinOfflineSchemaError",
]


class VinOfflineFormatError(FormatError):
    """A file of a VIN offline store does not match its on-disk format."""


class UnsupportedVersionError(VinOfflineFormatError):
    """The manifest declares a format version this code does not read."""


class InventoryError(VinOfflineFormatError):
    """The manifest's flags, shard blocks, offsets, index or splits are inconsistent."""


class VinOfflineSchemaError(ConfigError):
    """Samples given to the builder disagree on block names, dtypes or shapes."""


class SampleIndexNotFoundError(NotFoundError):
    """A sample index, position or block name the store does not hold."""


class PositionOutOfRangeError(SampleIndexNotFoundError, IndexError):
    """A position outside the split or the store.

    Also an :class:`IndexError`, so ``for sample in reader`` ends after the last sample and
    samplers stop as they expect.
    """


class SampleSourceError(DevkitError):
    """The user's sample function (``module:function`` of ``store build``) failed.

    Not a :class:`ConfigError`: the shards finished before the failure are kept, so the
    same build run again after a fix reuses them.
    """
