"""Which kind of dataset-devkit tree a path is, told by the on-disk markers each format writes.

``dataset-devkit validate PATH`` and ``inspect PATH`` use this to run the right checks.
Detection reads names only (and the one small restore-state record), never the payload,
and imports no system: a user with only the nuScenes extra can still be told that a tree
is a VIN store. The marker names are the systems' own constants; a test keeps them equal.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.errors import ConfigError, MissingPathError
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, path_argument
from dataset_devkit.integrity.location import locate_manifest

__all__ = ["DetectedTree", "TreeKind", "UnknownTreeError", "detect_content", "detect_tree"]


class TreeKind(enum.StrEnum):
    """The kinds of tree dataset-devkit writes, as ``--json`` reports name them."""

    RELEASE = "release"
    RESTORED_RELEASE = "restored-release"
    NUSCENES_DATAROOT = "nuscenes-dataroot"
    STEREO_DATASET = "stereo-dataset"
    VIN_STORE = "vin-store"
    CONTENT_MANIFEST_TREE = "content-manifest-tree"


class UnknownTreeError(ConfigError):
    """A directory that is none of the kinds; the message says what each kind would need."""


@dataclass(frozen=True, slots=True)
class DetectedTree:
    """A detected tree: its kind, its root, and the markers that told (for messages)."""

    kind: TreeKind
    root: Path
    markers: tuple[str, ...]
    #: nuScenes: the table version directory found (``v1.0-trainval``); else ``None``.
    version: str | None = None


# Markers, as the systems name them (tests/test_kinds.py checks each against its spec).
RELEASE_MARKERS = ("manifest.json", "files.jsonl", "unpack.py", "SHA256SUMS")
UNPACK_STATE_SUFFIX = ".unpack-state.json"
STEREO_MARKERS = ("genvr_i2s.jsonl", "loader_requirements.json", "release_manifest.json")
VIN_MARKERS = ("manifest.json", "sample_index.jsonl", "shards", "splits")
NUSCENES_TABLE = "scene.json"
NUSCENES_EXTENSIONS = "mz_extensions"

_NEEDS = {
    TreeKind.RELEASE: " + ".join(RELEASE_MARKERS),
    TreeKind.RESTORED_RELEASE: f"a sibling <name>{UNPACK_STATE_SUFFIX} written by unpack",
    TreeKind.NUSCENES_DATAROOT: f"a v1.0-*/{NUSCENES_TABLE} table directory",
    TreeKind.STEREO_DATASET: " + ".join(STEREO_MARKERS),
    TreeKind.VIN_STORE: " + ".join(VIN_MARKERS),
    TreeKind.CONTENT_MANIFEST_TREE: f"a {CONTENT_MANIFEST_NAME}",
}


def _has(names: set[str], markers: tuple[str, ...]) -> bool:
    return all(marker in names for marker in markers)


def _restore_state(root: Path) -> Path | None:
    """The ``<name>.unpack-state.json`` beside *root* naming *root*, if there is one."""
    state = root.parent / f"{root.name}{UNPACK_STATE_SUFFIX}"
    if not state.is_file() or state.is_symlink():
        return None
    try:
        record = json.loads(state.read_bytes()[: 1 << 20])
    except (OSError, ValueError):
        return state  # a damaged state still marks a restore; validate says what is wrong
    return state if isinstance(record, dict) and record.get("name") == root.name else None


def _content(root: Path, names: set[str]) -> DetectedTree | None:
    """The dataset kind the files of *root* itself make: nuScenes, stereo or VIN."""
    versions = sorted(
        n for n in names if n.startswith("v1.0-") and (root / n / NUSCENES_TABLE).is_file()
    )
    if versions:
        marker = f"{versions[0]}/{NUSCENES_TABLE}"
        return DetectedTree(TreeKind.NUSCENES_DATAROOT, root, (marker,), version=versions[0])
    if _has(names, STEREO_MARKERS):
        return DetectedTree(TreeKind.STEREO_DATASET, root, STEREO_MARKERS)
    if _has(names, VIN_MARKERS):
        return DetectedTree(TreeKind.VIN_STORE, root, VIN_MARKERS)
    return None


def detect_content(root: Path) -> DetectedTree | None:
    """The dataset a restored tree holds (a stereo dataset, a VIN store, a nuScenes
    dataroot), told by the same markers as :func:`detect_tree`; None for any other tree.

    :func:`detect_tree` calls a tree that ``unpack`` restored a restored release; this says
    what was restored, so that a preview of it can show its frames, not only its files.
    """
    root = Path(root)
    if not root.is_dir() or root.is_symlink():
        return None
    return _content(root, {entry.name for entry in root.iterdir()})


def detect_tree(path: Path | str) -> DetectedTree:
    """Tell which kind of tree *path* is, most specific kind first.

    A release directory, a restored release (the tree ``unpack`` wrote, told by its state
    record beside it; a directory holding exactly one such tree means that tree), a
    nuScenes dataroot, a stereo dataset, a VIN store, and last any tree with a content
    manifest (every published kind has one, so it is the fallback, not a first guess).

    Raises
    ------
    MissingPathError
        *path* does not exist.
    ConfigError
        *path* is not a directory.
    UnknownTreeError
        A directory of no known kind; the message lists what each kind needs.
    """
    root = path_argument(path, "path")
    if not root.is_dir() or root.is_symlink():
        if not os.path.lexists(root):
            raise MissingPathError("no such directory", path=root)
        found = "a symlink" if root.is_symlink() else "a file"
        raise ConfigError(f"{root}: expected a dataset directory, found {found}", key="path")
    names = {entry.name for entry in root.iterdir()}
    if _has(names, RELEASE_MARKERS):
        return DetectedTree(TreeKind.RELEASE, root, RELEASE_MARKERS)
    state = _restore_state(root)
    if state is not None:
        return DetectedTree(TreeKind.RESTORED_RELEASE, root, (f"../{state.name}",))
    restored = [n[: -len(UNPACK_STATE_SUFFIX)] for n in names if n.endswith(UNPACK_STATE_SUFFIX)]
    if len(restored) == 1 and restored[0] in names and _restore_state(root / restored[0]):
        inner = root / restored[0]
        return DetectedTree(
            TreeKind.RESTORED_RELEASE, inner, (f"{restored[0]}{UNPACK_STATE_SUFFIX}",)
        )
    content = _content(root, names)
    if content is not None:
        return content
    try:
        location = locate_manifest(root)
    except (ConfigError, ValueError, OSError):
        location = None
    if location is not None:
        return DetectedTree(TreeKind.CONTENT_MANIFEST_TREE, root, (location,))
    needs = "; ".join(f"not a {kind.value} (needs {what})" for kind, what in _NEEDS.items())
    raise UnknownTreeError(f"{root}: not a dataset-devkit tree: {needs}", key="path")
