"""Load-time work of the read-only SDK: strict reading, structural checks and indexes.

The SDK runs the same table, graph, extension and evidence checks as the validator (not the
image decoding or content hashing, which ``dataset-devkit validate`` does) and refuses to open
a dataroot with any issue, so no query ever summarizes malformed content. Indexes are built
once here; queries are then dictionary lookups.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation import check_version
from dataset_devkit.nuscenes.validation_evidence import check_evidence
from dataset_devkit.nuscenes.validation_extensions import check_source_contract, load_extensions
from dataset_devkit.nuscenes.validation_graph import check_graph
from dataset_devkit.nuscenes.validation_io import DatarootReader
from dataset_devkit.nuscenes.validation_tables import load_tables

__all__ = ["DatasetIndex", "MalformedDataset", "load_index"]

Row = dict[str, Any]


class MalformedDataset(FormatError):
    """A dataroot the SDK refuses to open; ``issues`` lists every problem, sorted."""

    def __init__(self, root: Path, issues: list[str]) -> None:
        shown = "\n".join(f"  - {issue}" for issue in issues)
        n = len(issues)
        super().__init__(
            f"not a valid dataroot ({n} issue{'s' if n != 1 else ''}):\n{shown}", path=root
        )
        self.issues = issues


@dataclass(slots=True)
class DatasetIndex:
    """Everything the SDK answers from, built once at load time."""

    root: Path
    version: str
    tables: dict[str, list[Row]]
    tokens: dict[str, dict[str, Row]]
    extensions: dict[str, Any]
    camera: dict[tuple[str, str], str] = field(default_factory=dict)
    scene_samples: dict[str, list[str]] = field(default_factory=dict)
    channels: tuple[str, ...] = ()
    by_key: dict[str, dict[str, Any]] = field(default_factory=dict)


def _scene_chains(
    tables: dict[str, list[Row]], tokens: dict[str, dict[str, Row]]
) -> dict[str, list[str]]:
    chains: dict[str, list[str]] = {}
    for scene in tables["scene"]:
        order, token = [], scene["first_sample_token"]
        while token:
            order.append(token)
            token = tokens["sample"][token]["next"]
        chains[scene["token"]] = order
    return chains


def _keyed(rows: list[Any], key: str) -> dict[str, Any]:
    return {row[key]: row for row in rows}


def load_index(dataroot: str | Path, version: str) -> DatasetIndex:
    """Read and check *dataroot*; raise MalformedDataset listing every issue, if any."""
    check_version(version)
    root = Path(dataroot)
    issues: list[str] = []
    with DatarootReader(root) as reader:
        loaded = load_tables(reader, version, issues)
        check_graph(loaded, issues)
        ext = load_extensions(reader, issues)
        check_source_contract(loaded, ext, issues)
        check_evidence(loaded, ext, issues, expected_validation=None)
    if issues:
        raise MalformedDataset(root, sorted(set(issues)))
    tables, tokens = loaded.tables, loaded.index
    camera: dict[tuple[str, str], str] = {}
    channel_of = {
        cs["token"]: tokens["sensor"][cs["sensor_token"]]["channel"]
        for cs in tables["calibrated_sensor"]
    }
    ambiguous: dict[tuple[str, str], int] = defaultdict(int)
    for sd in tables["sample_data"]:
        if sd["is_key_frame"]:
            key = (sd["sample_token"], channel_of[sd["calibrated_sensor_token"]])
            ambiguous[key] += 1
            camera[key] = sd["token"]
    bad = sorted(f"{s} {c}" for (s, c), n in ambiguous.items() if n != 1)
    if bad:  # pragma: no cover - the coverage check reports these first
        raise MalformedDataset(root, [f"ambiguous camera rows for {b}" for b in bad])
    # Plain JSON values (lists, not tuples) so that every returned value can be deep-copied.
    docs = {name: msgspec.json.decode(msgspec.json.encode(doc)) for name, doc in ext.docs.items()}
    annotations = docs[spec.ANNOTATIONS_FILE]
    by_key = {
        "validity": _keyed(docs[spec.VALIDITY_FILE]["scenes"], "scene_token"),
        "recording_validity": _keyed(docs[spec.VALIDITY_FILE]["recordings"], "source_digest"),
        "tags": _keyed(docs[spec.TAGS_FILE]["tags"], "scene_token"),
        "split": {a["scene_token"]: a["split"] for a in docs[spec.SPLIT_FILE]["assignments"]},
        "annotation_record": _keyed(annotations["records"], "annotation_id"),
        "annotation_window": _keyed(annotations["windows"], "window_token"),
        "annotation_match": _keyed(annotations["matches"], "match_token"),
        "annotation_scene_reference": _keyed(annotations["scene_references"], "scene_token"),
    }
    return DatasetIndex(
        root=root,
        version=version,
        tables=tables,
        tokens=tokens,
        extensions=docs,
        camera=camera,
        scene_samples=_scene_chains(tables, tokens),
        channels=tuple(sorted(row["channel"] for row in tables["sensor"])),
        by_key=by_key,
    )
