"""The input recordings of one build: opened by shape, checked against each other.

Split from :mod:`dataset_devkit.nuscenes.evidence.writer`: which backend reads a path, the
span of a recording's camera times, one drive per content, and the camera-name → channel
mapping.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from dataset_devkit.errors import ConfigError, FormatError, MissingPathError, UnsafePathError
from dataset_devkit.nuscenes.common.tokens import normalize_channel
from dataset_devkit.nuscenes.ingest import RecordingSource, read_decoded, read_mcap, read_rosbag
from dataset_devkit.nuscenes.ingest.decoded_schema import RECORDING_FILE
from dataset_devkit.nuscenes.ingest.rosbag import BAG_METADATA_FILE, is_bag_folder

__all__ = [
    "MAX_RECORDING_SPAN_NS",
    "channel_mapping",
    "check_recording",
    "check_span",
    "distinct_recordings",
    "open_recording",
]

#: Camera frames of one recording span at most a day: a longer span is a timestamp mistake,
#: and cutting it into scene windows would exhaust memory.
MAX_RECORDING_SPAN_NS = 24 * 3_600_000_000_000


def check_recording(path: Path) -> Literal["rosbag", "decoded", "mcap"]:
    """The backend a recording's shape selects, once its path is checked to be one.

    A ROS 2 bag folder (``metadata.yaml``), a decoded recording folder (``recording.json``)
    or an ``.mcap`` file; nothing is read, so a build checks every recording this way
    before it creates anything.
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise MissingPathError("recording not found", path=path)
    if path.is_symlink():
        raise UnsafePathError("recording is a symlink; refusing to follow it", path=path)
    if path.is_dir():
        if is_bag_folder(path):
            return "rosbag"
        if os.path.lexists(path / RECORDING_FILE):
            return "decoded"
        raise FormatError(
            f"not a recording: a folder needs {BAG_METADATA_FILE} (a ROS 2 bag) or "
            f"{RECORDING_FILE} (a decoded recording), found neither",
            path=path,
        )
    if path.suffix == ".mcap":
        return "mcap"
    raise FormatError(
        "not a recording: expected an .mcap file, a ROS 2 bag folder (metadata.yaml) or a "
        "decoded recording folder (recording.json)",
        path=path,
    )


def open_recording(path: Path, *, vehicle_frame: str = "base_link") -> RecordingSource:
    """Read one recording with the backend its shape selects (:func:`check_recording`)."""
    backend = check_recording(path)
    if backend == "rosbag":
        return read_rosbag(path, vehicle_frame=vehicle_frame)
    if backend == "decoded":
        return read_decoded(path)
    return read_mcap(path, vehicle_frame=vehicle_frame)


def check_span(src: RecordingSource, path: Path) -> None:
    """Refuse camera times spanning more than a day: scene windows are cut densely over it."""
    times = [t for c in src.cameras for t in c.timestamps_ns[:1] + c.timestamps_ns[-1:]]
    if times and max(times) - min(times) > MAX_RECORDING_SPAN_NS:
        raise FormatError(
            f"camera frames span {(max(times) - min(times)) / 3.6e12:.1f} h "
            f"({min(times)} to {max(times)} ns), more than the "
            f"{MAX_RECORDING_SPAN_NS // 3_600_000_000_000} h a recording may cover "
            "(a timestamp in the wrong unit?)",
            path=path,
        )


def distinct_recordings(
    paths: Sequence[Path], sources: list[RecordingSource]
) -> list[RecordingSource]:
    """Refuse a drive listed twice; give drives that only share a file name distinct ids.

    Identity is content: two copies of the same bytes are one drive listed twice, whatever
    their names. Two different drives may both be called ``rec.mcap`` in different folders:
    an id taken from a file name then gets 12 hex of the content's SHA-256, so both are kept.
    """
    seen: dict[str, Path] = {}
    for path, src in zip(paths, sources, strict=True):
        if src.content_sha256 in seen:
            raise ConfigError(
                f"recordings {seen[src.content_sha256]} and {path} have the same content "
                f"(sha256 {src.content_sha256[:16]}...): the same drive is listed twice; "
                "remove one of them from sources.paths",
                key="sources.paths",
            )
        seen[src.content_sha256] = path
    ids = Counter(src.recording_id for src in sources)
    renamed = [
        dataclasses.replace(src, recording_id=f"{src.recording_id}-{src.content_sha256[:12]}")
        if ids[src.recording_id] > 1 and src.recording_id_from_name
        else src
        for src in sources
    ]
    owner: dict[str, Path] = {}
    for path, src in zip(paths, renamed, strict=True):
        if src.recording_id in owner:
            raise ConfigError(
                f"recordings {owner[src.recording_id]} and {path} are different drives with "
                f"the same recording_id {src.recording_id!r}; give each its own recording_id "
                "(recording.json, or the MCAP 'recording' metadata record)",
                key="sources.paths",
            )
        owner[src.recording_id] = path
    return renamed


def channel_mapping(sources: Sequence[RecordingSource]) -> dict[str, str]:
    """Source camera name -> channel. Within a recording each channel has one camera; across
    a fleet, vehicles may name the same camera differently (``cam_front``, ``CAM-FRONT``)."""
    mapping: dict[str, str] = {}
    for src in sources:
        owners: dict[str, str] = {}
        names = [c.source_name for c in src.cameras]
        for name in names:
            try:
                channel = normalize_channel(name)
            except FormatError as exc:
                raise FormatError(exc.detail, path=src.source_name) from None
            other = owners.setdefault(channel, name)
            if other != name:
                raise FormatError(
                    f"camera names {other!r} and {name!r} both normalize to {channel}; "
                    "rename one of them",
                    path=src.source_name,
                )
            mapping[name] = channel
    return dict(sorted(mapping.items()))
