"""Which kind of tree a path is, from the marker files each system writes.

No shared detector exists yet for ``validate``, so this one is local to preview: it only
looks at marker files (never reads data) and checks the most specific kinds first, since a
stereo or VIN root also carries a generic ``content_manifest.json``.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

from dataset_devkit.errors import ConfigError, MissingPathError

__all__ = ["Kind", "detect_kind"]


class Kind(StrEnum):
    """The kinds of tree ``preview`` can draw."""

    NUSCENES = "nuscenes"
    STEREO = "stereo"
    VIN_STORE = "vin_store"
    RELEASE = "release"
    RESTORED = "restored"
    MANIFEST = "manifest"


def _json_format(path: Path) -> object:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("format") if isinstance(data, dict) else None


def detect_kind(path: str | Path) -> Kind:
    """The kind of the tree at *path*; a clear error when it is none we know."""
    path = Path(path)
    if not path.exists():
        raise MissingPathError("no such directory", path=path)
    if not path.is_dir():
        raise ConfigError(f"{path}: expected a dataset directory, found a file", key="path")
    if (path / "manifest.json").is_file() and _json_format(
        path / "manifest.json"
    ) == "dataset-devkit-release":
        return Kind.RELEASE
    if path.with_name(path.name + ".unpack-state.json").is_file():
        return Kind.RESTORED
    if (path / "v1.0-trainval").is_dir():
        return Kind.NUSCENES
    if (path / "manifest.json").is_file() and (path / "shards").is_dir():
        return Kind.VIN_STORE
    if (path / "loader_requirements.json").is_file() and (path / "genvr_i2s.jsonl").is_file():
        return Kind.STEREO
    if (path / "content_manifest.json").is_file():
        return Kind.MANIFEST
    raise ConfigError(
        f"{path}: not a tree preview knows; expected a nuScenes dataroot (v1.0-trainval/), "
        "a stereo root (genvr_i2s.jsonl), a VIN store (manifest.json + shards/), a release "
        "directory (manifest.json of format dataset-devkit-release), a restored tree "
        "(<name>.unpack-state.json beside it) or a tree with content_manifest.json",
        key="path",
    )
