"""Ingest backends: MCAP files, ROS 2 bag folders and decoded recording folders to one
normalized recording."""

from __future__ import annotations

from dataset_devkit.nuscenes.ingest.decoded import BACKEND_DECODED, read_decoded
from dataset_devkit.nuscenes.ingest.mcap import BACKEND_MCAP, read_mcap, read_rosbag
from dataset_devkit.nuscenes.ingest.model import CameraStream, RecordingSource

__all__ = [
    "BACKEND_DECODED",
    "BACKEND_MCAP",
    "CameraStream",
    "RecordingSource",
    "read_decoded",
    "read_mcap",
    "read_rosbag",
]
