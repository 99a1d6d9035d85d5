"""``croissant_document(tree)``: tell the kind of tree, describe it, write it elsewhere.

A published tree is read-only and hashed: the document is written beside it, never into
it, so describing a tree changes no byte and no root hash of it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_devkit.croissant._nodes import missing_properties
from dataset_devkit.croissant._tree import TreeFiles
from dataset_devkit.croissant.spec import CroissantOptions
from dataset_devkit.errors import ConfigError, DestinationExistsError
from dataset_devkit.integrity import SafeDir, pretty_json
from dataset_devkit.integrity.atomic import remove_stale_partials, write_atomic
from dataset_devkit.kinds import (
    NUSCENES_TABLE,
    STEREO_MARKERS,
    VIN_MARKERS,
    TreeKind,
    detect_tree,
)

__all__ = ["CroissantDocument", "croissant_document", "write_croissant"]


@dataclass(frozen=True, slots=True)
class CroissantDocument:
    """A tree's Croissant document and what it could not say.

    Attributes
    ----------
    kind
        The kind of tree described (a restored release: the kind of what was restored).
    root
        The tree's root.
    document
        The JSON-LD document.
    missing
        Dataset properties the specification requires that no option gave (``license``,
        ``url``, ``creator``, ``datePublished``): add them before publishing it.
    """

    kind: TreeKind
    root: Path
    document: dict[str, Any]
    missing: tuple[str, ...]

    @property
    def root_sha256(self) -> str | None:
        """The described tree's root hash (a release: the tree its packages restore)."""
        identifier = self.document.get("identifier")
        if isinstance(identifier, str) and identifier.startswith("sha256:"):
            return identifier.removeprefix("sha256:")
        return None

    def to_bytes(self) -> bytes:
        """The canonical bytes: sorted keys, 2-space indent, UTF-8, final newline."""
        return pretty_json(self.document)


def _content_kind(root: Path) -> TreeKind:
    """What a restored tree holds, told by the same markers as :func:`detect_tree`."""
    names = {entry.name for entry in root.iterdir()}
    if any(n.startswith("v1.0-") and (root / n / NUSCENES_TABLE).is_file() for n in names):
        return TreeKind.NUSCENES_DATAROOT
    if all(marker in names for marker in STEREO_MARKERS):
        return TreeKind.STEREO_DATASET
    if all(marker in names for marker in VIN_MARKERS):
        return TreeKind.VIN_STORE
    return TreeKind.CONTENT_MANIFEST_TREE


def _describe(kind: TreeKind, root: Path, version: str | None, options: CroissantOptions) -> Any:
    # Imported per kind: describing a VIN store must not need the nuScenes extra.
    if kind is TreeKind.RELEASE:
        from dataset_devkit.croissant.release import release_document

        return release_document(root, options)
    files = TreeFiles.from_content_manifest(root)
    if kind is TreeKind.VIN_STORE:
        from dataset_devkit.croissant.vin_store import vin_store_document

        return vin_store_document(root, files, options)
    if kind is TreeKind.STEREO_DATASET:
        from dataset_devkit.croissant.stereo import stereo_document

        return stereo_document(root, files, options)
    if kind is TreeKind.NUSCENES_DATAROOT:
        from dataset_devkit.croissant.nuscenes import nuscenes_document

        return nuscenes_document(root, files, options, version=version or "v1.0-trainval")
    from dataset_devkit.croissant.files import files_document

    return files_document(root, files, options)


def croissant_document(
    tree: str | Path, options: CroissantOptions | None = None
) -> CroissantDocument:
    """Describe the tree at *tree* (any kind dataset-devkit writes) as Croissant.

    FileObjects carry the size and SHA-256 the tree's own records give (content manifest;
    a release's ``SHA256SUMS``); nothing but the content manifest itself is hashed. The
    same tree and *options* give the same bytes.

    Raises
    ------
    UnknownTreeError
        *tree* is no kind of tree dataset-devkit writes.
    FormatError
        A record of the tree is missing, damaged, or names a file its manifest lacks.
    """
    options = options or CroissantOptions()
    found = detect_tree(tree)
    kind = found.kind
    if kind is TreeKind.RESTORED_RELEASE:
        kind = _content_kind(found.root)
    version = found.version
    if version is None and kind is TreeKind.NUSCENES_DATAROOT:
        version = next(
            (n.name for n in sorted(found.root.iterdir()) if n.name.startswith("v1.0-")), None
        )
    document = _describe(kind, found.root, version, options)
    return CroissantDocument(kind, found.root, document, missing_properties(options))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def write_croissant(
    tree: str | Path, out: str | Path, options: CroissantOptions | None = None
) -> CroissantDocument:
    """Write the Croissant document of *tree* to the new file *out*, outside the tree.

    A re-run that would write the same bytes finds them there and succeeds; an existing
    *out* with other bytes is never replaced.

    Raises
    ------
    ConfigError
        *out* is inside the tree (a published tree is never modified).
    DestinationExistsError
        *out* exists with other content.
    """
    described = croissant_document(tree, options)
    target = Path(out).absolute()
    root = described.root.resolve()
    if _inside(target.parent.resolve() / target.name, root):
        raise ConfigError(
            f"{target}: inside the tree {root}; write the Croissant file elsewhere (a "
            "published tree is never modified), e.g. beside it",
            key="out",
        )
    data = described.to_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    with SafeDir.open(target.parent) as parent:
        remove_stale_partials(parent, target.name)
        existing = None
        with contextlib.suppress(FileNotFoundError):
            existing = parent.read_bytes(target.name)
        if existing is not None:
            if existing == data:
                return described
            raise DestinationExistsError(
                f"{target}: exists with other content; remove it or choose another --out"
            )
        write_atomic(parent, target.name, data)
    return described
