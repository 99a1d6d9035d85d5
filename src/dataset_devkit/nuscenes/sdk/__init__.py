"""The read-only SDK: a validated dataroot and its extensions as typed, copy-safe lookups.

In: a published (or staging) dataroot. Out: a :class:`~.dataset.Dataset` whose indexes are
built once by :mod:`.load` after the full validation of :mod:`..validation`; a dataroot that
fails it raises :class:`~.load.MalformedDataset`. Contract: the records of
:mod:`dataset_devkit.nuscenes.spec`. Sits on top of validation; nothing below imports it.
"""

from __future__ import annotations

from dataset_devkit.nuscenes.sdk.dataset import Dataset
from dataset_devkit.nuscenes.sdk.load import MalformedDataset

__all__ = ["Dataset", "MalformedDataset"]
