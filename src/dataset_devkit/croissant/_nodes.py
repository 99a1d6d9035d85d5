"""Croissant nodes as plain JSON-LD mappings: FileObject, FileSet, Field, RecordSet, Dataset.

Written by hand rather than through mlcroissant's classes: a document is a small JSON tree,
and producing it must need no heavy dependency (mlcroissant pulls pandas, rdflib and more)
and give canonical bytes. mlcroissant validates and loads what this writes, in the tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dataset_devkit.croissant._tree import TreeFiles
from dataset_devkit.croissant.spec import CONFORMS_TO, CONTEXT, MEDIA_TYPES, CroissantOptions

__all__ = [
    "dataset",
    "field",
    "file_object",
    "file_set",
    "manifest_files_record_set",
    "media_type",
    "missing_properties",
    "record_set",
    "source",
    "top_level_file_objects",
]

Node = dict[str, Any]


def _ref(node_id: str) -> Node:
    return {"@id": node_id}


def file_object(
    files: TreeFiles,
    path: str,
    media: str,
    options: CroissantOptions,
    *,
    description: str | None = None,
) -> Node:
    """The ``FileObject`` of listed file *path*, with its size and SHA-256 from *files*."""
    facts = files.get(path)
    node: Node = {
        "@type": "cr:FileObject",
        "@id": path,
        "name": path.rsplit("/", 1)[-1],
        "contentUrl": f"{options.base_url or ''}{path}",
        "contentSize": f"{facts.size} B",
        "encodingFormat": media,
        "sha256": facts.sha256,
    }
    if description:
        node["description"] = description
    return node


def file_set(
    node_id: str,
    includes: Sequence[str],
    media: str,
    description: str,
    *,
    contained_in: Sequence[str] = (),
) -> Node:
    """A ``FileSet``: the files matching *includes* (globs from the tree's root)."""
    node: Node = {
        "@type": "cr:FileSet",
        "@id": node_id,
        "name": node_id,
        "description": description,
        "encodingFormat": media,
        "includes": list(includes),
    }
    if contained_in:
        node["containedIn"] = [_ref(c) for c in contained_in]
    return node


def source(
    *,
    file_object: str | None = None,
    file_set: str | None = None,
    column: str | None = None,
    json_path: str | None = None,
    file_property: str | None = None,
    regex: str | None = None,
) -> Node:
    """A ``DataSource``: one file object or file set, and what to extract from it."""
    node: Node = {}
    if file_object is not None:
        node["fileObject"] = _ref(file_object)
    if file_set is not None:
        node["fileSet"] = _ref(file_set)
    extract = {
        key: value
        for key, value in (
            ("column", column),
            ("jsonPath", json_path),
            ("fileProperty", file_property),
        )
        if value is not None
    }
    if extract:
        node["extract"] = extract
    if regex is not None:
        node["transform"] = {"regex": regex}
    return node


def field(
    record: str,
    name: str,
    data_type: str,
    field_source: Node | None,
    description: str,
    *,
    array_shape: Sequence[int] | None = None,
) -> Node:
    """A ``Field`` of record set *record*; *array_shape* makes it an array (-1: any size)."""
    node: Node = {
        "@type": "cr:Field",
        "@id": f"{record}/{name}",
        "name": name,
        "description": description,
        "dataType": data_type,
    }
    if field_source is not None:
        node["source"] = field_source
    if array_shape is not None:
        node["isArray"] = True
        node["arrayShape"] = ",".join(str(n) for n in array_shape)
    return node


def record_set(
    node_id: str,
    description: str,
    fields: Sequence[Node],
    *,
    key: Sequence[str] = (),
    data_type: str | None = None,
    data: Sequence[Node] | None = None,
) -> Node:
    """A ``RecordSet`` of *fields*; *key* names the fields that identify a record."""
    node: Node = {
        "@type": "cr:RecordSet",
        "@id": node_id,
        "name": node_id,
        "description": description,
        "field": list(fields),
    }
    if key:
        node["key"] = [_ref(f"{node_id}/{name}") for name in key]
    if data_type is not None:
        node["dataType"] = data_type
    if data is not None:
        node["data"] = list(data)
    return node


def missing_properties(options: CroissantOptions) -> tuple[str, ...]:
    """Dataset properties the Croissant specification requires that *options* lacks."""
    given = {
        "license": options.license,
        "url": options.url,
        "creator": options.creators,
        "datePublished": options.date_published,
    }
    return tuple(name for name, value in given.items() if not value)


def dataset(
    options: CroissantOptions,
    *,
    name: str,
    description: str,
    keywords: Sequence[str],
    files: TreeFiles,
    distribution: Sequence[Node],
    record_sets: Sequence[Node],
) -> Node:
    """The whole document: the dataset's facts, its files, its record sets."""
    node: Node = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": options.name or name,
        "description": options.description or description,
        "keywords": list(keywords),
        "distribution": list(distribution),
        "recordSet": list(record_sets),
    }
    if files.root_sha256 is not None:
        # The tree's identity whatever it is called or where it is hosted: the root hash
        # `dataset-devkit verify` recomputes.
        node["identifier"] = f"sha256:{files.root_sha256}"
    optional: dict[str, Any] = {
        "license": options.license,
        "url": options.url,
        "datePublished": options.date_published,
        "version": options.version,
        "citeAs": options.cite_as,
    }
    node.update({key: value for key, value in optional.items() if value})
    if options.creators:
        node["creator"] = [{"@type": "sc:Organization", "name": c} for c in options.creators]
    return node


_BY_SUFFIX = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".png": "png",
    ".mp4": "mp4",
    ".tar": "tar",
    ".txt": "text",
    ".md": "markdown",
    ".py": "python",
    ".msgpack": "msgpack",
    ".npy": "npy",
    ".mcap": "mcap",
}


def media_type(path: str) -> str:
    """The ``encodingFormat`` of *path* by its suffix (``application/octet-stream`` else)."""
    name = path.rsplit("/", 1)[-1]
    suffix = name[name.rfind(".") :].lower() if "." in name else ""
    return MEDIA_TYPES[_BY_SUFFIX.get(suffix, "binary")]


def manifest_files_record_set(files: TreeFiles) -> Node:
    """``files``: one record per file of the content manifest (path, size, SHA-256)."""
    fields = [
        field("files", name, kind,
              source(file_object=files.source, json_path=f"$.files[*].{name}"), text)
        for name, kind, text in (
            ("path", "sc:Text", "The file's path, relative to the tree's root."),
            ("size", "cr:Int64", "The file's size in bytes."),
            ("sha256", "sc:Text", "The file's SHA-256, lowercase hex."),
        )
    ]  # fmt: skip
    return record_set(
        "files",
        f"Every file of the tree with its size and SHA-256, as {files.source} lists them "
        "(`dataset-devkit verify` checks them all and the root hash).",
        fields,
        key=["path"],
    )


def top_level_file_objects(
    files: TreeFiles, options: CroissantOptions, descriptions: dict[str, str]
) -> list[Node]:
    """A ``FileObject`` for each file at the top of the tree, described where known."""
    return [
        file_object(files, path, media_type(path), options, description=descriptions.get(path))
        for path in files.files
        if "/" not in path or path == files.source
    ]
