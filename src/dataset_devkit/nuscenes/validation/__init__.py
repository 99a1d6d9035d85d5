"""Stage 4, validation: every check of a staging or published dataroot, all issues at once.

In: a dataroot directory (staging or published). Out: a
:class:`~dataset_devkit.nuscenes.validation.dataroot.ValidationReport`, or
:class:`~dataset_devkit.nuscenes.validation.dataroot.DatarootInvalid` listing every issue.
One module per family of rules: :mod:`.io` (bounded no-follow reads), :mod:`.schema` (field
types), :mod:`.tables` (the 13 tables), :mod:`.chains` and :mod:`.graph` (links between
rows), :mod:`.images`, :mod:`.extensions`, :mod:`.evidence` (re-derivation), :mod:`.result`
(``validation.json``), :mod:`.loader` (the official nuscenes-devkit loader), :mod:`.summary`
(``inspect``); :mod:`.dataroot` runs them. Contract: :mod:`dataset_devkit.nuscenes.spec`.
Imports earlier stages only (evidence for re-derivation), never sdk or build.
"""

from __future__ import annotations

from dataset_devkit.nuscenes.validation.dataroot import (
    DatarootInvalid,
    ValidationReport,
    validate_dataroot,
)
from dataset_devkit.nuscenes.validation.summary import DatarootSummary, inspect_dataroot

__all__ = [
    "DatarootInvalid",
    "DatarootSummary",
    "ValidationReport",
    "inspect_dataroot",
    "validate_dataroot",
]
