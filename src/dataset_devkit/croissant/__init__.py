"""Croissant (MLCommons) metadata for every kind of tree dataset-devkit writes.

``croissant_document(tree)`` describes a VIN store, a nuScenes dataroot, a stereo
dataset, a release directory (its packages and the tree they restore) or any tree with a
content manifest as a Croissant 1.1 JSON-LD document: ``FileObject``s with the SHA-256
the tree's own records give, ``FileSet``s for homogeneous files, and record sets that
mlcroissant loads. ``write_croissant(tree, out)`` writes it beside the tree. No system
imports this package. See ``docs/croissant.md``.
"""

from __future__ import annotations

from dataset_devkit.croissant.api import CroissantDocument, croissant_document, write_croissant
from dataset_devkit.croissant.spec import CONFORMS_TO, CROISSANT_FILE_NAME, CroissantOptions

__all__ = [
    "CONFORMS_TO",
    "CROISSANT_FILE_NAME",
    "CroissantDocument",
    "CroissantOptions",
    "croissant_document",
    "write_croissant",
]
