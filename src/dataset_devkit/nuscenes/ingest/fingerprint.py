"""A recording's ``source_digest`` without ingesting it, to check reused evidence cheaply.

The digest is the one the backends record (``mcap:sha256:...`` over the MCAP files,
``rosbag1:``/``rosbag2_sqlite3:`` over a bag's files, ``pyav:sha256:...`` over
``recording.json`` and its videos), so evidence built from other recordings, or from
recordings changed since, is told apart by one hashing pass and no decoding.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from dataset_devkit.nuscenes.ingest.decoded import BACKEND_DECODED
from dataset_devkit.nuscenes.ingest.decoded_schema import RECORDING_FILE, load_recording
from dataset_devkit.nuscenes.ingest.open import message_log, source_type_of
from dataset_devkit.nuscenes.ingest.rosbag import BAG_METADATA_FILE
from dataset_devkit.nuscenes.ingest.source import SourceDigest, open_regular

__all__ = ["file_sha256", "recording_digest", "source_type_of"]


def recording_digest(path: Path) -> str:
    """The ``source_digest`` ingest would record for the recording at *path*."""
    log = message_log(path)
    if log is not None:
        digest = SourceDigest(log.backend)
        for name, member in log.digest_members():
            with open_regular(member, name if name == BAG_METADATA_FILE else "recording") as f:
                digest.add_file(name, f, member)
        return digest.hexdigest()
    doc, _ = load_recording(path)
    digest = SourceDigest(BACKEND_DECODED)
    for name in sorted({RECORDING_FILE, *(c.video for c in doc.cameras)}):
        with open_regular(path / name, name if name == RECORDING_FILE else "video") as f:
            digest.add_file(name, f, path / name)
    return digest.hexdigest()


def file_sha256(path: Path, what: str) -> str:
    """SHA-256 hex of a regular file, opened without following links."""
    with open_regular(path, what) as f:
        return hashlib.sha256(f.read()).hexdigest()
