"""The Croissant document of a release directory: its packages and the tree they restore.

Every file ``SHA256SUMS`` lists (the packages, ``manifest.json``, ``files.jsonl``,
``unpack.py``, ...) is a ``FileObject`` with that SHA-256; the restored tree is one
``FileSet`` per family, contained in the family's ``.tar`` packages (mlcroissant extracts
them). Records mlcroissant reads: ``files`` (every file of the restored tree, its package
and family, from ``files.jsonl``) and ``packages`` (from ``manifest.json``; one record
set per file read by JSON path: mlcroissant reads a file's paths as columns of one table).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from dataset_devkit.croissant._nodes import (
    Node,
    dataset,
    field,
    file_object,
    file_set,
    media_type,
    record_set,
    source,
)
from dataset_devkit.croissant._tree import FileFacts, TreeFiles
from dataset_devkit.croissant.spec import CroissantOptions
from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import SafeDir
from dataset_devkit.release import unpack
from dataset_devkit.release.spec import FILES_NAME, MANIFEST_NAME, SUMS_NAME

__all__ = ["release_document"]

_DESCRIPTIONS = {
    MANIFEST_NAME: "The release: families, packages (size, SHA-256), the tree's root hash.",
    FILES_NAME: "One row per file of the tree: path, size, SHA-256, family, package.",
    SUMS_NAME: "sha256sum lines of every other file of the release.",
    "unpack.py": "Restores and verifies the tree from the packages (Python 3.9+, stdlib).",
    "README.md": "How to download, verify and restore the release.",
    "validation.json": "What the packer checked before publishing the release.",
}
_ROW_FIELDS = (
    ("path", "sc:Text", "The file's path in the restored tree."),
    ("size", "cr:Int64", "Its size in bytes."),
    ("sha256", "sc:Text", "Its SHA-256, lowercase hex."),
    ("family", "sc:Text", "The family it belongs to (base, depth, ...)."),
    ("package", "sc:Text", "The package that holds it."),
)
_PACKAGE_FIELDS = (
    ("name", "sc:Text", "The package's path in the release."),
    ("family", "sc:Text", "Its family."),
    ("size", "cr:Int64", "Its size in bytes."),
    ("sha256", "sc:Text", "Its SHA-256."),
    ("member_count", "cr:Int64", "Files it holds."),
)


def _sums(root: Path) -> list[FileFacts]:
    """``SHA256SUMS`` as facts; sizes from the files themselves (never followed links)."""
    with SafeDir.open(root) as pinned:
        text = pinned.read_bytes(SUMS_NAME).decode("utf-8", "replace")
    facts = []
    for number, line in enumerate(text.splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise FormatError(
                f"line {number}: {line[:80]!r} is not '<sha256>  <path>'", path=root / SUMS_NAME
            )
        info = os.lstat(root / name)
        if not stat.S_ISREG(info.st_mode):
            raise FormatError(f"{name}: listed in {SUMS_NAME}, not a regular file", path=root)
        facts.append(FileFacts(name, info.st_size, digest))
    return facts


def _table(record: str, json_path: str, columns: tuple[tuple[str, str, str], ...]) -> list[Node]:
    return [
        field(record, name, kind, source(file_object=MANIFEST_NAME,
                                         json_path=f"{json_path}.{name}"), text)
        for name, kind, text in columns
    ]  # fmt: skip


def release_document(root: Path, options: CroissantOptions) -> Node:
    """The Croissant document of the release directory at *root*."""
    try:
        release = unpack.load_release(str(root))
    except unpack.UnpackError as exc:
        raise FormatError(f"not a release that verifies: {exc}", path=root) from exc
    files = TreeFiles.from_facts(root, _sums(root), SUMS_NAME)
    manifest: dict[str, Any] = release.manifest
    name = release.name
    distribution = [
        file_object(files, path, media_type(path), options, description=_DESCRIPTIONS.get(path))
        for path in files.files
    ]
    by_family: dict[str, list[str]] = {}
    media: dict[str, set[str]] = {}
    for row in release.rows:
        if row.package is not None:
            by_family.setdefault(row.family, [])
            if row.package not in by_family[row.family]:
                by_family[row.family].append(row.package)
            media.setdefault(row.family, set()).add(media_type(row.path))
    for family, packages in sorted(by_family.items()):
        node = file_set(
            f"restored-{family}", [f"{name}/*"], "", f"The files of family {family} "
            f"restored from its packages, under {name}/ (what unpack.py writes).",
            contained_in=sorted(packages),
        )  # fmt: skip
        node["encodingFormat"] = sorted(media[family])
        distribution.append(node)
    record_sets = [
        record_set("files", f"Every file of the tree {name}, its family and package.", [
            field("files", column, kind, source(file_object=FILES_NAME, column=column), text)
            for column, kind, text in _ROW_FIELDS
        ], key=["path"]),
        record_set("packages", "One record per package of the release.",
                   _table("packages", "$.packages[*]", _PACKAGE_FIELDS), key=["name"]),
    ]  # fmt: skip
    families = ", ".join(f["name"] for f in manifest["families"])
    description = (
        f"A dataset-devkit release of the tree {name} (root hash {release.snapshot_root}): "
        f"{len(manifest['packages'])} verified tar packages in the families {families}, "
        "restored by unpack.py."
    )
    document = dataset(
        options,
        name=name,
        description=description,
        keywords=["dataset-devkit", "release"],
        files=files,
        distribution=distribution,
        record_sets=record_sets,
    )
    document["identifier"] = f"sha256:{release.snapshot_root}"
    return document
