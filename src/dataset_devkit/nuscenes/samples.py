"""Small synthetic drive recordings written with the real writers, for the demo and tests.

A vehicle drives east at constant speed near Munich; each camera sees a frame-numbered
gradient. :func:`write_sample_mcap` writes it with the ``mcap`` writer as Foxglove messages,
protobuf (schemas in :mod:`dataset_devkit.nuscenes.common.foxglove_schemas`) or JSON;
:func:`write_sample_decoded` writes a decoded recording folder (videos through PyAV).
Nothing here is committed as binary data.
"""

from __future__ import annotations

import base64
import heapq
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_devkit.errors import ConfigError, MissingDependencyError
from dataset_devkit.nuscenes.common.geodesy import LocalEnu
from dataset_devkit.nuscenes.common.jpeg import encode_jpeg

__all__ = ["SampleDrive", "sample_events", "write_sample_decoded", "write_sample_mcap"]

_K_SCALE = 0.9


@dataclass(frozen=True, slots=True)
class SampleDrive:
    """The synthetic drive: timing, cameras and trajectory."""

    cameras: Sequence[str] = ("cam_front", "cam_back")
    duration_s: float = 12.0
    fps: float = 10.0
    width: int = 64
    height: int = 48
    #: 2023-11-14 11:06:40 UTC: daytime at the sample location.
    start_ns: int = 1_699_960_000_000_000_000
    speed_mps: float = 5.0
    origin: tuple[float, float, float] = (48.137, 11.575, 520.0)
    quality: int = 90
    #: Log time lags capture time by this much, as with a real recorder's queueing.
    log_delay_ns: int = 0

    def frame_times(self) -> list[int]:
        n = int(self.duration_s * self.fps)
        return [self.start_ns + round(i * 1e9 / self.fps) for i in range(n)]

    def pose_times(self) -> list[int]:
        """Poses and fixes at 20 Hz, from slightly before the first frame to after the last."""
        n = int(self.duration_s * 20) + 4
        return [self.start_ns - 100_000_000 + i * 50_000_000 for i in range(n)]

    def enu(self, t_ns: int) -> tuple[float, float, float]:
        dt = (t_ns - self.start_ns) / 1e9
        return (self.speed_mps * dt, 0.5 * math.sin(dt / 4), 0.0)

    def yaw(self, t_ns: int) -> float:
        return 0.05 * math.sin((t_ns - self.start_ns) / 4e9)

    def intrinsic(self) -> list[float]:
        f = _K_SCALE * self.width
        return [f, 0.0, self.width / 2, 0.0, f, self.height / 2, 0.0, 0.0, 1.0]

    def mount(self, index: int) -> tuple[tuple[float, float, float], float]:
        """Camera position in the vehicle frame and its yaw (each camera turned 90° more)."""
        yaw = index * math.pi / 2
        return ((1.5 * math.cos(yaw), 1.5 * math.sin(yaw), 1.6), yaw)

    def image(self, camera: int, frame: int) -> Any:
        try:
            from PIL import Image
        except ImportError as exc:  # pragma: no cover
            raise MissingDependencyError("PIL", extra="video", purpose="sample frames") from exc
        img = Image.new("RGB", (self.width, self.height))
        shade = (frame * 7) % 256
        img.paste((shade, (camera * 80) % 256, 255 - shade), (0, 0, self.width // 2, self.height))
        img.paste((camera * 60 % 256, shade, 128), (self.width // 2, 0, self.width, self.height))
        return img


def _optical_rotation_xyzw(yaw: float) -> tuple[float, float, float, float]:
    """Vehicle-to-camera-optical rotation (z forward, x right, y down) turned by *yaw*."""
    # optical frame = R_z(yaw) * R_z(-90°) * R_x(-90°)
    qz = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
    base = (-0.5, 0.5, -0.5, 0.5)
    x1, y1, z1, w1 = qz
    x2, y2, z2, w2 = base
    return (
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
    )


def sample_events(drive: SampleDrive) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Every message of the drive as ``(log_time, kind, JSON-shaped payload)``, in time order."""
    enu = LocalEnu(*drive.origin)
    t0 = drive.start_ns - 200_000_000
    stamp = _stamp(t0)
    for i, name in enumerate(drive.cameras):
        (x, y, z), yaw = drive.mount(i)
        qx, qy, qz, qw = _optical_rotation_xyzw(yaw)
        tf = {
            "timestamp": stamp,
            "parent_frame_id": "base_link",
            "child_frame_id": name,
            "translation": {"x": x, "y": y, "z": z},
            "rotation": {"x": qx, "y": qy, "z": qz, "w": qw},
        }
        yield t0, "tf", tf
        calib = {
            "timestamp": stamp,
            "frame_id": name,
            "width": drive.width,
            "height": drive.height,
            "distortion_model": "plumb_bob",
            "D": [0.01, -0.002, 0.0, 0.0, 0.0],
            "K": drive.intrinsic(),
            "R": [1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0],
            "P": [0.0] * 12,
        }
        yield t0, "calibration", calib
    # Poses, fixes and images are generated lazily and merged in time order (``heapq.merge``
    # is stable, so ties keep this order as a stable sort of one list would): an hour-long
    # drive is written without holding its frames in memory.
    yield from (
        (t + drive.log_delay_ns, kind, payload)
        for t, kind, payload in heapq.merge(
            _pose_events(drive, enu), _image_events(drive), key=lambda ev: (ev[0], ev[1])
        )
    )


def _pose_events(drive: SampleDrive, enu: LocalEnu) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Ego transform then GNSS fix at each pose time (sorted by time, then kind)."""
    for t in drive.pose_times():
        e, n, u = drive.enu(t)
        yaw = drive.yaw(t)
        lat, lon, alt = enu.to_wgs84(e, n, u)
        yield (
            t,
            "ego",
            {
                "timestamp": _stamp(t),
                "parent_frame_id": "world",
                "child_frame_id": "base_link",
                "translation": {"x": e, "y": n, "z": u},
                "rotation": {"x": 0.0, "y": 0.0, "z": math.sin(yaw / 2), "w": math.cos(yaw / 2)},
            },
        )
        yield (
            t,
            "fix",
            {
                "timestamp": _stamp(t),
                "frame_id": "gnss",
                "latitude": lat,
                "longitude": lon,
                "altitude": alt,
            },
        )


def _image_events(drive: SampleDrive) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Each camera's JPEG per frame time, camera ``i`` captured ``i`` microseconds late."""
    for k, t in enumerate(drive.frame_times()):
        for i, name in enumerate(drive.cameras):
            data = encode_jpeg(drive.image(i, k), drive.quality)
            stamp = _stamp(t + i * 1000)
            yield (
                t + i * 1000,
                "image",
                {"timestamp": stamp, "frame_id": name, "format": "jpeg", "data": data},
            )


def _stamp(t: int) -> dict[str, int]:
    return {"sec": t // 1_000_000_000, "nsec": t % 1_000_000_000}


def write_sample_mcap(
    path: Path,
    drive: SampleDrive | None = None,
    *,
    encoding: str = "protobuf",
    chunk_size: int = 1 << 20,
) -> Path:
    """Write *drive* as an MCAP file of Foxglove messages, ``protobuf`` or ``json`` encoded.

    *chunk_size* is the MCAP writer's (bytes per chunk, protobuf only): small chunks make a
    small drive read like a long one, many chunks long.
    """
    drive = drive or SampleDrive()
    if encoding == "protobuf":
        _write_protobuf(path, drive, chunk_size)
    elif encoding == "json":
        _write_json(path, drive)
    else:
        raise ConfigError(
            f"encoding must be 'protobuf' or 'json', found {encoding!r}", key="encoding"
        )
    return path


def _write_protobuf(path: Path, drive: SampleDrive, chunk_size: int) -> None:
    try:
        from mcap.writer import CompressionType, Writer
    except ImportError as exc:
        raise MissingDependencyError("mcap", extra="mcap", purpose="writing sample MCAP") from exc
    from dataset_devkit.nuscenes.common.foxglove_schemas import message_class, schema_data

    def msg(name: str, **fields: Any) -> Any:
        return message_class(f"foxglove.{name}")(**fields)

    def ts(stamp: dict[str, int]) -> Any:
        return message_class("google.protobuf.Timestamp")(seconds=stamp["sec"], nanos=stamp["nsec"])

    def transform(p: dict[str, Any]) -> Any:
        return msg(
            "FrameTransform",
            timestamp=ts(p["timestamp"]),
            parent_frame_id=p["parent_frame_id"],
            child_frame_id=p["child_frame_id"],
            translation=msg("Vector3", **p["translation"]),
            rotation=msg("Quaternion", **p["rotation"]),
        )

    def encode(kind: str, p: dict[str, Any]) -> tuple[str, str, Any]:
        if kind in ("tf", "ego"):
            return "/tf", "FrameTransforms", msg("FrameTransforms", transforms=[transform(p)])
        if kind == "calibration":
            fields: tuple[str, ...] = (
                "frame_id",
                "width",
                "height",
                "distortion_model",
                "D",
                "K",
                "R",
                "P",
            )
            message = msg(
                "CameraCalibration",
                timestamp=ts(p["timestamp"]),
                **{k: p[k] for k in fields},
            )
            return f"/{p['frame_id']}/calibration", "CameraCalibration", message
        if kind == "fix":
            fields = ("frame_id", "latitude", "longitude", "altitude")
            message = msg("LocationFix", timestamp=ts(p["timestamp"]), **{k: p[k] for k in fields})
            return "/gnss", "LocationFix", message
        message = msg(
            "CompressedImage",
            timestamp=ts(p["timestamp"]),
            frame_id=p["frame_id"],
            data=p["data"],
            format="jpeg",
        )
        return f"/{p['frame_id']}/image", "CompressedImage", message

    # Uncompressed chunks and our own library name: the bytes depend on the drive only, not
    # on the installed zstd or mcap versions (the recording's digest feeds the root hash).
    with path.open("xb") as f:
        writer = Writer(f, chunk_size=chunk_size, compression=CompressionType.NONE)
        writer.start(profile="", library="dataset-devkit samples")
        schemas: dict[str, int] = {}
        channels: dict[str, int] = {}
        for t, kind, p in sample_events(drive):
            topic, name, message = encode(kind, p)
            if topic not in channels:
                schema = f"foxglove.{name}"
                if schema not in schemas:
                    schemas[schema] = writer.register_schema(
                        name=schema, encoding="protobuf", data=schema_data(schema)
                    )
                channels[topic] = writer.register_channel(
                    topic=topic, message_encoding="protobuf", schema_id=schemas[schema]
                )
            writer.add_message(
                channels[topic],
                log_time=t,
                publish_time=t,
                data=message.SerializeToString(deterministic=True),
            )
        writer.finish()  # type: ignore[no-untyped-call]


_JSON_SCHEMA = b'{"type": "object"}'
_JSON_TOPICS = {
    "tf": ("/tf", "foxglove.FrameTransform"),
    "ego": ("/tf", "foxglove.FrameTransform"),
    "fix": ("/gnss", "foxglove.LocationFix"),
}


def _write_json(path: Path, drive: SampleDrive) -> None:
    try:
        from mcap.writer import Writer
    except ImportError as exc:  # pragma: no cover
        raise MissingDependencyError("mcap", extra="mcap", purpose="writing sample MCAP") from exc
    with path.open("xb") as f:
        writer = Writer(f)
        writer.start(profile="", library="dataset-devkit samples")
        ids: dict[tuple[str, str], int] = {}

        def channel(topic: str, schema: str) -> int:
            if (topic, schema) not in ids:
                sid = writer.register_schema(name=schema, encoding="jsonschema", data=_JSON_SCHEMA)
                ids[(topic, schema)] = writer.register_channel(
                    topic=topic, message_encoding="json", schema_id=sid
                )
            return ids[(topic, schema)]

        for t, kind, p in sample_events(drive):
            if kind == "image":
                key = (f"/{p['frame_id']}/image", "foxglove.CompressedImage")
                p = {**p, "data": base64.b64encode(p["data"]).decode()}
            elif kind == "calibration":
                key = (f"/{p['frame_id']}/calibration", "foxglove.CameraCalibration")
            else:
                key = _JSON_TOPICS[kind]
            writer.add_message(
                channel(*key), log_time=t, publish_time=t, data=json.dumps(p).encode()
            )
        writer.finish()  # type: ignore[no-untyped-call]


def write_sample_decoded(
    folder: Path, drive: SampleDrive | None = None, *, recording_id: str = "sample-decoded"
) -> Path:
    """Write *drive* as a decoded recording folder: ``recording.json`` plus one MP4 per camera."""
    drive = drive or SampleDrive()
    try:
        import av
    except ImportError as exc:
        raise MissingDependencyError("av", extra="video", purpose="writing sample video") from exc
    folder.mkdir(parents=True, exist_ok=False)
    enu = LocalEnu(*drive.origin)
    times = drive.frame_times()
    cameras = []
    for i, name in enumerate(drive.cameras):
        video = f"{name}.mp4"
        with av.open(str(folder / video), mode="w") as container:
            stream = container.add_stream("mpeg4", rate=round(drive.fps))
            stream.width, stream.height, stream.pix_fmt = drive.width, drive.height, "yuv420p"
            stream.options = {"qscale": "2"}
            for k in range(len(times)):
                frame = av.VideoFrame.from_image(drive.image(i, k))  # type: ignore[no-untyped-call]
                for packet in stream.encode(frame):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        (x, y, z), yaw = drive.mount(i)
        qx, qy, qz, qw = _optical_rotation_xyzw(yaw)
        angle = 2 * math.acos(max(-1.0, min(1.0, qw)))
        s = math.sin(angle / 2) or 1.0
        intrinsic = drive.intrinsic()
        cameras.append(
            {
                "name": name,
                "video": video,
                "timestamps_ns": [t + i * 1000 for t in times],
                "width": drive.width,
                "height": drive.height,
                "K": [intrinsic[0:3], intrinsic[3:6], intrinsic[6:9]],
                "rotation_vector": [qx / s * angle, qy / s * angle, qz / s * angle],
                "translation": [x, y, z],
                "distortion_model": "plumb_bob",
                "distortion": [0.01, -0.002, 0.0, 0.0, 0.0],
            }
        )
    poses, fixes = [], []
    for t in drive.pose_times():
        e, n, u = drive.enu(t)
        poses.append(
            {
                "timestamp_ns": t,
                "translation": [e, n, u],
                "rotation_vector": [0.0, 0.0, drive.yaw(t)],
            }
        )
        lat, lon, alt = enu.to_wgs84(e, n, u)
        fixes.append(
            {"timestamp_ns": t, "latitude_deg": lat, "longitude_deg": lon, "altitude_m": alt}
        )
    lat0, lon0, alt0 = drive.origin
    doc = {
        "schema_version": 1,
        "recording_id": recording_id,
        "vehicle": "sample-vehicle",
        "location": "munich",
        "enu_origin": {"latitude_deg": lat0, "longitude_deg": lon0, "altitude_m": alt0},
        "cameras": cameras,
        "ego_poses": poses,
        "gnss": fixes,
    }
    (folder / "recording.json").write_text(json.dumps(doc, indent=1))
    return folder
