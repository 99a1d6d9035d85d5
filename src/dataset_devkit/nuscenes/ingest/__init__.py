"""Ingest: recordings of every container to one normalized recording.

Message logs — MCAP files, ROS 2 bags (MCAP or sqlite3 storage), ROS 1 bags — go through a
container backend (:mod:`.mcap`, :mod:`.anybag`) that yields decoded messages, the roles of
their topics (:mod:`.roles`), a first pass (:mod:`.scan`), the ego poses of the declared
source (:mod:`.poses`) and one assembly (:mod:`.assemble`); decoded recording folders
(:mod:`.decoded`) are read whole. :func:`open_recording` picks the route by the path's shape.
"""

from __future__ import annotations

from pathlib import Path

from dataset_devkit.nuscenes.ingest.decoded import BACKEND_DECODED, read_decoded
from dataset_devkit.nuscenes.ingest.mcap import BACKEND_MCAP
from dataset_devkit.nuscenes.ingest.model import CameraStream, RecordingSource
from dataset_devkit.nuscenes.ingest.open import open_recording
from dataset_devkit.nuscenes.options import IngestConfig

__all__ = [
    "BACKEND_DECODED",
    "BACKEND_MCAP",
    "CameraStream",
    "RecordingSource",
    "open_recording",
    "read_decoded",
    "read_mcap",
    "read_rosbag",
]


def read_mcap(path: Path | str, *, vehicle_frame: str = "base_link") -> RecordingSource:
    """Read an MCAP recording (an ``.mcap`` file) with the default ingest options."""
    return open_recording(Path(path), IngestConfig(vehicle_frame=vehicle_frame))


def read_rosbag(folder: Path | str, *, vehicle_frame: str = "base_link") -> RecordingSource:
    """Read a ROS 2 bag folder (``metadata.yaml`` and its splits) as one recording."""
    return open_recording(Path(folder), IngestConfig(vehicle_frame=vehicle_frame))
