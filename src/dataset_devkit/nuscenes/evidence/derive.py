"""The derived half of the evidence: one pure function that build and export both run."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence

import msgspec

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes.evidence.records import Derived, EvRecording, EvScene
from dataset_devkit.nuscenes.evidence.scenes import derive_scenes
from dataset_devkit.nuscenes.evidence.selection import check_rules, select_scenes
from dataset_devkit.nuscenes.evidence.splits import assign_splits, check_split
from dataset_devkit.nuscenes.spec import (
    CHANNEL_RE,
    JPEG_QUALITY,
    SAMPLE_INTERVAL_NS,
    IngestConfig,
    PipelineConfig,
)

__all__ = ["check_config", "check_ingest", "derive"]

#: A scene window is at most a day, so a typo such as ``1e300`` is a ConfigError rather than
#: an integer overflow.
_MAX_SECONDS = 86_400


def check_config(config: PipelineConfig) -> None:
    """Refuse configurations outside the v1 contract, naming the key."""
    if not config.namespace or config.namespace != config.namespace.strip():
        raise ConfigError(
            "namespace must be a non-empty string without outer spaces", key="namespace"
        )
    if config.image.jpeg_quality != JPEG_QUALITY:
        raise ConfigError(
            f"image.jpeg_quality must be {JPEG_QUALITY} in the v1 contract, found "
            f"{config.image.jpeg_quality}",
            key="image.jpeg_quality",
        )
    if not config.ingest.vehicle_frame.strip():
        raise ConfigError("ingest.vehicle_frame must name a frame", key="ingest.vehicle_frame")
    check_ingest(config.ingest)
    scenario = config.scenario
    for name in (
        "scene_duration_s",
        "frame_tolerance_ms",
        "pose_tolerance_ms",
        "min_scene_duration_s",
        "gnss_pose_tolerance_m",
    ):
        value = getattr(scenario, name)
        if not math.isfinite(value):
            raise ConfigError(
                f"scenario.{name} must be a finite number, found {value}",
                key=f"scenario.{name}",
            )
    if not SAMPLE_INTERVAL_NS <= scenario.scene_duration_s * 1e9 <= _MAX_SECONDS * 1e9:
        raise ConfigError(
            f"scenario.scene_duration_s must be within [0.5, {_MAX_SECONDS}] seconds, "
            f"found {scenario.scene_duration_s}",
            key="scenario.scene_duration_s",
        )
    if not 0 < scenario.frame_tolerance_ms < SAMPLE_INTERVAL_NS / 2e6:
        raise ConfigError(
            "scenario.frame_tolerance_ms must be within (0, 250) so a frame matches one grid "
            f"point at most, found {scenario.frame_tolerance_ms}",
            key="scenario.frame_tolerance_ms",
        )
    if not scenario.pose_tolerance_ms > 0:
        raise ConfigError(
            f"scenario.pose_tolerance_ms must be positive, found {scenario.pose_tolerance_ms}",
            key="scenario.pose_tolerance_ms",
        )
    if not scenario.gnss_pose_tolerance_m > 0:
        raise ConfigError(
            "scenario.gnss_pose_tolerance_m must be positive, found "
            f"{scenario.gnss_pose_tolerance_m}",
            key="scenario.gnss_pose_tolerance_m",
        )
    if not scenario.min_scene_duration_s >= 0:
        raise ConfigError(
            f"scenario.min_scene_duration_s must be >= 0, found {scenario.min_scene_duration_s}",
            key="scenario.min_scene_duration_s",
        )
    check_rules(scenario.rules)
    check_split(config.split)


def _named(value: object, key: str) -> None:
    if isinstance(value, str) and not value.strip():
        raise ConfigError(f"{key} must not be empty", key=key)


def check_ingest(ingest: IngestConfig) -> None:
    """``[ingest]`` on its own: pose source, camera mapping, exclusions (no recording read)."""
    pose = ingest.pose
    if not isinstance(pose, msgspec.UnsetType):
        _named(pose.world_frame, "ingest.pose.world_frame")
        _named(pose.topic, "ingest.pose.topic")
        needs_topic = pose.source in ("odometry", "pose")
        if needs_topic and not isinstance(pose.topic, str):
            raise ConfigError(
                f'ingest.pose.topic: source = "{pose.source}" takes its poses from a topic; '
                'name it (topic = "/odom")',
                key="ingest.pose.topic",
            )
        if not needs_topic and isinstance(pose.topic, str):
            raise ConfigError(
                f'ingest.pose.topic: source = "{pose.source}" reads no pose topic; use '
                'source = "odometry" or "pose" with a topic, or remove topic',
                key="ingest.pose.topic",
            )
    patterns = () if isinstance(ingest.exclude_topics, msgspec.UnsetType) else ingest.exclude_topics
    for i, pattern in enumerate(patterns):
        _named(pattern, f"ingest.exclude_topics[{i}]")
    if isinstance(ingest.cameras, msgspec.UnsetType):
        return
    if not ingest.cameras:
        raise ConfigError(
            "ingest.cameras lists no camera; list at least one, or remove it to export every "
            "camera topic",
            key="ingest.cameras",
        )
    topics: dict[str, int] = {}
    channels: dict[str, int] = {}
    for i, cam in enumerate(ingest.cameras):
        key = f"ingest.cameras[{i}]"
        _named(cam.topic, f"{key}.topic")
        _named(cam.frame_id, f"{key}.frame_id")
        _named(cam.calibration_topic, f"{key}.calibration_topic")
        if cam.topic in topics:
            raise ConfigError(
                f"{key}.topic: {cam.topic!r} is listed twice (also ingest.cameras"
                f"[{topics[cam.topic]}])",
                key=f"{key}.topic",
            )
        topics[cam.topic] = i
        excluded = next((p for p in patterns if fnmatch.fnmatchcase(cam.topic, p)), None)
        if excluded is not None:
            raise ConfigError(
                f"{key}.topic: {cam.topic!r} is also excluded by ingest.exclude_topics "
                f"{excluded!r}",
                key=f"{key}.topic",
            )
        if isinstance(cam.channel, str):
            if CHANNEL_RE.fullmatch(cam.channel) is None:
                raise ConfigError(
                    f"{key}.channel: {cam.channel!r} is not a camera channel; use CAM_ and "
                    "upper-case words (CAM_FRONT, CAM_FRONT_LEFT, CAM_BACK)",
                    key=f"{key}.channel",
                )
            if cam.channel in channels:
                raise ConfigError(
                    f"{key}.channel: {cam.channel} is also the channel of ingest.cameras"
                    f"[{channels[cam.channel]}]; each camera has its own channel",
                    key=f"{key}.channel",
                )
            channels[cam.channel] = i


def derive(recordings: Sequence[EvRecording], config: PipelineConfig) -> Derived:
    """Scenes, selection and splits of *recordings* (in their evidence order) under *config*."""
    check_config(config)
    scenes: list[EvScene] = []
    for rec in recordings:
        scenes.extend(
            derive_scenes(rec, config.scenario, include_sweeps=config.export.include_sweeps)
        )
    names = {r.source_digest: (r.recording_id, r.source_name) for r in recordings}
    steps, selected, rejected_by = select_scenes(scenes, config.scenario.rules, names)
    by_id = {s.scene_id: s for s in scenes}
    splits = assign_splits(config.namespace, [by_id[i] for i in selected], config.split)
    return Derived(
        scenes=tuple(scenes),
        selection=steps,
        selected_scene_ids=selected,
        rejected_by=rejected_by,
        splits=splits,
    )
