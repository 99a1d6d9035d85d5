"""Graph checks over the official tables: foreign keys, chains, coverage and geometry.

nuscenes-devkit 1.2.0 only builds reverse indexes; it never walks a chain or checks that a
token points anywhere. These checks are ours: each one appends precise issues naming the
table file, the row token and the field, and none stops at the first problem.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter
from collections.abc import Iterable
from typing import Any

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.chains import (
    check_camera_chains,
    check_scenes,
    check_symmetry,
)
from dataset_devkit.nuscenes.validation.schema import (
    CAMERA_CHANNEL_RE,
    FOREIGN_KEYS,
    SAMPLES_DIR,
    TABLE_FIELDS,
)
from dataset_devkit.nuscenes.validation.tables import (
    LoadedTables,
    key_frame_channels,
    sample_data_channels,
)

__all__ = ["QUATERNION_TOLERANCE", "check_graph", "check_references"]

Row = dict[str, Any]
#: How far ``|q|`` may stray from 1 for a quaternion to count as normalized.
QUATERNION_TOLERANCE = 1e-6


def _check_foreign_keys(t: LoadedTables, issues: list[str]) -> None:
    for (table, name), target in FOREIGN_KEYS.items():
        if target in t.broken:
            continue
        index = t.index[target]
        rows = t.tables[table]
        column: Iterable[Any] = map(operator.itemgetter(name), rows)
        if TABLE_FIELDS[table][name] == "tokens":
            column = itertools.chain.from_iterable(column)
        referenced = set(column)  # straight from the iterator: no intermediate list
        referenced.discard("")
        if referenced <= index.keys():
            continue  # the common case, decided by one set operation
        for row in t.tables[table]:
            values = row[name] if isinstance(row[name], list | tuple) else [row[name]]
            for value in values:
                if value and value not in index:
                    issues.append(
                        f"{t.rel(table)} row {row['token']}.{name}: "
                        f"token {value} not found in {target}"
                    )


def _check_sensors(t: LoadedTables, issues: list[str]) -> None:
    channels: dict[str, str] = {}
    for row in t.tables["sensor"]:
        where = f"{t.rel('sensor')} row {row['token']}"
        if row["modality"] != "camera":
            issues.append(f"{where}.modality: expected 'camera', found {row['modality']!r}")
        if not CAMERA_CHANNEL_RE.match(row["channel"]):
            issues.append(f"{where}.channel: {row['channel']!r} is not a normalized CAM_* name")
        if row["channel"] in channels:
            issues.append(
                f"{where}.channel: {row['channel']} is also sensor {channels[row['channel']]}"
            )
        channels.setdefault(row["channel"], row["token"])
    for row in t.tables["calibrated_sensor"]:
        where = f"{t.rel('calibrated_sensor')} row {row['token']}"
        _check_quaternion(where + ".rotation", row["rotation"], issues)
        if row["camera_intrinsic"] == []:
            issues.append(f"{where}.camera_intrinsic: a camera needs a 3x3 intrinsic matrix")


def _check_quaternion(where: str, q: list[float], issues: list[str]) -> None:
    norm = math.sqrt(sum(v * v for v in q))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        issues.append(f"{where}: quaternion is not normalized (|q| = {norm!r})")


def _check_sample_data(t: LoadedTables, issues: list[str]) -> None:
    rel = t.rel("sample_data")
    pose_owner: dict[str, str] = {}
    poses = t.index["ego_pose"]
    # The loop runs once per image: messages are only formatted when there is an issue.
    for sd in t.tables["sample_data"]:
        token = sd["token"]
        if sd["fileformat"] != spec.JPEG_FILEFORMAT:
            issues.append(
                f"{rel} row {token}.fileformat: expected 'jpg', found {sd['fileformat']!r}"
            )
        if sd["width"] <= 0 or sd["height"] <= 0:
            issues.append(
                f"{rel} row {token}: image size {sd['width']}x{sd['height']} is not positive"
            )
        pose_token = sd["ego_pose_token"]
        owner = pose_owner.setdefault(pose_token, token)
        if owner != token:
            issues.append(
                f"{rel} row {token}.ego_pose_token: pose {pose_token} is shared with "
                f"{owner}; each camera frame has its own pose"
            )
        pose = poses.get(pose_token)
        if pose is not None and pose["timestamp"] != sd["timestamp"]:
            issues.append(
                f"{rel} row {token}.timestamp: {sd['timestamp']} differs from its ego pose "
                f"timestamp {pose['timestamp']}"
            )
    for pose in t.tables["ego_pose"]:
        q = pose["rotation"]
        if abs(math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]) - 1.0) > (
            QUATERNION_TOLERANCE
        ):
            _check_quaternion(f"{t.rel('ego_pose')} row {pose['token']}.rotation", q, issues)


def _check_filenames(t: LoadedTables, issues: list[str]) -> None:
    """Each image is exactly ``samples|sweeps/<channel>/<token>.jpg``: no unsafe names."""
    rows = t.tables["sample_data"]
    channels = sample_data_channels(t)
    expected = [
        f"{SAMPLES_DIR if sd['is_key_frame'] else spec.SWEEPS_DIR}/{channel}/{sd['token']}.jpg"
        for sd, channel in zip(rows, channels, strict=True)
    ]
    if list(map(operator.itemgetter("filename"), rows)) == expected:
        return
    rel = t.rel("sample_data")
    for sd, channel, want in zip(rows, channels, expected, strict=True):
        if channel is not None and sd["filename"] != want:
            issues.append(
                f"{rel} row {sd['token']}.filename: expected {want!r}, found {sd['filename']!r}"
            )


def _check_coverage(t: LoadedTables, issues: list[str]) -> None:
    """Every sample has exactly one key frame of every channel of its scene.

    A fleet mixes rigs: as in nuScenes, a scene's samples carry the cameras its log has, so
    the channels are those of the scene's key frames, and each sample needs each once.
    """
    counts = Counter(key_frame_channels(t))
    channels = sorted({row["channel"] for row in t.tables["sensor"]})
    samples = [row["token"] for row in t.tables["sample"]]
    if set(counts.values()) <= {1} and counts.keys() == set(itertools.product(samples, channels)):
        return
    scene_of = {row["token"]: row.get("scene_token") for row in t.tables["sample"]}
    by_scene: dict[object, set[str]] = {}
    for sample, channel in counts:
        if channel is not None:
            by_scene.setdefault(scene_of.get(sample), set()).add(channel)
    for sample in samples:
        for channel in sorted(by_scene.get(scene_of[sample], set())):
            found = counts.get((sample, channel), 0)
            if found != 1:
                issues.append(
                    f"{t.rel('sample')} row {sample}: expected exactly one {channel} "
                    f"key frame, found {found}{_where(t, scene_of[sample])}"
                )
        if not by_scene.get(scene_of[sample]):
            issues.append(f"{t.rel('sample')} row {sample}: has no key frame")


def _where(t: LoadedTables, scene_token: object) -> str:
    """`` (scene <name>, recording <logfile>)`` for an issue, when the rows resolve."""
    scene = t.index["scene"].get(scene_token) if isinstance(scene_token, str) else None
    log = t.index["log"].get(scene["log_token"]) if scene else None
    if scene is None or log is None:
        return ""
    return f" (scene {scene['name']}, recording {log['logfile']})"


def _check_map(t: LoadedTables, issues: list[str]) -> None:
    rel = t.rel("map")
    if "map" in t.broken:
        return
    maps = t.tables["map"]
    if len(maps) != 1:
        issues.append(f"{rel}: expected exactly one compatibility_scaffold map, found {len(maps)}")
        return
    record = maps[0]
    if record["category"] != spec.MAP_CATEGORY:
        issues.append(
            f"{rel} row {record['token']}.category: expected {spec.MAP_CATEGORY!r}, "
            f"found {record['category']!r}"
        )
    if record["filename"] != spec.MAP_FILENAME:
        issues.append(
            f"{rel} row {record['token']}.filename: expected {spec.MAP_FILENAME!r}, "
            f"found {record['filename']!r}"
        )
    logs = [row["token"] for row in t.tables["log"]]
    if sorted(record["log_tokens"]) != sorted(logs):
        issues.append(
            f"{rel} row {record['token']}.log_tokens: must list every log exactly once "
            f"(expected {sorted(logs)}, found {sorted(record['log_tokens'])})"
        )


def _check_object_tables(t: LoadedTables, issues: list[str]) -> None:
    # Human labels are never converted into fabricated object annotations (seed, layout).
    for table in spec.EMPTY_TABLES:
        if t.tables[table]:
            issues.append(
                f"{t.rel(table)}: expected an empty array (camera-only export), "
                f"found {len(t.tables[table])} rows"
            )


def check_references(t: LoadedTables, issues: list[str]) -> None:
    """The SDK's load-time checks: foreign keys, image names, sensors, map, scenes, coverage."""
    _check_foreign_keys(t, issues)
    _check_filenames(t, issues)
    _check_sensors(t, issues)
    _check_map(t, issues)
    check_scenes(t, issues)
    _check_coverage(t, issues)


def check_graph(t: LoadedTables, issues: list[str]) -> None:
    """Run every official-table graph check on *t*, appending issues."""
    check_references(t, issues)
    check_symmetry(t, issues)
    _check_sample_data(t, issues)
    check_camera_chains(t, issues)
    _check_object_tables(t, issues)
