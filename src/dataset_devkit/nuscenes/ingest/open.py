"""A recording path to its backend, and through it to one RecordingSource: the only dispatch.

The path's shape selects the reader: an ``.mcap`` file, a ``.bag`` file (ROS 1), a folder
with ``metadata.yaml`` (a ROS 2 bag, MCAP or sqlite3 storage) or with ``recording.json`` (a
decoded recording). Ingest, the source fingerprint, ``sources.type`` checks and
``recording inspect`` all ask this module, so they can never disagree about what a path is.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from dataset_devkit.errors import FormatError, MissingPathError, UnsafePathError
from dataset_devkit.nuscenes.common.tf_tree import TransformTree
from dataset_devkit.nuscenes.ingest.anybag import ROS1_SUFFIX, AnyBagLog, replay_anybag
from dataset_devkit.nuscenes.ingest.assemble import assemble_recording
from dataset_devkit.nuscenes.ingest.backend import Message, ReadState
from dataset_devkit.nuscenes.ingest.decoded import read_decoded
from dataset_devkit.nuscenes.ingest.decoded_schema import RECORDING_FILE
from dataset_devkit.nuscenes.ingest.frames import Replay
from dataset_devkit.nuscenes.ingest.mcap import McapLog, replay
from dataset_devkit.nuscenes.ingest.messages import DEFAULT_ROS_DISTRO
from dataset_devkit.nuscenes.ingest.model import RecordingSource
from dataset_devkit.nuscenes.ingest.roles import RoleTable
from dataset_devkit.nuscenes.ingest.rosbag import BAG_METADATA_FILE, bag_layout, is_bag_folder
from dataset_devkit.nuscenes.ingest.scan import Scan, scan_messages
from dataset_devkit.nuscenes.ingest.source import SourceDigest, SourceIdentity
from dataset_devkit.nuscenes.options import IngestConfig
from dataset_devkit.nuscenes.spec import SOURCE_DECODED, SOURCE_MCAP

__all__ = [
    "DEFAULT_POSE_TOLERANCE_NS",
    "MessageLogKind",
    "RecordingShape",
    "check_recording",
    "message_log",
    "open_recording",
    "scan_recording",
    "source_type_of",
]

#: ``scenario.pose_tolerance_ms`` of the default config.
DEFAULT_POSE_TOLERANCE_NS = 200_000_000

MessageLogKind = McapLog | AnyBagLog

_SHAPES = (
    "expected an .mcap file, a ROS 1 .bag file, a ROS 2 bag folder (metadata.yaml) or a "
    "decoded recording folder (recording.json)"
)


def _check_path(path: Path) -> None:
    if not os.path.lexists(path):
        raise MissingPathError("recording not found", path=path)
    if path.is_symlink():
        raise UnsafePathError("recording is a symlink; refusing to follow it", path=path)


def _ros_distro(options: IngestConfig) -> str:
    return options.ros_distro if isinstance(options.ros_distro, str) else DEFAULT_ROS_DISTRO


RecordingShape = Literal["mcap", "ros1-bag", "ros2-bag", "decoded"]


def check_recording(path: Path) -> RecordingShape:
    """The shape of a recording path, checked without reading the recording.

    An ``.mcap`` file, a ROS 1 ``.bag`` file, a ROS 2 bag folder (``metadata.yaml``) or a
    decoded recording folder (``recording.json``); anything else is a one-line error naming
    the path. A build checks every recording this way before it creates anything.
    """
    _check_path(path)
    if path.is_dir():
        if is_bag_folder(path):
            return "ros2-bag"
        if os.path.lexists(path / RECORDING_FILE):
            return "decoded"
        raise FormatError(
            f"not a recording: a folder needs {BAG_METADATA_FILE} (a ROS 2 bag) or "
            f"{RECORDING_FILE} (a decoded recording), found neither",
            path=path,
        )
    if path.suffix == ".mcap":
        return "mcap"
    if path.suffix == ROS1_SUFFIX:
        return "ros1-bag"
    raise FormatError(f"not a recording: {_SHAPES}", path=path)


def message_log(path: Path, options: IngestConfig | None = None) -> MessageLogKind | None:
    """The message-log backend of *path*; None for a decoded recording folder."""
    options = options or IngestConfig()
    distro = _ros_distro(options)
    shape = check_recording(path)
    if shape == "decoded":
        return None
    if shape == "ros2-bag":
        layout = bag_layout(path)
        if layout.storage == "mcap":
            return McapLog(path, layout.parts, (layout.metadata, layout.raw), ros_distro=distro)
        return AnyBagLog(path, layout, ros_distro=distro)
    if shape == "mcap":
        return McapLog(path, (path,), ros_distro=distro)
    return AnyBagLog(path, None, ros_distro=distro)


def source_type_of(path: Path) -> str | None:
    """The source type a recording path's shape implies, without reading it; None if unknown.

    Message logs (``.mcap``, ``.bag``, ROS 2 bag folders) are ``mcap_hf``; a folder with
    ``recording.json`` is ``decoded_hf``. Used to check ``sources.type`` before any
    recording is read.
    """
    if path.is_symlink() or not os.path.lexists(path):
        return None
    if path.is_dir():
        if is_bag_folder(path):
            return SOURCE_MCAP
        return SOURCE_DECODED if os.path.lexists(path / RECORDING_FILE) else None
    return SOURCE_MCAP if path.suffix in (".mcap", ROS1_SUFFIX) else None


def scan_recording(
    log: MessageLogKind,
    options: IngestConfig,
    tolerance_ns: int,
    digest: SourceDigest | None = None,
) -> tuple[Scan, ReadState]:
    """The first pass over a message log (no frame is decoded beyond its header)."""
    roles = RoleTable(options)
    scan = Scan(roles=roles, tree=TransformTree(max_gap_ns=tolerance_ns))
    state = ReadState()
    scan_messages(log.read(roles.wanted, state, digest), scan, log.path, options.vehicle_frame)
    return scan, state


def _replay(log: MessageLogKind, state: ReadState) -> Replay:
    identities = tuple(state.identities)
    if isinstance(log, McapLog):
        return functools.partial(_replay_mcap, identities, log.ros_distro)
    return functools.partial(_replay_bag, log.path, identities, log.ros_distro)


def _replay_mcap(
    parts: tuple[tuple[Path, SourceIdentity], ...], distro: str, topics: frozenset[str]
) -> Iterator[Message]:
    return replay(parts, topics, distro)


def _replay_bag(
    path: Path,
    members: tuple[tuple[Path, SourceIdentity], ...],
    distro: str,
    topics: frozenset[str],
) -> Iterator[Message]:
    return replay_anybag(path, members, topics, distro)


def open_recording(
    path: Path | str,
    options: IngestConfig | None = None,
    *,
    pose_tolerance_ns: int = DEFAULT_POSE_TOLERANCE_NS,
) -> RecordingSource:
    """Read one recording with the backend its shape selects."""
    path = Path(path)
    options = options or IngestConfig()
    log = message_log(path, options)
    if log is None:
        return read_decoded(path)
    digest = SourceDigest(log.backend)
    scan, state = scan_recording(log, options, pose_tolerance_ns, digest)
    return assemble_recording(
        path=path,
        backend=log.backend,
        scan=scan,
        state=state,
        digest=digest.hexdigest(),
        content_members=tuple(digest.members),
        size=digest.size,
        options=options,
        tolerance_ns=pose_tolerance_ns,
        replay=_replay(log, state),
    )
