"""Which kind of tree a path is: the shared detector (:mod:`dataset_devkit.kinds`, also
used by ``validate``), named by what preview draws."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from dataset_devkit.kinds import DetectedTree, TreeKind, detect_tree

__all__ = ["Kind", "detect", "detect_kind"]


class Kind(StrEnum):
    """The kinds of tree ``preview`` can draw, named as everywhere else (``--json``
    reports, ``validate``): each value is its :class:`~dataset_devkit.kinds.TreeKind`'s."""

    NUSCENES = TreeKind.NUSCENES_DATAROOT.value
    STEREO = TreeKind.STEREO_DATASET.value
    VIN_STORE = TreeKind.VIN_STORE.value
    RELEASE = TreeKind.RELEASE.value
    RESTORED = TreeKind.RESTORED_RELEASE.value
    MANIFEST = TreeKind.CONTENT_MANIFEST_TREE.value


_FROM_TREE = {
    TreeKind.NUSCENES_DATAROOT: Kind.NUSCENES,
    TreeKind.STEREO_DATASET: Kind.STEREO,
    TreeKind.VIN_STORE: Kind.VIN_STORE,
    TreeKind.RELEASE: Kind.RELEASE,
    TreeKind.RESTORED_RELEASE: Kind.RESTORED,
    TreeKind.CONTENT_MANIFEST_TREE: Kind.MANIFEST,
}


def detect(path: str | Path) -> tuple[Kind, Path]:
    """The kind of the tree at *path* and its root (a restored tree's parent names the tree)."""
    found: DetectedTree = detect_tree(path)
    return _FROM_TREE[found.kind], found.root


def detect_kind(path: str | Path) -> Kind:
    """The kind of the tree at *path*; a clear error when it is none we know."""
    return detect(path)[0]
