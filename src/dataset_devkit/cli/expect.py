"""A command given the wrong thing says what it was given and what it takes, in one line.

``store verify`` on a stereo dataset used to list the store files it lacks, and ``stereo
validate`` on a VIN store five stereo files: true, but the user's mistake is the command,
not the tree. The kind detector that ``validate PATH`` uses tells which tree it is, and the
message names the command for it. A file where a tree belongs (``STORE/manifest.json``) is
named as a file, with the tree that holds it when there is one; a path that does not exist
is named as such. A tree of no known kind (a damaged one) goes on to the command's own
checks, which list what is wrong with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from dataset_devkit.errors import ConfigError, DevkitError, MissingPathError
from dataset_devkit.kinds import TreeKind, detect_tree

__all__ = ["CHECKED_BY", "refuse_any_kind", "refuse_other_kind"]

#: The command that checks each kind of tree.
CHECKED_BY = {
    TreeKind.RELEASE: "dataset-devkit release verify",
    TreeKind.RESTORED_RELEASE: "dataset-devkit validate",
    TreeKind.NUSCENES_DATAROOT: "dataset-devkit validate",
    TreeKind.STEREO_DATASET: "dataset-devkit stereo validate",
    TreeKind.VIN_STORE: "dataset-devkit store verify",
    TreeKind.CONTENT_MANIFEST_TREE: "dataset-devkit verify",
}


def _kind_of(path: Path) -> TreeKind | None:
    try:
        return detect_tree(path).kind
    except DevkitError:
        return None


def _refuse_missing_or_file(path: Path, wanted: str, accepted: set[TreeKind], command: str) -> None:
    if not os.path.lexists(path):
        raise MissingPathError(f"no such {wanted}", path=path)
    if path.is_dir():
        return
    holder = path.absolute().parent
    held_by = _kind_of(holder)
    if held_by in accepted:
        raise ConfigError(
            f"{path}: a file of the {held_by} {holder}, not the tree itself; "
            f"give its folder: dataset-devkit {command} {holder}",
            key="path",
        )
    raise ConfigError(f"{path}: expected a {wanted} (a directory), found a file", key="path")


def refuse_other_kind(
    path: Path, wanted: str, accepted: Iterable[TreeKind], *, command: str
) -> None:
    """Raise unless *path* is a directory that is not a tree of a kind outside *accepted*.

    *command* (``"store verify"``) is the command that runs, for the folder it suggests.
    """
    kinds = set(accepted)
    _refuse_missing_or_file(path, wanted, kinds, command)
    found = _kind_of(path)
    if found is None or found in kinds:
        return  # no known kind: the command's checks say what is wrong with it
    raise ConfigError(
        f"{path}: not a {wanted}, this is a {found.value} "
        f"(check it with: {CHECKED_BY[found]} {path})",
        key="path",
    )


def refuse_any_kind(path: Path, wanted: str, takes: str) -> None:
    """Raise when *path* is a tree dataset-devkit wrote: the command reads something else.

    *takes* says what the command reads instead (``"the folder a renderer exported"``).
    """
    found = _kind_of(path) if path.is_dir() else None
    if found is not None:
        raise ConfigError(
            f"{path}: not a {wanted}, this is a {found.value} ({takes}; check this one "
            f"with: {CHECKED_BY[found]} {path})",
            key="path",
        )
