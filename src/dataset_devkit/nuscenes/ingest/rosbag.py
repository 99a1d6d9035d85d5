"""ROS 2 bag folders: ``metadata.yaml`` plus the split files it lists, in order.

rosbag2 writes a recording as a folder of splits in one storage: MCAP (``.mcap``) or sqlite3
(``.db3``). Only ``metadata.yaml`` is read here: it names the storage and the split order.
MCAP splits go to the MCAP backend, which reads them record by record (so a split cut by a
crash is read up to its last complete record) — rosbags' own reader is not used for them
because it opens every split's summary up front and refuses a truncated one, which would
lose the complete data before the cut. sqlite3 splits go to rosbags (:mod:`.anybag`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError
from dataset_devkit.nuscenes.ingest.source import open_regular

__all__ = [
    "BAG_METADATA_FILE",
    "BAG_STORAGES",
    "BagLayout",
    "bag_files",
    "bag_layout",
    "is_bag_folder",
]

BAG_METADATA_FILE = "metadata.yaml"
#: rosbag2 storage identifier -> the suffix of its split files.
BAG_STORAGES = {"mcap": ".mcap", "sqlite3": ".db3"}
_SAFE_SPLIT = re.compile(r"^[A-Za-z0-9._-]+\.(?:mcap|db3)$")
_MAX_METADATA = 64 << 20


def is_bag_folder(folder: Path) -> bool:
    """Whether *folder* holds a ``metadata.yaml`` (a rosbag2 bag), without following links."""
    return (folder / BAG_METADATA_FILE).is_file() or (folder / BAG_METADATA_FILE).is_symlink()


def _load_yaml(raw: bytes, path: Path) -> Any:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - PyYAML comes with the mcap extra
        raise MissingDependencyError("yaml", extra="mcap", purpose="ROS 2 bag folders") from exc
    try:
        return yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise FormatError(f"not valid YAML ({exc})", path=path) from None


@dataclass(frozen=True, slots=True)
class BagLayout:
    """What ``metadata.yaml`` says: its path and bytes, the storage, the splits in order."""

    metadata: Path
    raw: bytes
    storage: str
    parts: tuple[Path, ...]


def bag_files(folder: Path) -> tuple[Path, bytes, tuple[Path, ...]]:
    """``(metadata path, its bytes, the split files in recording order)`` of an MCAP bag."""
    layout = bag_layout(folder)
    if layout.storage != "mcap":
        raise FormatError(
            f"storage_identifier is {layout.storage!r}, not an MCAP bag",
            path=layout.metadata,
            field="$.rosbag2_bagfile_information.storage_identifier",
        )
    return layout.metadata, layout.raw, layout.parts


def bag_layout(folder: Path) -> BagLayout:
    """Read and check a bag folder's ``metadata.yaml``: storage and split files."""
    meta = folder / BAG_METADATA_FILE
    with open_regular(meta, BAG_METADATA_FILE) as f:
        raw = f.read(_MAX_METADATA + 1)
    if len(raw) > _MAX_METADATA:
        raise FormatError(f"larger than {_MAX_METADATA} bytes", path=meta)
    doc = _load_yaml(raw, meta)
    info = doc.get("rosbag2_bagfile_information") if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        raise FormatError(
            "expected a rosbag2 metadata file (a 'rosbag2_bagfile_information' mapping)",
            path=meta,
            field="$.rosbag2_bagfile_information",
        )
    storage = info.get("storage_identifier")
    if storage not in BAG_STORAGES:
        raise FormatError(
            f"storage_identifier is {storage!r}; expected one of "
            f"{', '.join(sorted(BAG_STORAGES))} (rosbag2's MCAP and sqlite3 storages)",
            path=meta,
            field="$.rosbag2_bagfile_information.storage_identifier",
        )
    mode = str(info.get("compression_mode") or "").lower()
    if storage == "mcap" and mode not in ("", "none", "message"):
        raise FormatError(
            f"compression_mode {mode!r}: file-compressed splits are not read; record with "
            "MCAP chunk compression instead",
            path=meta,
            field="$.rosbag2_bagfile_information.compression_mode",
        )
    names = info.get("relative_file_paths")
    if not isinstance(names, list) or not names:
        raise FormatError(
            "relative_file_paths must list at least one split file",
            path=meta,
            field="$.rosbag2_bagfile_information.relative_file_paths",
        )
    parts: list[Path] = []
    for i, name in enumerate(names):
        # rosbag2 writes names relative to the bag folder; a path elsewhere is refused.
        suffix = BAG_STORAGES[storage]
        if (
            not isinstance(name, str)
            or not _SAFE_SPLIT.fullmatch(Path(name).name)
            or Path(name).suffix != suffix
        ):
            raise FormatError(
                f"expected the name of {'an' if suffix == '.mcap' else 'a'} {suffix} split file "
                f"({storage} storage), found {name!r}",
                path=meta,
                field=f"$.rosbag2_bagfile_information.relative_file_paths[{i}]",
            )
        part = folder / Path(name).name
        if part in parts:
            raise FormatError(
                f"split {name!r} is listed twice",
                path=meta,
                field=f"$.rosbag2_bagfile_information.relative_file_paths[{i}]",
            )
        if not os.path.lexists(part):
            raise FormatError(
                f"split {name!r} is not in the bag folder",
                path=meta,
                field=f"$.rosbag2_bagfile_information.relative_file_paths[{i}]",
            )
        parts.append(part)
    return BagLayout(meta, raw, storage, tuple(parts))
