"""Generate a small rendered export (videos, UE camera tracks, depth) for demos and tests.

The clips are H.264 with a fixed GOP and B-frames, like real render exports, and every frame
carries its own number as brightness so a reader that returns the wrong frame is caught.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.stereo.cameras import ue_rotator_matrix
from dataset_devkit.stereo.source import CAMERA_FORMAT, SOURCE_FILE, SOURCE_FORMAT
from dataset_devkit.stereo.video import import_av

BASELINE_CM = 6.5


def frame_image(frame: int, eye: int, height: int, width: int) -> npt.NDArray[np.uint8]:
    """The synthetic RGB picture of one frame: brightness encodes the frame number."""
    image = np.zeros((height, width, 3), dtype=np.uint8)
    image[..., 0] = (16 + 9 * frame) % 240
    image[..., 1] = np.linspace(0, 200, width, dtype=np.uint8)[None, :]
    image[: height // 2, :, 2] = 60 + 120 * eye
    bar = (frame * 4) % max(width - 8, 1)
    image[:, bar : bar + 8, 1] = 255
    return image


def write_clip(
    path: Path, frames: int, height: int, width: int, eye: int, fps: int = 24, gop: int = 4
) -> None:
    """Encode a synthetic clip with libx264, a fixed GOP and two B-frames."""
    av = import_av()
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {
            "g": str(gop),
            "keyint_min": str(gop),
            "sc_threshold": "0",
            "bf": "2",
            "crf": "16",
            "preset": "ultrafast",
        }
        for number in range(frames):
            picture = av.VideoFrame.from_ndarray(
                frame_image(number, eye, height, width), format="rgb24"
            )
            for packet in stream.encode(picture):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def depth_frames(frames: int, height: int, width: int, eye: int) -> npt.NDArray[np.float32]:
    """Camera-Z metres with the invalid cases a renderer produces (NaN, inf, 0, sky)."""
    t = np.arange(frames, dtype=np.float32)[:, None, None]
    x = np.linspace(0.0, 1.0, width, dtype=np.float32)[None, None, :]
    y = np.linspace(0.0, 1.0, height, dtype=np.float32)[None, :, None]
    depth = 2.0 + 0.25 * t + 3.0 * x + 0.5 * y + 0.01 * eye
    depth = np.broadcast_to(depth, (frames, height, width)).astype(np.float32)
    depth[:, 0, 0] = np.nan
    depth[:, 0, 1] = np.inf
    depth[:, 0, 2] = 0.0
    depth[:, 0, 3] = 1.0e9  # sky, beyond the far limit
    return depth


def camera_track(
    frames: int, height: int, width: int, eye: int, fov: float = 90.0
) -> dict[str, Any]:
    """A UE camera track dollying forward and panning, the right eye one baseline over."""
    rows = []
    for number in range(frames):
        pitch, yaw, roll = -5.0 + 0.5 * number, 30.0 + 2.0 * number, 1.0
        location = np.array([100.0 + 10.0 * number, -50.0, 170.0])
        location = location + eye * BASELINE_CM * ue_rotator_matrix(pitch, yaw, roll)[:, 1]
        rows.append(
            {
                "location_cm": location.tolist(),
                "rotation_deg": {"pitch": pitch, "yaw": yaw, "roll": roll},
                "fov_deg": fov,
                "resolution": [width, height],
                "principal_point": [(width - 1) / 2, (height - 1) / 2],
            }
        )
    return {"format": CAMERA_FORMAT, "version": 1, "frames": rows}


def make_sample_source(
    out: Path,
    *,
    pairs: int = 2,
    frames: int = 12,
    width: int = 64,
    height: int = 48,
    depth: bool = True,
    gop: int = 4,
) -> Path:
    """Write a rendered export with ``pairs`` stereo pairs under ``out``; return ``out``."""
    out.mkdir(parents=True, exist_ok=False)
    entries = []
    for number in range(pairs):
        folder = f"renders/shot{number:03d}"
        (out / folder).mkdir(parents=True)
        eyes: dict[str, dict[str, Any]] = {}
        for eye, name in enumerate(("left", "right")):
            write_clip(out / folder / f"{name}.mp4", frames, height, width, eye, gop=gop)
            track = camera_track(frames, height, width, eye)
            (out / folder / f"{name}_camera.json").write_bytes(msgspec.json.encode(track))
            eyes[name] = {"video": f"{folder}/{name}.mp4", "camera": f"{folder}/{name}_camera.json"}
            if depth:
                np.save(
                    out / folder / f"{name}_depth.npy", depth_frames(frames, height, width, eye)
                )
                eyes[name]["depth"] = f"{folder}/{name}_depth.npy"
        entries.append(
            {
                "map": 1 + number // 2,
                "scene": 1 + number,
                "cams": 0,
                "fps": 24,
                "num_frames": frames,
                "width": width,
                "height": height,
                **eyes,
                "scene_metadata": {
                    "map_name": f"Harbor{number}",
                    "environment": "harbour street",
                    "time_of_day": "dusk" if number % 2 else "noon",
                    "weather": "clear",
                    "camera_motion": "dollying forward while panning right",
                    "subjects": ["parked cars", "cranes"],
                },
                "depth_far_m": 1000.0 if depth else None,
            }
        )
    export = {
        "format": SOURCE_FORMAT,
        "version": 1,
        "dataset": "GenVR-duo",
        "snapshot": "20261023",
        "pairs": entries,
    }
    (out / SOURCE_FILE).write_bytes(msgspec.json.format(msgspec.json.encode(export), indent=2))
    return out


def middle(frames: int) -> int:
    """The middle frame number used by reader checks and contact sheets."""
    return math.floor((frames - 1) / 2)
