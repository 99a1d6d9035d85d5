"""Root files a reader starts from: loader requirements and ``genvr_i2s*.jsonl`` indexes.

Decoding is strict (unknown fields, wrong types and paths that leave the root are errors
naming the file, line and field), because a trainer that silently reads a wrong path reads
the wrong data.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from dataset_devkit.errors import FormatError, NotFoundError
from dataset_devkit.integrity import decode_json_record
from dataset_devkit.stereo.spec import (
    EYES,
    FORMAT_VERSION,
    INDEX_WITH_DEPTH,
    REQUIREMENTS,
    REQUIREMENTS_WITH_DEPTH,
    IndexRow,
    LoaderRequirements,
)
from dataset_devkit.stereo.special_files import require_regular


def decode_json(path: Path, kind: type[Any]) -> Any:
    require_regular(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path}: missing") from exc
    except OSError as exc:
        raise FormatError(f"cannot be read ({exc.strerror})", path=path) from exc
    return decode_json_record(raw, kind, path)


def load_requirements(root: Path, index: str) -> LoaderRequirements:
    """The requirements document whose ``indexes`` lists ``index``."""
    missing = []
    for name in (REQUIREMENTS, REQUIREMENTS_WITH_DEPTH):
        path = root / name
        if not path.exists():  # anything else present is read, and refused if not a file
            missing.append(name)
            continue
        found: LoaderRequirements = decode_json(path, LoaderRequirements)
        if found.version != FORMAT_VERSION:
            raise FormatError(
                f"version {found.version}, expected {FORMAT_VERSION}", path=path, field="$.version"
            )
        for number, dotted in enumerate(found.required_row_paths):
            if dotted not in ROW_PATH_FIELDS:
                raise FormatError(
                    f"{dotted!r} is not a path field of an index row (one of "
                    f"{', '.join(ROW_PATH_FIELDS)})",
                    path=path,
                    field=f"$.required_row_paths[{number}]",
                )
        if index in found.indexes:
            return found
    absent = f" ({', '.join(missing)} missing)" if missing else ""
    if index == INDEX_WITH_DEPTH and not (root / index).exists():
        raise NotFoundError(f"{root}: this dataset has no depth index ({INDEX_WITH_DEPTH})")
    raise NotFoundError(f"{root}: no loader requirements file lists the index {index!r}{absent}")


def load_index(path: Path) -> list[IndexRow]:
    """Strictly decode a ``genvr_i2s*.jsonl`` index, naming the line of any bad row."""
    require_regular(path)
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path}: index missing") from exc
    except OSError as exc:
        raise FormatError(f"cannot be read ({exc.strerror})", path=path) from exc
    decoder = msgspec.json.Decoder(IndexRow)
    rows = []
    for number, line in enumerate(lines, start=1):
        try:
            row = decoder.decode(line)
        except (msgspec.MsgspecError, RecursionError) as exc:  # msgspec caps nesting so
            raise FormatError(str(exc), path=path, field=f"line {number}") from exc
        if row.depth is not None and sorted(row.depth.arrays) != sorted(EYES):
            raise FormatError(
                f"expected one depth array per eye ({', '.join(EYES)}), found "
                f"{sorted(row.depth.arrays)}",
                path=path,
                field=f"line {number} $.depth.arrays",
            )
        for field, value in _row_paths(row):
            if not is_inside(value):
                raise FormatError(
                    f"{value!r} is not a relative POSIX path inside the dataset root",
                    path=path,
                    field=f"line {number} $.{field}",
                )
        rows.append(row)
    return rows


_PATH_FIELDS = (
    "path",
    "left_video",
    "right_video",
    "left_camera",
    "right_camera",
    "prompt_path",
    "meta_path",
)


#: Every dotted path field of an index row a requirements file may list.
ROW_PATH_FIELDS = (*_PATH_FIELDS, "depth.zarr", "depth.meta")


def _row_paths(row: IndexRow) -> list[tuple[str, str]]:
    """Every root-relative path a row names, with its field."""
    found = [(name, getattr(row, name)) for name in _PATH_FIELDS]
    if row.depth is not None:
        found += [("depth.zarr", row.depth.zarr), ("depth.meta", row.depth.meta)]
    return found


def is_inside(path: str) -> bool:
    """A non-empty relative POSIX path without ``..``, ``\\`` or a drive: stays in the root."""
    posix = PurePosixPath(path)
    return (
        bool(path)
        and not posix.is_absolute()
        and ".." not in posix.parts
        and ("\\" not in path and ":" not in path)
    )


def row_path(row: IndexRow, dotted: str) -> str:
    value: Any = row
    for part in dotted.split("."):
        value = getattr(value, part, None)
    if not isinstance(value, str):
        raise FormatError(f"row {row.id} has no {dotted!r} path")
    return value
