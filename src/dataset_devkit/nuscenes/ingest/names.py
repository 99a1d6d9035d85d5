"""Every name ``[ingest]`` and the selection rules use, checked against the recordings first.

Camera topics, calibration topics, the pose topic and the channels of ``require_cameras``
are looked up in the recordings' topic lists (:mod:`.probe`) before any recording is
ingested; a miss is one ``ConfigError`` naming the key, what exists, and the near misses.
Frame names (``vehicle_frame``, ``world_frame``, camera ``frame_id``) live in the transform
tree, known only after a recording's first pass: they are checked there, still before any
frame is extracted or any output written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from dataset_devkit.errors import ConfigError, FormatError
from dataset_devkit.integrity import did_you_mean
from dataset_devkit.nuscenes.common.tokens import normalize_channel
from dataset_devkit.nuscenes.ingest.probe import RecordingTopics
from dataset_devkit.nuscenes.ingest.schemas import (
    CAMERA_KINDS,
    KIND_CALIBRATION,
    KIND_ODOMETRY,
    KIND_POSE,
)
from dataset_devkit.nuscenes.options import IngestConfig

__all__ = ["check_names"]


def _kinds(probes: Sequence[RecordingTopics]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for probe in probes:
        for info in probe.topics:
            kinds.setdefault(info.topic, set()).add(info.kind)
    return kinds


def _topics_of(kinds: dict[str, set[str]], wanted: Iterable[str]) -> list[str]:
    allowed = set(wanted)
    return sorted(t for t, k in kinds.items() if k & allowed)


def _check_topic(
    topic: str, key: str, kinds: dict[str, set[str]], wanted: frozenset[str], what: str
) -> None:
    found = kinds.get(topic)
    candidates = _topics_of(kinds, wanted)
    if found is None:
        raise ConfigError(
            f"{key}: topic {topic!r} is in none of the recordings"
            + did_you_mean(topic, candidates, known=f"{what} topics"),
            key=key,
        )
    if not found & wanted:
        raise ConfigError(
            f"{key}: topic {topic!r} carries no {what} messages (its schema kind: "
            f"{', '.join(sorted(k or 'unknown' for k in found))})"
            + did_you_mean(topic, candidates, known=f"{what} topics"),
            key=key,
        )


def _channels(options: IngestConfig, probes: Sequence[RecordingTopics]) -> set[str]:
    """The channels the recordings' cameras will have under *options*."""
    channels: set[str] = set()
    mapped = (
        {}
        if isinstance(options.cameras, msgspec.UnsetType)
        else {c.topic: c for c in options.cameras}
    )
    for probe in probes:
        for info in probe.topics:
            if info.kind not in CAMERA_KINDS:
                continue
            camera = mapped.get(info.topic)
            if mapped and camera is None:
                continue
            if camera is not None and isinstance(camera.channel, str):
                channels.add(camera.channel)
                continue
            frame = (
                camera.frame_id
                if camera is not None and isinstance(camera.frame_id, str)
                else info.frame_id
            )
            try:
                channels.add(normalize_channel(frame))
            except FormatError:
                continue
    return channels


def check_names(
    options: IngestConfig,
    probes: Sequence[RecordingTopics],
    required_channels: Sequence[tuple[str, str]] = (),
    decoded_channels: Iterable[str] = (),
) -> None:
    """Refuse a config naming topics or channels that the recordings do not have.

    *required_channels* are ``(key, channel)`` of the ``require_cameras`` rules;
    *decoded_channels* the channels of decoded recordings among the sources.
    """
    kinds = _kinds(probes)
    if probes and not isinstance(options.cameras, msgspec.UnsetType):
        for i, camera in enumerate(options.cameras):
            _check_topic(camera.topic, f"ingest.cameras[{i}].topic", kinds, CAMERA_KINDS, "camera")
            if isinstance(camera.calibration_topic, str):
                _check_topic(
                    camera.calibration_topic,
                    f"ingest.cameras[{i}].calibration_topic",
                    kinds,
                    frozenset({KIND_CALIBRATION}),
                    "calibration",
                )
    pose = options.pose
    if probes and not isinstance(pose, msgspec.UnsetType) and isinstance(pose.topic, str):
        wanted = frozenset({KIND_ODOMETRY}) if pose.source == "odometry" else frozenset({KIND_POSE})
        what = "odometry" if pose.source == "odometry" else "pose"
        for probe in probes:
            own = {info.topic: {info.kind} for info in probe.topics}
            found = own.get(pose.topic)
            if found is None or not found & wanted:
                candidates = sorted(t for t, k in own.items() if k & wanted)
                raise ConfigError(
                    f"ingest.pose.topic: {probe.path} has no {what} topic {pose.topic!r}"
                    + did_you_mean(pose.topic, candidates, known=f"its {what} topics"),
                    key="ingest.pose.topic",
                )
    unnamed = any(
        info.kind in CAMERA_KINDS and not info.frame_id for probe in probes for info in probe.topics
    )
    if not required_channels or (unnamed and isinstance(options.cameras, msgspec.UnsetType)):
        return  # a camera whose name could not be read yet: judged after the ingest
    known = _channels(options, probes) | set(decoded_channels)
    for key, channel in required_channels:
        if channel not in known:
            raise ConfigError(
                f"{key}.value: no recording has a camera channel {channel!r}"
                + did_you_mean(channel, known, known="channels"),
                key=f"{key}.value",
            )
