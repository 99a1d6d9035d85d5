"""The input recordings of one build: opened by shape, checked against each other.

Split from :mod:`dataset_devkit.nuscenes.evidence.writer`: which backend reads a path, the
span of a recording's camera times, one drive per content, and the camera-name → channel
mapping.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import msgspec

from dataset_devkit.errors import ConfigError, FormatError
from dataset_devkit.nuscenes.common.tokens import normalize_channel
from dataset_devkit.nuscenes.ingest import RecordingSource
from dataset_devkit.nuscenes.ingest.decoded_schema import load_recording
from dataset_devkit.nuscenes.ingest.names import check_names
from dataset_devkit.nuscenes.ingest.open import DEFAULT_POSE_TOLERANCE_NS, check_recording
from dataset_devkit.nuscenes.ingest.open import open_recording as ingest_open
from dataset_devkit.nuscenes.ingest.probe import RecordingTopics, probe_recording
from dataset_devkit.nuscenes.ingest.source import content_sha256
from dataset_devkit.nuscenes.options import IngestConfig, PipelineConfig

__all__ = [
    "MAX_RECORDING_SPAN_NS",
    "channel_mapping",
    "check_recording",
    "check_recording_names",
    "check_span",
    "distinct_recordings",
    "open_recording",
]

#: Camera frames of one recording span at most a day: a longer span is a timestamp mistake,
#: and cutting it into scene windows would exhaust memory.
MAX_RECORDING_SPAN_NS = 24 * 3_600_000_000_000


def open_recording(
    path: Path,
    options: IngestConfig | None = None,
    *,
    vehicle_frame: str | None = None,
    pose_tolerance_ns: int = DEFAULT_POSE_TOLERANCE_NS,
) -> RecordingSource:
    """Read one recording with the backend its shape selects (see :mod:`..ingest.open`).

    *vehicle_frame*, when given, overrides ``options.vehicle_frame``.
    """
    options = options or IngestConfig()
    if vehicle_frame is not None:
        options = msgspec.structs.replace(options, vehicle_frame=vehicle_frame)
    return ingest_open(Path(path), options, pose_tolerance_ns=pose_tolerance_ns)


def check_recording_names(paths: Sequence[Path], config: PipelineConfig) -> None:
    """The names ``[ingest]`` and ``require_cameras`` use, against the recordings' topics."""
    probes: list[RecordingTopics] = []
    decoded: list[str] = []
    for path in paths:
        probe = probe_recording(path, config.ingest)
        if probe is not None:
            probes.append(probe)
            continue
        doc, _ = load_recording(path)
        decoded.extend(normalize_channel(c.name) for c in doc.cameras)
    required = [
        (f"scenario.rules[{i}]", channel.strip())
        for i, rule in enumerate(config.scenario.rules)
        if rule.kind == "require_cameras" and isinstance(rule.value, str)
        for channel in rule.value.split(",")
        if channel.strip()
    ]
    check_names(config.ingest, probes, required, decoded)


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
    The content is hashed only for recordings that need it: those whose member sizes equal
    another's (copies have the same sizes) and those renamed.
    """
    contents: dict[int, str] = {}

    def content(i: int) -> str:
        if i not in contents:
            members = sources[i].content_members
            # No member list (a source made by hand): its own digest stands for its content.
            contents[i] = (
                content_sha256(members) if members else sources[i].source_digest.rsplit(":", 1)[-1]
            )
        return contents[i]

    by_sizes: dict[tuple[int, ...], list[int]] = {}
    for i, src in enumerate(sources):
        by_sizes.setdefault(tuple(m[1][1] for m in src.content_members), []).append(i)
    for group in by_sizes.values():
        seen: dict[str, int] = {}
        for i in group if len(group) > 1 else ():
            if content(i) in seen:
                raise ConfigError(
                    f"recordings {paths[seen[content(i)]]} and {paths[i]} have the same "
                    f"content (sha256 {content(i)[:16]}...): the same drive is listed twice; "
                    "remove one of them from sources.paths",
                    key="sources.paths",
                )
            seen[content(i)] = i
    ids = Counter(src.recording_id for src in sources)
    renamed = [
        dataclasses.replace(src, recording_id=f"{src.recording_id}-{content(i)[:12]}")
        if ids[src.recording_id] > 1 and src.recording_id_from_name
        else src
        for i, src in enumerate(sources)
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
        for camera in src.cameras:
            name = camera.source_name
            try:
                channel = camera.channel or normalize_channel(name)
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
