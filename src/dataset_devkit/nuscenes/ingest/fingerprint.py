"""A recording's ``source_digest`` without ingesting it, to check reused evidence cheaply.

The digest is the one the backends record (``mcap:sha256:...`` over the file, ``pyav:sha256:...``
over ``recording.json`` and its videos), so evidence built from other recordings, or from
recordings changed since, is told apart by one hashing pass and no decoding.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dataset_devkit.errors import MissingPathError, UnsafePathError
from dataset_devkit.nuscenes.ingest.decoded import BACKEND_DECODED
from dataset_devkit.nuscenes.ingest.decoded_schema import RECORDING_FILE, load_recording
from dataset_devkit.nuscenes.ingest.mcap import BACKEND_MCAP
from dataset_devkit.nuscenes.ingest.rosbag import BAG_METADATA_FILE, bag_files, is_bag_folder
from dataset_devkit.nuscenes.ingest.source import SourceDigest, open_regular
from dataset_devkit.nuscenes.spec import SOURCE_DECODED, SOURCE_MCAP

__all__ = ["file_sha256", "recording_digest", "source_type_of"]


def recording_digest(path: Path) -> str:
    """The ``source_digest`` ingest would record for the recording at *path*."""
    if not os.path.lexists(path):
        raise MissingPathError("recording not found", path=path)
    if path.is_symlink():
        raise UnsafePathError("recording is a symlink; refusing to follow it", path=path)
    if path.is_dir() and is_bag_folder(path):
        meta, _, parts = bag_files(path)
        digest = SourceDigest(BACKEND_MCAP)
        for name, member in ((BAG_METADATA_FILE, meta), *((p.name, p) for p in parts)):
            with open_regular(member, name) as f:
                digest.add_file(name, f)
        return digest.hexdigest()
    if path.is_dir():
        doc, _ = load_recording(path)
        digest = SourceDigest(BACKEND_DECODED)
        for name in sorted({RECORDING_FILE, *(c.video for c in doc.cameras)}):
            with open_regular(path / name, name if name == RECORDING_FILE else "video") as f:
                digest.add_file(name, f)
        return digest.hexdigest()
    digest = SourceDigest(BACKEND_MCAP)
    with open_regular(path) as f:
        digest.add_file(path.name, f)
    return digest.hexdigest()


def file_sha256(path: Path, what: str) -> str:
    """SHA-256 hex of a regular file, opened without following links."""
    with open_regular(path, what) as f:
        return hashlib.sha256(f.read()).hexdigest()


def source_type_of(path: Path) -> str | None:
    """The source type a recording path's shape implies, without reading it; None if unknown.

    A ``.mcap`` file or a ROS 2 bag folder is ``mcap_hf``; a folder with ``recording.json``
    is ``decoded_hf``. Used to check ``sources.type`` before any recording is read.
    """
    if path.is_symlink() or not os.path.lexists(path):
        return None
    if path.is_dir():
        if is_bag_folder(path):
            return SOURCE_MCAP
        return SOURCE_DECODED if os.path.lexists(path / RECORDING_FILE) else None
    return SOURCE_MCAP if path.suffix == ".mcap" else None
