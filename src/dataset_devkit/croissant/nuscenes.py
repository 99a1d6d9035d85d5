"""The Croissant document of a nuScenes dataroot: the 13 tables and the camera images.

Each official table (``<version>/<table>.json``, a JSON array) is a ``FileObject`` and a
record set whose fields are the table's columns, typed from the same records the exporter
writes and the validator checks (tokens are ``sc:Text``, translations ``cr:Float64 [3]``,
rotations ``[4]``, intrinsics ``[3, 3]``); mlcroissant reads them by JSON path. The images
(``samples/`` and ``sweeps/``) are one ``FileSet`` and the record set ``images`` (channel,
file name and pixels), which mlcroissant decodes with Pillow. Everything under
``mz_extensions/`` and ``maps/`` is a ``FileObject`` with its SHA-256.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from dataset_devkit.croissant._nodes import (
    Node,
    dataset,
    field,
    file_object,
    file_set,
    manifest_files_record_set,
    media_type,
    record_set,
    source,
)
from dataset_devkit.croissant._tree import TreeFiles
from dataset_devkit.croissant.spec import MEDIA_TYPES, CroissantOptions
from dataset_devkit.nuscenes.spec import SAMPLES_DIR, SWEEPS_DIR, TABLE_NAMES, TABLE_RECORDS

__all__ = ["nuscenes_document"]


def _column_type(info: msgspec.inspect.Type) -> tuple[str, list[int] | None]:
    """Croissant ``dataType`` and array shape of one table column's msgspec type."""
    if isinstance(info, msgspec.inspect.TupleType):
        inner, shape = _column_type(info.item_types[0])
        return inner, [len(info.item_types), *(shape or [])]
    if isinstance(info, (msgspec.inspect.VarTupleType, msgspec.inspect.ListType)):
        inner, shape = _column_type(info.item_type)
        return inner, [-1, *(shape or [])]
    if isinstance(info, msgspec.inspect.BoolType):
        return "sc:Boolean", None
    if isinstance(info, msgspec.inspect.IntType):
        return "cr:Int64", None
    if isinstance(info, msgspec.inspect.FloatType):
        return "cr:Float64", None
    return "sc:Text", None  # str, Literal[...] of strings


def _table_record_set(table: str, path: str) -> Node:
    info: Any = msgspec.inspect.type_info(TABLE_RECORDS[table])
    fields = []
    for column in info.fields:
        kind, shape = _column_type(column.type)
        fields.append(
            field(table, column.name, kind,
                  source(file_object=path, json_path=f"$[*].{column.name}"),
                  f"Column {column.name} of the official table {table}.", array_shape=shape)
        )  # fmt: skip
    key = ["token"] if any(c.name == "token" for c in info.fields) else []
    return record_set(table, f"The nuScenes table {table}: one record per row.", fields, key=key)


def nuscenes_document(
    root: Path, files: TreeFiles, options: CroissantOptions, *, version: str
) -> Node:
    """The Croissant document of the dataroot at *root*, tables in ``root/version``."""
    tables = {name: f"{version}/{name}.json" for name in TABLE_NAMES}
    images = (f"{SAMPLES_DIR}/", f"{SWEEPS_DIR}/")
    distribution = [
        file_object(files, path, MEDIA_TYPES["json"], options,
                    description=f"The official nuScenes table {name} (a JSON array).")
        for name, path in tables.items()
    ]  # fmt: skip
    listed = set(tables.values())
    distribution += [
        file_object(files, path, media_type(path), options)
        for path in files.files
        if path not in listed and not path.startswith(images)
    ]
    distribution.append(
        file_set("image-files", [f"{SAMPLES_DIR}/*.jpg", f"{SWEEPS_DIR}/*.jpg"],
                 MEDIA_TYPES["jpeg"], "Camera images, samples/<channel>/ (key frames) and "
                 f"sweeps/<channel>/; each file's SHA-256 is in {files.source}.")
    )  # fmt: skip
    image_fields = [
        field("images", "filename", "sc:Text",
              source(file_set="image-files", file_property="fullpath"),
              "The image's path, as sample_data.filename names it."),
        field("images", "channel", "sc:Text",
              source(file_set="image-files", file_property="fullpath",
                     regex=r"^(?:samples|sweeps)/([^/]+)/.*$"), "The camera channel."),
        field("images", "image", "sc:ImageObject",
              source(file_set="image-files", file_property="content"), "The JPEG image."),
    ]  # fmt: skip
    record_sets = [_table_record_set(name, path) for name, path in tables.items()]
    record_sets.append(
        record_set("images", "One record per camera image.", image_fields, key=["filename"])
    )
    record_sets.append(manifest_files_record_set(files))
    count = sum(1 for path in files.files if path.startswith(images))
    description = (
        f"A nuScenes {version} dataroot (camera only: no lidar, radar or annotations) of "
        f"{count} camera images, written by dataset-devkit; nuscenes-devkit loads it. Root "
        f"hash {files.root_sha256}."
    )
    return dataset(
        options,
        name=root.name,
        description=description,
        keywords=["dataset-devkit", "nuscenes", "autonomous driving", "camera"],
        files=files,
        distribution=distribution,
        record_sets=record_sets,
    )
