"""Check an exported nuScenes dataroot against a recording's ground truth, through the loader.

``compare_dataroot`` opens the dataroot with the official ``NuScenes`` class and checks, for
every camera ``sample_data`` of the mapped channels: that its timestamp is one of the
camera's frame stamps, that ``ego_pose`` is the truth's ``world_frame → vehicle_frame``
transform at that time, that ``calibrated_sensor`` is the static chain from the vehicle
frame to the camera's optical frame with the published K, and that the image decodes to
within *min_psnr_db* of the source pixels. It returns every disagreement as a line, so a
test asserts ``== []`` and sees all of them at once.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.nuscenes.robots.geometry import Matrix, matrix, pose_error
from tests.nuscenes.robots.images import psnr
from tests.nuscenes.robots.recording import RecordedRobot

__all__ = ["DatarootComparison", "compare_dataroot"]


@dataclass(frozen=True, slots=True)
class DatarootComparison:
    """What was compared and every disagreement found (empty when the export is exact)."""

    checked: dict[str, int]
    mismatches: list[str]
    #: The lowest image PSNR seen per channel (dB).
    worst_psnr_db: dict[str, float]


def _nuscenes_matrix(translation: list[float], rotation_wxyz: list[float]) -> Matrix:
    w, x, y, z = rotation_wxyz
    return matrix(translation, (x, y, z, w))


def compare_dataroot(
    dataroot: Path,
    rec: RecordedRobot,
    *,
    world_frame: str,
    vehicle_frame: str,
    channels: dict[str, str],
    version: str = "v1.0-trainval",
    position_tolerance_m: float = 1e-6,
    rotation_tolerance_rad: float = 1e-9,
    min_psnr_db: float = 40.0,
) -> DatarootComparison:
    """Compare *dataroot* with *rec*'s truth; *channels* maps camera name → nuScenes channel."""
    from nuscenes.nuscenes import NuScenes
    from PIL import Image

    nusc = NuScenes(version=version, dataroot=str(dataroot), verbose=False)
    camera_of = {channel: name for name, channel in channels.items()}
    truth = rec.truth
    mismatches: list[str] = []
    checked = dict.fromkeys(channels.values(), 0)
    worst = dict.fromkeys(channels.values(), float("inf"))
    for sd in nusc.sample_data:
        cs = nusc.get("calibrated_sensor", sd["calibrated_sensor_token"])
        channel = nusc.get("sensor", cs["sensor_token"])["channel"]
        if channel not in camera_of:
            continue
        cam = truth.camera(camera_of[channel])
        where = f"{channel} @ {sd['timestamp']} µs"
        checked[channel] += 1
        t_ns = sd["timestamp"] * 1000
        if t_ns not in cam.stamps:
            mismatches.append(f"{where}: not the header stamp of a {cam.name} frame")
            continue
        ego = nusc.get("ego_pose", sd["ego_pose_token"])
        got = _nuscenes_matrix(ego["translation"], ego["rotation"])
        distance, angle = pose_error(got, truth.pose(world_frame, vehicle_frame, t_ns))
        if distance > position_tolerance_m or angle > rotation_tolerance_rad:
            mismatches.append(
                f"{where}: ego_pose off by {distance:.3g} m, {angle:.3g} rad "
                f"from {world_frame} → {vehicle_frame}"
            )
        got = _nuscenes_matrix(cs["translation"], cs["rotation"])
        distance, angle = pose_error(got, truth.extrinsic(vehicle_frame, cam.frame))
        if distance > position_tolerance_m or angle > rotation_tolerance_rad:
            mismatches.append(
                f"{where}: calibrated_sensor off by {distance:.3g} m, {angle:.3g} rad "
                f"from {vehicle_frame} → {cam.frame}"
            )
        if not np.allclose(cs["camera_intrinsic"], cam.intrinsic, rtol=0, atol=1e-9):
            mismatches.append(
                f"{where}: camera_intrinsic {cs['camera_intrinsic']} != {cam.intrinsic}"
            )
        if (sd["width"], sd["height"]) != (cam.width, cam.height):
            mismatches.append(
                f"{where}: {sd['width']}x{sd['height']}, expected {cam.width}x{cam.height}"
            )
            continue
        with Image.open(
            io.BytesIO(Path(nusc.get_sample_data_path(sd["token"])).read_bytes())
        ) as img:
            pixels = np.asarray(img.convert("L" if cam.payload in ("mono8", "mono16") else "RGB"))
        quality = psnr(pixels, truth.pixels(cam.name, t_ns))
        worst[channel] = min(worst[channel], quality)
        if quality < min_psnr_db:
            mismatches.append(f"{where}: image PSNR {quality:.1f} dB < {min_psnr_db} dB")
    for channel, n in checked.items():
        if n == 0:
            mismatches.append(f"{channel}: no sample_data in the dataroot")
    return DatarootComparison(checked=checked, mismatches=mismatches, worst_psnr_db=worst)
