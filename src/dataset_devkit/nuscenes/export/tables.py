"""The official tables of an export, built in memory from verified evidence (no I/O here).

Every rule that concerns records lives here: deterministic tokens, scene names that cannot
collide with the official split lists, ``timestamp_ns // 1000`` with strict per-chain order,
prev/next chains per scene and per channel, finite poses and calibrations.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.geometry import quat_normalize
from dataset_devkit.nuscenes.common.tokens import TokenChain, make_token
from dataset_devkit.nuscenes.evidence.records import (
    EvFrame,
    EvidenceDocument,
    EvImage,
    EvRecording,
    EvScene,
)
from dataset_devkit.nuscenes.spec import (
    CAMERA_MODALITY,
    JPEG_FILEFORMAT,
    MAP_CATEGORY,
    MAP_FILENAME,
    SAMPLES_DIR,
    SCENE_NAME_RE,
    SWEEPS_DIR,
    CalibratedSensor,
    EgoPose,
    Log,
    Map,
    Quat,
    Sample,
    SampleData,
    Scene,
    Sensor,
)

__all__ = ["ExportedFrame", "Tables", "build_tables", "scene_name"]


@dataclass(frozen=True, slots=True)
class ExportedFrame:
    """One sample_data row, its pose, its evidence image and its scene."""

    record: SampleData
    ego_pose: EgoPose
    frame: EvFrame
    image: EvImage
    scene_id: str


@dataclass
class Tables:
    """The official records of one export plus the links extensions need."""

    sensor: list[Sensor] = field(default_factory=list)
    calibrated_sensor: list[CalibratedSensor] = field(default_factory=list)
    ego_pose: list[EgoPose] = field(default_factory=list)
    log: list[Log] = field(default_factory=list)
    scene: list[Scene] = field(default_factory=list)
    sample: list[Sample] = field(default_factory=list)
    sample_data: list[SampleData] = field(default_factory=list)
    map: list[Map] = field(default_factory=list)
    frames: list[ExportedFrame] = field(default_factory=list)
    #: scene id -> (scene token, scene name, sample tokens in order)
    scenes_by_id: dict[str, tuple[str, str, tuple[str, ...]]] = field(default_factory=dict)
    log_by_digest: dict[str, str] = field(default_factory=dict)
    calibrated_by_key: dict[tuple[str, str], str] = field(default_factory=dict)
    sensor_by_channel: dict[str, str] = field(default_factory=dict)


def scene_name(source_digest: str, scene_index: int) -> str:
    """``mz-<12 hex of the source digest>-<index>``: never ``scene-NNNN``."""
    name = f"mz-{source_digest.rsplit(':', 1)[-1][:12]}-{scene_index:04d}"
    if SCENE_NAME_RE.fullmatch(name) is None:
        raise FormatError(f"scene index {scene_index} does not fit the scene name pattern")
    return name


def _finite(values: Iterable[float], what: str) -> None:
    flat = list(values)
    if not all(map(math.isfinite, flat)):
        raise FormatError(f"{what} must be finite, found {flat}")


def _frame_pose(frame: EvFrame, scene: str, channel: str) -> Quat:
    """Check a frame's ego translation is finite; its ego rotation, normalized.

    The frame is named (scene, channel, time) only in an error: an export checks every
    frame, and formatting the name of each cost more than both checks.
    """
    what = "scene {} {} frame {} ego {}"
    if not all(map(math.isfinite, frame.ego_translation)):
        _finite(
            frame.ego_translation, what.format(scene, channel, frame.timestamp_ns, "translation")
        )
    try:
        return quat_normalize(frame.ego_rotation)
    except FormatError:  # the same error, naming the frame
        quat_normalize(
            frame.ego_rotation, what.format(scene, channel, frame.timestamp_ns, "rotation")
        )
        raise


def _micros(chain: str, times_ns: Sequence[int]) -> list[int]:
    """``ns // 1000`` for a chain, refusing any collision or reversal after conversion."""
    out = [t // 1000 for t in times_ns]
    for i in range(1, len(out)):
        if out[i] <= out[i - 1]:
            kind = "collide" if out[i] == out[i - 1] else "reverse"
            raise FormatError(
                f"{chain}: timestamps {times_ns[i - 1]} ns and {times_ns[i]} ns {kind} after "
                f"conversion to microseconds ({out[i - 1]}, {out[i]})"
            )
    return out


def _date(t_ns: int) -> str:
    return datetime.fromtimestamp(t_ns // 1_000_000_000, tz=UTC).strftime("%Y-%m-%d")


def build_tables(doc: EvidenceDocument) -> Tables:
    """Build every camera-backed official table of the selected scenes of *doc*."""
    ns = doc.namespace
    t = Tables()
    images = {(im.source_digest, im.channel, im.timestamp_ns): im for im in doc.images}
    scenes = {s.scene_id: s for s in doc.derived.scenes}
    selected = [scenes[sid] for sid in doc.derived.selected_scene_ids]
    by_digest: dict[str, list[EvScene]] = defaultdict(list)
    for scene in selected:
        by_digest[scene.source_digest].append(scene)
    recordings = [r for r in doc.recordings if r.source_digest in by_digest]
    channels = sorted({c.channel for r in recordings for c in r.cameras})
    for channel in channels:
        token = make_token(ns, "sensor", channel)
        t.sensor_by_channel[channel] = token
        t.sensor.append(Sensor(token=token, channel=channel, modality=CAMERA_MODALITY))
    map_token = make_token(ns, "map", MAP_CATEGORY)
    names: set[str] = set()
    for rec in recordings:
        _add_recording(t, ns, rec)
        for scene in by_digest[rec.source_digest]:
            name = scene_name(rec.source_digest, scene.scene_index)
            if name in names:
                raise FormatError(f"two scenes would share the name {name}")
            names.add(name)
            _add_scene(t, ns, rec, scene, name, images)
    t.map.append(
        Map(
            token=map_token,
            log_tokens=tuple(sorted(log.token for log in t.log)),
            category=MAP_CATEGORY,
            filename=MAP_FILENAME,
        )
    )
    return t


def _add_recording(t: Tables, ns: str, rec: EvRecording) -> None:
    log_token = make_token(ns, "log", rec.source_digest)
    t.log_by_digest[rec.source_digest] = log_token
    first = min(c.timestamps_ns[0] for c in rec.cameras if c.timestamps_ns)
    t.log.append(
        Log(
            token=log_token,
            logfile=rec.source_name,
            vehicle=rec.vehicle,
            date_captured=_date(first),
            location=rec.location,
        )
    )
    for cam in rec.cameras:
        what = f"{rec.source_name} camera {cam.source_name!r}"
        _finite(cam.translation, f"{what} translation")
        _finite([v for row in cam.intrinsic for v in row], f"{what} intrinsic")
        token = make_token(ns, "calibrated_sensor", rec.source_digest, cam.channel)
        t.calibrated_by_key[(rec.source_digest, cam.channel)] = token
        t.calibrated_sensor.append(
            CalibratedSensor(
                token=token,
                sensor_token=t.sensor_by_channel[cam.channel],
                translation=cam.translation,
                rotation=quat_normalize(cam.rotation, f"{what} rotation"),
                camera_intrinsic=cam.intrinsic,
            )
        )


def _add_scene(
    t: Tables,
    ns: str,
    rec: EvRecording,
    scene: EvScene,
    name: str,
    images: dict[tuple[str, str, int], EvImage],
) -> None:
    scene_token = make_token(ns, "scene", scene.scene_id)
    grid = scene.grid_timestamps_ns
    scene_samples = TokenChain(ns, "sample", scene.scene_id)
    sample_tokens = [scene_samples.token(g) for g in range(len(grid))]
    sample_us = _micros(f"scene {name} samples", grid)
    for g, token in enumerate(sample_tokens):
        t.sample.append(
            Sample(
                token=token,
                timestamp=sample_us[g],
                prev=sample_tokens[g - 1] if g > 0 else "",
                next=sample_tokens[g + 1] if g + 1 < len(grid) else "",
                scene_token=scene_token,
            )
        )
    t.scene.append(
        Scene(
            token=scene_token,
            log_token=t.log_by_digest[rec.source_digest],
            nbr_samples=len(grid),
            first_sample_token=sample_tokens[0],
            last_sample_token=sample_tokens[-1],
            name=name,
            description=(
                f"{rec.recording_id} window {scene.scene_index} "
                f"({scene.time_of_day}, {scene.distance_m:.1f} m)"
            ),
        )
    )
    t.scenes_by_id[scene.scene_id] = (scene_token, name, tuple(sample_tokens))
    by_channel: dict[str, list[EvFrame]] = defaultdict(list)
    for frame in scene.frames:
        by_channel[frame.channel].append(frame)
    for channel in sorted(by_channel):
        chain = sorted(by_channel[channel], key=lambda f: f.timestamp_ns)
        micros = _micros(f"scene {name} {channel}", [f.timestamp_ns for f in chain])
        data_tokens = TokenChain(ns, "sample_data", rec.source_digest, channel)
        pose_tokens = TokenChain(ns, "ego_pose", rec.source_digest, channel)
        tokens = [data_tokens.token(f.timestamp_ns) for f in chain]
        for i, frame in enumerate(chain):
            image = images.get((rec.source_digest, channel, frame.timestamp_ns))
            if image is None:
                raise FormatError(
                    f"scene {name} {channel}: frame {frame.timestamp_ns} has no stored image"
                )
            rotation = _frame_pose(frame, name, channel)
            pose = EgoPose(
                token=pose_tokens.token(frame.timestamp_ns),
                timestamp=micros[i],
                rotation=rotation,
                translation=frame.ego_translation,
            )
            folder = SAMPLES_DIR if frame.is_key_frame else SWEEPS_DIR
            record = SampleData(
                token=tokens[i],
                sample_token=sample_tokens[frame.grid_index],
                ego_pose_token=pose.token,
                calibrated_sensor_token=t.calibrated_by_key[(rec.source_digest, channel)],
                timestamp=micros[i],
                fileformat=JPEG_FILEFORMAT,
                is_key_frame=frame.is_key_frame,
                height=image.height,
                width=image.width,
                filename=f"{folder}/{channel}/{tokens[i]}.jpg",
                prev=tokens[i - 1] if i > 0 else "",
                next=tokens[i + 1] if i + 1 < len(chain) else "",
            )
            t.ego_pose.append(pose)
            t.sample_data.append(record)
            t.frames.append(ExportedFrame(record, pose, frame, image, scene.scene_id))
