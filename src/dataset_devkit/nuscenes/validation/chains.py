"""Chain checks: ``prev``/``next`` symmetry, scene sample chains and per-camera chains.

A nuScenes dataroot is a set of doubly linked lists; nuscenes-devkit never walks them. Every
walk here detects cycles, wrong endpoints, rows from another scene or channel, counts that
disagree and timestamps that do not strictly increase, and reports each with the row token.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.schema import CHAIN_LINKS
from dataset_devkit.nuscenes.validation.tables import LoadedTables, channel_of

__all__ = ["check_camera_chains", "check_scenes", "check_symmetry", "walk_scene_samples"]

Row = dict[str, Any]


def _symmetric(rows: list[Row], index: dict[str, Row]) -> bool:
    """Whether every link that resolves points back (the fast, message-free check)."""
    for link, back in (("next", "prev"), ("prev", "next")):
        pairs = [(row["token"], row[link]) for row in rows if row[link] in index]
        if [index[other][back] for _, other in pairs] != [token for token, _ in pairs]:
            return False
    return True


def check_symmetry(t: LoadedTables, issues: list[str]) -> None:
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


def check_scenes(t: LoadedTables, issues: list[str]) -> None:
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


def check_camera_chains(t: LoadedTables, issues: list[str]) -> None:
    """Each (scene, channel) has one acyclic, time-ordered sample_data chain covering all rows."""
    rel = t.rel("sample_data")
    index = t.index["sample_data"]
    heads: dict[tuple[str, str], list[str]] = defaultdict(list)
    groups: dict[tuple[str, str], int] = defaultdict(int)
    for sd in t.tables["sample_data"]:
        sample = t.index["sample"].get(sd["sample_token"])
        channel = channel_of(t, sd)
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
            if (sample is None or sample["scene_token"] != scene) or channel_of(t, row) != channel:
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
