"""A system's command given another system's tree says what the tree is, in one line.

``store verify`` on a stereo dataset used to list the store files it lacks, and ``stereo
validate`` on a VIN store five stereo files: true, but the user's mistake is the command,
not the tree. The kind detector that ``validate PATH`` uses tells which tree it is, and the
message names the command for it. A tree of no known kind (a damaged one) goes on to the
command's own checks, which list what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dataset_devkit.errors import ConfigError, DevkitError
from dataset_devkit.kinds import TreeKind, detect_tree

__all__ = ["refuse_other_kind"]

#: The command that checks each kind of tree.
CHECKED_BY = {
    TreeKind.RELEASE: "dataset-devkit release verify",
    TreeKind.RESTORED_RELEASE: "dataset-devkit validate",
    TreeKind.NUSCENES_DATAROOT: "dataset-devkit validate",
    TreeKind.STEREO_DATASET: "dataset-devkit stereo validate",
    TreeKind.VIN_STORE: "dataset-devkit store verify",
    TreeKind.CONTENT_MANIFEST_TREE: "dataset-devkit verify",
}


def refuse_other_kind(path: Path, wanted: str, accepted: Iterable[TreeKind]) -> None:
    """Raise a :class:`ConfigError` when *path* is a tree of a kind not in *accepted*."""
    try:
        found = detect_tree(path)
    except DevkitError:  # missing, a file, or no known kind: the command's checks say why
        return
    if found.kind in set(accepted):
        return
    raise ConfigError(
        f"{path}: not a {wanted}, this is a {found.kind.value} "
        f"(check it with: {CHECKED_BY[found.kind]} {path})",
        key="path",
    )
