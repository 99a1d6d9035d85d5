"""Computed scene tags (the seed's Task 7, data half): never derived from human labels."""

from __future__ import annotations

from typing import Literal, cast

from dataset_devkit.nuscenes.evidence.records import EvScene
from dataset_devkit.nuscenes.spec import SceneTags

__all__ = ["scene_tags"]


def scene_tags(scene: EvScene, scene_token: str, scene_name: str) -> SceneTags:
    """Tags of one selected scene from its grid, track statistics and cameras."""
    grid = scene.grid_timestamps_ns
    duration = (grid[-1] - grid[0]) / 1e9 if len(grid) > 1 else 0.0
    return SceneTags(
        scene_token=scene_token,
        scene_name=scene_name,
        source_digest=scene.source_digest,
        duration_s=duration,
        distance_m=scene.distance_m,
        mean_speed_mps=scene.mean_speed_mps,
        max_speed_mps=scene.max_speed_mps,
        time_of_day=cast(Literal["night", "dawn", "day", "dusk", "unknown"], scene.time_of_day),
        local_solar_hour=scene.local_solar_hour,
        channels=scene.channels,
        nbr_samples=len(grid),
    )
