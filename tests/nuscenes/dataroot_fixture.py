"""A tiny valid nuScenes dataroot writer for the validator, SDK and build-service tests.

It writes the 13 official tables, real JPEGs, the compatibility map scaffold and the
``mz_extensions`` documents, so these tests do not wait for the exporter; the end-to-end
test goes through the real exporter.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

VERSION = "v1.0-trainval"


def token(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:32]


def jpeg_bytes(width: int, height: int, shade: int = 90) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (shade, 120, 200)).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def png_black_1x1() -> bytes:
    buf = io.BytesIO()
    Image.new("L", (1, 1), 0).save(buf, format="PNG")
    return buf.getvalue()


@dataclass
class Fixture:
    root: Path
    tables: dict[str, list[dict[str, Any]]]
    extensions: dict[str, Any] = field(default_factory=dict)

    def first(self, table: str) -> dict[str, Any]:
        return self.tables[table][0]


def build_tables(
    *, scenes: int = 2, samples: int = 3, cameras: tuple[str, ...] = ("CAM_FRONT", "CAM_BACK"),
    width: int = 16, height: int = 8,
) -> dict[str, list[dict[str, Any]]]:
    t: dict[str, list[dict[str, Any]]] = {name: [] for name in (
        "category", "attribute", "visibility", "instance", "sensor", "calibrated_sensor",
        "ego_pose", "log", "scene", "sample", "sample_data", "sample_annotation", "map")}
    log = token("log", 0)
    t["log"].append({"token": log, "logfile": "rec-0", "vehicle": "demo-car",
                     "date_captured": "2026-01-02", "location": "recording-local"})
    calib = {}
    for c, channel in enumerate(cameras):
        sensor = token("sensor", channel)
        t["sensor"].append({"token": sensor, "channel": channel, "modality": "camera"})
        calib[channel] = token("calibrated_sensor", channel)
        t["calibrated_sensor"].append({
            "token": calib[channel], "sensor_token": sensor, "translation": [1.0, 0.0, 1.5 + c],
            "rotation": [0.5, -0.5, 0.5, -0.5],
            "camera_intrinsic": [[10.0, 0.0, 8.0], [0.0, 10.0, 4.0], [0.0, 0.0, 1.0]]})
    for s in range(scenes):
        scene = token("scene", s)
        sample_tokens = [token("sample", s, i) for i in range(samples)]
        t["scene"].append({"token": scene, "name": f"mz-{token('rec')[:12]}-{s:04d}", "description": "",
                           "log_token": log, "nbr_samples": samples,
                           "first_sample_token": sample_tokens[0],
                           "last_sample_token": sample_tokens[-1]})
        for i, st in enumerate(sample_tokens):
            ts = 1_000_000 + s * 20_000_000 + i * 500_000
            t["sample"].append({"token": st, "timestamp": ts, "scene_token": scene,
                                "prev": sample_tokens[i - 1] if i else "",
                                "next": sample_tokens[i + 1] if i + 1 < samples else ""})
        for c, channel in enumerate(cameras):
            sds = [token("sample_data", s, i, channel) for i in range(samples)]
            for i, sd in enumerate(sds):
                ts = 1_000_000 + s * 20_000_000 + i * 500_000 + c
                pose = token("ego_pose", sd)
                t["ego_pose"].append({"token": pose, "timestamp": ts,
                                      "rotation": [1.0, 0.0, 0.0, 0.0],
                                      "translation": [float(i), float(s), 0.0]})
                t["sample_data"].append({
                    "token": sd, "sample_token": sample_tokens[i], "ego_pose_token": pose,
                    "calibrated_sensor_token": calib[channel],
                    "filename": f"samples/{channel}/{sd}.jpg", "fileformat": "jpg",
                    "width": width, "height": height, "timestamp": ts, "is_key_frame": True,
                    "prev": sds[i - 1] if i else "", "next": sds[i + 1] if i + 1 < samples else ""})
    t["map"].append({"token": token("map"), "log_tokens": [log],
                     "category": "compatibility_scaffold",
                     "filename": "maps/compatibility_scaffold.png"})
    return t


def write_tables(root: Path, tables: dict[str, list[dict[str, Any]]]) -> None:
    (root / VERSION).mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        (root / VERSION / f"{name}.json").write_text(json.dumps(rows, indent=2))


def write_dataroot(root: Path, **kwargs: Any) -> Fixture:
    """Write a complete, valid staging dataroot at *root* and return its tables."""
    tables = build_tables(**kwargs)
    write_tables(root, tables)
    for sd in tables["sample_data"]:
        path = root / sd["filename"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg_bytes(sd["width"], sd["height"]))
    (root / "maps").mkdir(exist_ok=True)
    (root / tables["map"][0]["filename"]).write_bytes(png_black_1x1())
    return Fixture(root=root, tables=tables)
