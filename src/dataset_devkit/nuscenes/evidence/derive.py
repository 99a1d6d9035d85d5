"""The derived half of the evidence: one pure function that build and export both run."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes.evidence.records import Derived, EvRecording, EvScene
from dataset_devkit.nuscenes.evidence.scenes import derive_scenes
from dataset_devkit.nuscenes.evidence.selection import check_rules, select_scenes
from dataset_devkit.nuscenes.evidence.splits import assign_splits, check_split
from dataset_devkit.nuscenes.spec import JPEG_QUALITY, SAMPLE_INTERVAL_NS, PipelineConfig

__all__ = ["check_config", "derive"]

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
