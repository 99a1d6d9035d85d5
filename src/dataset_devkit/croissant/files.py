"""The Croissant document of any tree with a content manifest (a kind we do not model).

Top-level files are ``FileObject``s; the files of each top-level directory are one
``FileSet`` per media type; the record set ``files`` lists every file with its size and
SHA-256 from the content manifest, which mlcroissant reads.
"""

from __future__ import annotations

from pathlib import Path

from dataset_devkit.croissant._nodes import (
    Node,
    dataset,
    file_set,
    manifest_files_record_set,
    media_type,
    top_level_file_objects,
)
from dataset_devkit.croissant._tree import TreeFiles
from dataset_devkit.croissant.spec import CroissantOptions

__all__ = ["files_document"]


def files_document(root: Path, files: TreeFiles, options: CroissantOptions) -> Node:
    """The Croissant document of the tree at *root*."""
    groups: dict[tuple[str, str], set[str]] = {}
    for path in files.files:
        if "/" in path and path != files.source:
            top = path.split("/", 1)[0]
            name = path.rsplit("/", 1)[-1]
            suffix = name[name.rfind(".") :] if "." in name else ""
            groups.setdefault((top, media_type(path)), set()).add(suffix)
    distribution = top_level_file_objects(files, options, {})
    for (top, media), suffixes in sorted(groups.items()):
        includes = sorted(f"{top}/*{suffix}" if suffix else f"{top}/*" for suffix in suffixes)
        distribution.append(
            file_set(f"{top}-{media.rsplit('/', 1)[-1]}-files", includes, media,
                     f"Files under {top}/ ({media}); each file's SHA-256 is in "
                     f"{files.source}.")
        )  # fmt: skip
    description = (
        f"A tree of {len(files.files)} files published by dataset-devkit with a content "
        f"manifest. Root hash {files.root_sha256}."
    )
    return dataset(
        options,
        name=root.name,
        description=description,
        keywords=["dataset-devkit"],
        files=files,
        distribution=distribution,
        record_sets=[manifest_files_record_set(files)],
    )
