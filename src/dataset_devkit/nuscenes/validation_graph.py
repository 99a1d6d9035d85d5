"""Graph checks over the official tables: foreign keys, chains, coverage and geometry.

nuscenes-devkit 1.2.0 only builds reverse indexes; it never walks a chain or checks that a
token points anywhere. These checks are ours: each one appends precise issues naming the
table file, the row token and the field, and none stops at the first problem.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter, defaultdict
from typing import Any

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation_schema import (
    CAMERA_CHANNEL_RE,
    CHAIN_LINKS,
    FOREIGN_KEYS,
    SAMPLES_DIR,
)
from dataset_devkit.nuscenes.validation_tables import LoadedTables

__all__ = [
    "QUATERNION_TOLERANCE",
    "check_graph",
    "check_references",
    "sample_data_channels",
    "walk_scene_samples",
]

Row = dict[str, Any]
#: How far ``|q|`` may stray from 1 for a quaternion to count as normalized.
QUATERNION_TOLERANCE = 1e-6


def _check_foreign_keys(t: LoadedTables, issues: list[str]) -> None:
    for (table, name), target in FOREIGN_KEYS.items():
        if target in t.broken:
            continue
        index = t.index[target]
        column = list(map(operator.itemgetter(name), t.tables[table]))
        if column and isinstance(column[0], list):
            column = list(itertools.chain.from_iterable(column))
        referenced = set(column)
        referenced.discard("")
        if referenced <= index.keys():
            continue  # the common case, decided by one set operation
        for row in t.tables[table]:
            values = row[name] if isinstance(row[name], list) else [row[name]]
            for value in values:
                if value and value not in index:
                    issues.append(
                        f"{t.rel(table)} row {row['token']}.{name}: "
                        f"token {value} not found in {target}"
                    )


def _symmetric(rows: list[Row], index: dict[str, Row]) -> bool:
    """Whether every link that resolves points back (the fast, message-free check)."""
    for link, back in (("next", "prev"), ("prev", "next")):
        pairs = [(row["token"], row[link]) for row in rows if row[link] in index]
        if [index[other][back] for _, other in pairs] != [token for token, _ in pairs]:
            return False
    return True


def _check_symmetry(t: LoadedTables, issues: list[str]) -> None:
    for table in CHAIN_LINKS:
        index = t.index[table]
        if _symmetric(t.tables[table], index):
            continue
        for row in t.tables[table]:
            for link, back in (("next", "prev"), ("prev", "next")):
                other = index.get(row[link]) if row[link] else None
                if other is not None and other[back] != row["token"]:
                    issues.append(
                        f"{t.rel(table)} row {row['token']}.{link}: chain is not symmetric "
                        f"({row[link]}.{back} is {other[back]!r}, expected {row['token']!r})"
                    )


def walk_scene_samples(t: LoadedTables, scene: Row, issues: list[str]) -> list[str]:
    """Walk one scene's sample chain, appending cycle/endpoint/scene/count/time issues."""
    where = f"{t.rel('scene')} row {scene['token']}"
    samples = t.index["sample"]
    first = samples.get(scene["first_sample_token"])
    if first is None:
        return []
    if first["prev"] != "":
        issues.append(f"{where}.first_sample_token: first sample has prev {first['prev']!r}")
    order: list[str] = []
    seen: set[str] = set()
    token = scene["first_sample_token"]
    last_time: int | None = None
    while token:
        if token in seen:
            issues.append(f"{where}: sample chain has a cycle at {token}")
            break
        row = samples.get(token)
        if row is None:
            break  # already reported as a foreign-key issue
        seen.add(token)
        order.append(token)
        if row["scene_token"] != scene["token"]:
            issues.append(
                f"{t.rel('sample')} row {token}.scene_token: is {row['scene_token']}, but the "
                f"sample is on the chain of scene {scene['token']}"
            )
        if last_time is not None and row["timestamp"] <= last_time:
            issues.append(
                f"{t.rel('sample')} row {token}.timestamp: {row['timestamp']} does not increase "
                f"strictly after {last_time}"
            )
        last_time = row["timestamp"]
        token = row["next"]
    if order and order[-1] != scene["last_sample_token"]:
        issues.append(
            f"{where}.last_sample_token: chain ends at {order[-1]}, "
            f"expected {scene['last_sample_token']}"
        )
    if len(order) != scene["nbr_samples"]:
        issues.append(
            f"{where}.nbr_samples: is {scene['nbr_samples']}, the chain has {len(order)} samples"
        )
    return order


def _check_scenes(t: LoadedTables, issues: list[str]) -> None:
    if not t.tables["scene"] and "scene" not in t.broken:
        issues.append(f"{t.rel('scene')}: no scene is selected; an empty dataset cannot publish")
    on_chain: set[str] = set()
    names: dict[str, str] = {}
    for scene in t.tables["scene"]:
        where = f"{t.rel('scene')} row {scene['token']}.name"
        if not spec.SCENE_NAME_RE.match(scene["name"]):
            issues.append(f"{where}: {scene['name']!r} is not an mz-<12 hex>-<4 digits> name")
        elif scene["name"] in names:
            issues.append(f"{where}: {scene['name']!r} is also scene {names[scene['name']]}")
        names.setdefault(scene["name"], scene["token"])
        on_chain.update(walk_scene_samples(t, scene, issues))
    if "scene" not in t.broken:
        for row in t.tables["sample"]:
            if row["token"] not in on_chain:
                issues.append(f"{t.rel('sample')} row {row['token']}: not on any scene chain")


def sample_data_channels(t: LoadedTables) -> list[str | None]:
    """The channel of every sample_data row, in table order (None when unresolvable)."""
    if t.sample_data_channels is None:
        get = _calibration_channels(t).get
        rows = t.tables["sample_data"]
        t.sample_data_channels = [get(sd["calibrated_sensor_token"]) for sd in rows]
    return t.sample_data_channels


def _calibration_channels(t: LoadedTables) -> dict[str, str]:
    if t.channel_of_calibration is None:
        t.channel_of_calibration = {}
        for cs in t.tables["calibrated_sensor"]:
            sensor = t.index["sensor"].get(cs["sensor_token"])
            if sensor is not None:
                t.channel_of_calibration[cs["token"]] = sensor["channel"]
    return t.channel_of_calibration


def _channel_of(t: LoadedTables, sd: Row) -> str | None:
    return _calibration_channels(t).get(sd["calibrated_sensor_token"])


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
    """Every sample has exactly one key frame of every channel (the camera index's rule)."""
    counts = Counter(
        (sd["sample_token"], channel)
        for sd, channel in zip(t.tables["sample_data"], sample_data_channels(t), strict=True)
        if sd["is_key_frame"]
    )
    channels = sorted({row["channel"] for row in t.tables["sensor"]})
    samples = [row["token"] for row in t.tables["sample"]]
    if set(counts.values()) <= {1} and counts.keys() == set(itertools.product(samples, channels)):
        return
    for sample in samples:
        for channel in channels:
            found = counts.get((sample, channel), 0)
            if found != 1:
                issues.append(
                    f"{t.rel('sample')} row {sample}: expected exactly one {channel} "
                    f"key frame, found {found}"
                )


def _check_camera_chains(t: LoadedTables, issues: list[str]) -> None:
    """Each (scene, channel) has one acyclic, time-ordered sample_data chain covering all rows."""
    rel = t.rel("sample_data")
    index = t.index["sample_data"]
    heads: dict[tuple[str, str], list[str]] = defaultdict(list)
    groups: dict[tuple[str, str], int] = defaultdict(int)
    for sd in t.tables["sample_data"]:
        sample = t.index["sample"].get(sd["sample_token"])
        channel = _channel_of(t, sd)
        if sample is None or channel is None:
            continue
        key = (sample["scene_token"], channel)
        groups[key] += 1
        if sd["prev"] == "":
            heads[key].append(sd["token"])
    for key in sorted(groups):
        scene, channel = key
        if len(heads[key]) != 1:
            issues.append(
                f"{rel}: scene {scene} {channel} has {len(heads[key])} chain heads, expected 1"
            )
            continue
        seen: set[str] = set()
        token, last_time = heads[key][0], None
        while token:
            row = index.get(token)
            if row is None:
                break
            if token in seen:
                issues.append(f"{rel}: scene {scene} {channel} chain has a cycle at {token}")
                break
            seen.add(token)
            sample = t.index["sample"].get(row["sample_token"])
            if (sample is None or sample["scene_token"] != scene) or _channel_of(t, row) != channel:
                issues.append(
                    f"{rel} row {token}: on the {channel} chain of scene {scene} but belongs "
                    "to another scene or channel"
                )
            if last_time is not None and row["timestamp"] <= last_time:
                issues.append(
                    f"{rel} row {token}.timestamp: {row['timestamp']} does not increase "
                    f"strictly after {last_time} on the {channel} chain"
                )
            last_time = row["timestamp"]
            token = row["next"]
        if len(seen) != groups[key]:
            issues.append(
                f"{rel}: scene {scene} {channel} chain reaches {len(seen)} of {groups[key]} frames"
            )


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
    _check_scenes(t, issues)
    _check_coverage(t, issues)


def check_graph(t: LoadedTables, issues: list[str]) -> None:
    """Run every official-table graph check on *t*, appending issues."""
    check_references(t, issues)
    _check_symmetry(t, issues)
    _check_sample_data(t, issues)
    _check_camera_chains(t, issues)
    _check_object_tables(t, issues)
