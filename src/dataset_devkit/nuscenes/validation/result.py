"""The exact ``validation.json`` a staging or a published dataroot must hold.

Success evidence is deterministic: it names the checks that passed, with details derived only
from the tables, and the scene, sample and camera the official loader resolved (the first
selected scene, its first sample, its first channel in sorted order). Because the document is
a pure function of the tables, revalidation can recompute it and demand byte equality, and
the same inputs always give the same root hash.
"""

from __future__ import annotations

from typing import Final

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.tables import LoadedTables

__all__ = ["CHECK_NAMES", "expected_validation_document", "loader_target"]

#: The checks the build service runs, in order; each is recorded in validation.json.
CHECK_NAMES: Final = (
    "token_uniqueness",
    "foreign_keys",
    "scene_sample_chains",
    "camera_chains",
    "camera_coverage",
    "jpeg_images",
    "finite_poses_and_calibration",
    "normalized_quaternions",
    "map_log_links",
    "extension_references",
    "split_assignment",
    "source_gnss_contract",
    "official_loader",
)


def loader_target(t: LoadedTables) -> tuple[str, str, str]:
    """``(scene, sample, channel)`` the official-loader check resolves, or empty strings."""
    if not t.tables["scene"]:
        return "", "", ""
    scene = t.tables["scene"][0]
    sample = scene["first_sample_token"]
    channels = []
    for sd in t.tables["sample_data"]:
        if sd["sample_token"] == sample and sd["is_key_frame"]:
            cs = t.index["calibrated_sensor"].get(sd["calibrated_sensor_token"], {})
            sensor = t.index["sensor"].get(cs.get("sensor_token", ""))
            if sensor is not None:
                channels.append(sensor["channel"])
    channels.sort()
    return scene["token"], sample, channels[0] if channels else ""


def _details(t: LoadedTables) -> dict[str, str]:
    rows = sum(len(rows) for rows in t.tables.values())
    n_sd = len(t.tables["sample_data"])
    scene, sample, channel = loader_target(t)
    return {
        "token_uniqueness": f"{rows} rows in {len(t.tables)} tables",
        "foreign_keys": "every official foreign key resolves",
        "scene_sample_chains": (
            f"{len(t.tables['scene'])} scenes, {len(t.tables['sample'])} samples"
        ),
        "camera_chains": f"{n_sd} sample_data rows on per-scene, per-channel chains",
        "camera_coverage": f"{len(t.tables['sensor'])} channels on every sample",
        "jpeg_images": f"{n_sd} JPEG images decoded at their recorded size",
        "finite_poses_and_calibration": (
            f"{len(t.tables['ego_pose'])} ego poses, "
            f"{len(t.tables['calibrated_sensor'])} calibrations"
        ),
        "normalized_quaternions": "every rotation is a unit wxyz quaternion",
        "map_log_links": f"one {spec.MAP_CATEGORY} map linked to {len(t.tables['log'])} logs",
        "extension_references": "every mz_extensions reference resolves",
        "split_assignment": "every scene in exactly one of train/test",
        "source_gnss_contract": "source, privacy, pose frame and GNSS rows match the contract",
        "official_loader": f"nuscenes-devkit 1.2.0 opened scene {scene} sample {sample} {channel}",
    }


def expected_validation_document(t: LoadedTables, *, passed: bool) -> spec.ValidationDocument:
    """``validation.json`` as the exporter writes it (``not_run``) or after a passed build."""
    if not passed:
        return spec.ValidationDocument(
            schema_version=spec.EXTENSION_SCHEMA_VERSION, state=spec.VALIDATION_NOT_RUN
        )
    details = _details(t)
    scene, sample, channel = loader_target(t)
    return spec.ValidationDocument(
        schema_version=spec.EXTENSION_SCHEMA_VERSION,
        state=spec.VALIDATION_PASSED,
        checks=tuple(
            spec.ValidationCheck(name=name, passed=True, detail=details[name])
            for name in CHECK_NAMES
        ),
        loader_scene_token=scene,
        loader_sample_token=sample,
        loader_channel=channel,
    )
