"""Ego poses over time, per scene, without a map: path with heading, heading and speed.

nuscenes-devkit draws ego poses only on a map (``render_egoposes_on_map``) and only from
``LIDAR_TOP`` sample data, so on a camera-only dataroot it draws nothing. This figure needs
neither: each sampled scene's ego poses (every frame of one camera, key frames and
sweeps, in time order) as a path in metres from the scene's first pose, coloured by time,
with an arrow per pose along its heading (the yaw of ``ego_pose.rotation``), beside the
heading and the speed against time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import NotFoundError
from dataset_devkit.nuscenes import Dataset
from dataset_devkit.preview.figures import figure, save
from dataset_devkit.preview.page import Section, Text

__all__ = ["EgoTrack", "ego_track", "render_ego_poses", "yaw_of"]

F64 = npt.NDArray[np.float64]


def yaw_of(rotation: Sequence[float]) -> float:
    """Heading (radians, counter-clockwise from +x) of a ``[w, x, y, z]`` quaternion."""
    w, x, y, z = (float(v) for v in rotation)
    return float(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))


@dataclass(frozen=True, slots=True)
class EgoTrack:
    """One scene's ego poses in time order, relative to its first pose."""

    #: Seconds from the first pose.
    seconds: F64
    #: ``[n, 2]`` metres from the first pose (x east, y north of the map frame).
    xy: F64
    #: The first pose's x and y, where the metres start.
    origin: F64
    #: Heading in degrees, unwrapped (no jump at ±180).
    heading_deg: F64
    #: Speed between consecutive poses, m/s (``n - 1`` values).
    speed: F64


def ego_track(poses: Sequence[dict[str, Any]]) -> EgoTrack:
    """The track of ``ego_pose`` rows (``timestamp`` µs, ``translation``, ``rotation``)."""
    ordered = sorted(poses, key=lambda pose: int(pose["timestamp"]))
    stamps = np.array([int(p["timestamp"]) for p in ordered], dtype=np.int64)
    raw = np.array([p["translation"][:2] for p in ordered], dtype=np.float64).reshape(-1, 2)
    origin = raw[0] if len(raw) else np.zeros(2)
    seconds = (stamps - (stamps[0] if len(stamps) else 0)).astype(np.float64) / 1e6
    yaw = np.unwrap(np.array([yaw_of(p["rotation"]) for p in ordered], dtype=np.float64))
    step = np.diff(seconds)
    distance = np.hypot(*np.diff(raw, axis=0).T) if len(raw) > 1 else np.zeros(0)
    speed = np.divide(distance, step, out=np.zeros_like(distance), where=step > 0)
    return EgoTrack(seconds, raw - origin, origin, np.degrees(yaw), speed)


def _scene_poses(ds: Dataset, scene: dict[str, Any], channel: str) -> list[dict[str, Any]]:
    """Every ego pose of *channel*'s frames in *scene*: from its first key frame, along
    ``next`` while the frames belong to the scene's samples (sweeps included)."""
    samples = ds.scene_samples(scene["token"])
    members = {sample["token"] for sample in samples}
    poses: list[dict[str, Any]] = []
    for sample in samples:
        try:
            row = ds.camera(sample["token"], channel)
        except NotFoundError:
            continue
        while row["sample_token"] in members:
            poses.append(ds.ego_pose(row["token"]))
            if not row["next"]:
                break
            row = ds.get("sample_data", row["next"])
        break
    return poses


def _figure(track: EgoTrack, title: str, out: Path, name: str) -> Any:
    with figure(10, 4.2) as fig:
        path, over_time = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1]})
        heading = np.radians(track.heading_deg)
        span = float(np.ptp(track.xy, axis=0).max()) if len(track.xy) > 1 else 1.0
        arrow = max(span, 1.0) / 15
        drawn = path.scatter(track.xy[:, 0], track.xy[:, 1], c=track.seconds, s=10,
                             cmap="viridis", zorder=3)  # fmt: skip
        path.quiver(track.xy[:, 0], track.xy[:, 1], arrow * np.cos(heading),
                    arrow * np.sin(heading), track.seconds, cmap="viridis", angles="xy",
                    scale_units="xy", scale=1, width=0.004, zorder=2)  # fmt: skip
        path.plot(track.xy[:, 0], track.xy[:, 1], color="#999999", linewidth=0.8, zorder=1)
        path.plot(*track.xy[0], "o", color="black", markersize=6)
        path.plot(*track.xy[-1], "X", color="black", markersize=7)
        path.set_aspect("equal", adjustable="datalim")
        path.set_xlabel(f"x (m) from {track.origin[0]:.1f}")
        path.set_ylabel(f"y (m) from {track.origin[1]:.1f}")
        path.set_title("path, arrow = heading (o start, X end)")
        fig.colorbar(drawn, ax=path, label="time (s) from the scene's first pose")
        over_time.plot(track.seconds, track.heading_deg, color="#1f77b4", marker=".")
        over_time.set_xlabel("time (s) from the scene's first pose")
        over_time.set_ylabel("heading (deg, CCW from +x)", color="#1f77b4")
        speed_axis = over_time.twinx()
        if len(track.speed):
            middle = (track.seconds[1:] + track.seconds[:-1]) / 2
            speed_axis.plot(middle, track.speed, color="#ff7f0e", marker=".")
            speed_axis.set_ylim(0, max(float(track.speed.max()), 0.1) * 1.15)
        speed_axis.set_ylabel("speed (m/s)", color="#ff7f0e")
        for axis in (over_time, speed_axis):
            axis.ticklabel_format(axis="y", useOffset=False)
        over_time.set_title("heading and speed")
        fig.suptitle(title)
        fig.tight_layout()
        return save(fig, out, name, title)


def render_ego_poses(ds: Dataset, scenes: Sequence[dict[str, Any]], out: Path) -> Section:
    """One figure per scene of *scenes*: its ego poses over time (see the module)."""
    section = Section("Ego poses over time per scene (no map needed)")
    channel = "CAM_FRONT" if "CAM_FRONT" in ds.channels else (ds.channels or ("",))[0]
    for n, scene in enumerate(scenes):
        poses = _scene_poses(ds, scene, channel) if channel else []
        if not poses:
            section.items.append(Text(f"scene {scene['name']}: no ego poses"))
            continue
        track = ego_track(poses)
        title = (
            f"scene {scene['name']}: {len(poses)} ego poses of {channel} frames over "
            f"{track.seconds[-1]:.1f} s"
        )
        section.items.append(_figure(track, title, out, f"nuscenes_scene{n:03d}_ego.png"))
    return section
