"""What a Croissant document says: its JSON-LD context, version, media types and options.

Croissant (MLCommons) is JSON-LD on schema.org: a ``Dataset`` whose ``distribution`` lists
``FileObject``s (one file, with its SHA-256) and ``FileSet``s (files matched by a glob), and
whose ``recordSet``s describe the records in them field by field. The context below is the
Croissant 1.1 context as mlcroissant (the reference implementation) writes it and the
specification's published examples use it (``https://schema.org/``; the specification's
appendix still spells ``http``, which mlcroissant reads as a different vocabulary).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "CONFORMS_TO",
    "CONTEXT",
    "CROISSANT_FILE_NAME",
    "DATA_TYPES",
    "MEDIA_TYPES",
    "CroissantOptions",
]

#: The specification version documents declare (``dct:conformsTo``).
CONFORMS_TO: Final = "http://mlcommons.org/croissant/1.1"

#: The usual name of a Croissant file (Hugging Face and Kaggle serve ``croissant.json``).
CROISSANT_FILE_NAME: Final = "croissant.json"

CONTEXT: Final[dict[str, Any]] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileObject": "cr:fileObject",
    "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "name": {"@container": "@language"},
    "parentField": "cr:parentField",
    "path": "cr:path",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

#: ``encodingFormat`` of the files our trees hold: a MIME type where one is registered or
#: in common use (mlcroissant reads JSON, JSON Lines, text and images by these), else the
#: URL of the format's specification, as Croissant asks for niche formats.
MEDIA_TYPES: Final[dict[str, str]] = {
    "json": "application/json",
    "jsonl": "application/jsonlines",
    "jpeg": "image/jpeg",
    "png": "image/png",
    "mp4": "video/mp4",
    "tar": "application/x-tar",
    "text": "text/plain",
    "markdown": "text/markdown",
    "python": "text/x-python",
    "msgpack": "application/x-msgpack",
    "npy": "https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html",
    "zarr2": "https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html",
    "zarr3": "https://zarr-specs.readthedocs.io/en/latest/v3/core/index.html",
    "mcap": "https://mcap.dev/spec",
    "binary": "application/octet-stream",
}

#: Croissant ``dataType`` of each NumPy dtype name (Croissant 1.1 sized numeric types).
DATA_TYPES: Final[dict[str, str]] = {
    "bool": "sc:Boolean",
    "int8": "cr:Int8",
    "int16": "cr:Int16",
    "int32": "cr:Int32",
    "int64": "cr:Int64",
    "uint8": "cr:UInt8",
    "uint16": "cr:UInt16",
    "uint32": "cr:UInt32",
    "uint64": "cr:UInt64",
    "float16": "cr:Float16",
    "float32": "cr:Float32",
    "float64": "cr:Float64",
}


@dataclass(frozen=True, slots=True)
class CroissantOptions:
    """Dataset-level facts a tree does not know; each is written only when given.

    The Croissant specification requires ``license``, ``url``, ``creator`` and
    ``date_published`` of a published dataset: a document without them still validates
    (mlcroissant warns), and :func:`~dataset_devkit.croissant.croissant_document` lists
    what is missing, so nothing is invented (no date, no licence) and the bytes depend
    only on the tree and these options.

    Parameters
    ----------
    name
        The dataset's name; default the tree's directory name.
    description
        Default: a sentence made from the tree (kind, counts, root hash).
    license
        A URL, e.g. ``https://creativecommons.org/licenses/by/4.0/``.
    url
        The dataset's web page.
    creators
        Names of the creating organisations or people.
    date_published
        ``YYYY-MM-DD``.
    version
        The dataset's version, ``MAJOR.MINOR.PATCH``.
    cite_as
        A BibTeX citation.
    base_url
        Prefix of every ``contentUrl`` (the hosted copy, ending in ``/``); default none:
        URLs are paths relative to the tree's root, where mlcroissant looks for them.
    """

    name: str | None = None
    description: str | None = None
    license: str | None = None
    url: str | None = None
    creators: tuple[str, ...] = field(default=())
    date_published: str | None = None
    version: str | None = None
    cite_as: str | None = None
    base_url: str | None = None
