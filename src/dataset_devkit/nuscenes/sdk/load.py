"""Load-time work of the read-only SDK: strict reading, structural checks and indexes.

The SDK checks what every query relies on — strict JSON, row shapes, unique tokens, every
foreign key, safe image names, the camera index, extension documents and their references —
and refuses to open a dataroot with any issue. The thorough checks (chain symmetry and
timestamps, camera coverage, quaternion norms, the GNSS rows, JPEG decoding, the content
manifest) are ``dataset-devkit validate``'s, which every published dataroot has passed;
``scene_samples`` rechecks its chain at query time. Indexes are built once here; queries are
then dictionary lookups.
"""

from __future__ import annotations

import gc
import typing
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.dataroot import check_version
from dataset_devkit.nuscenes.validation.evidence import check_evidence
from dataset_devkit.nuscenes.validation.extensions import check_source_contract, load_extensions
from dataset_devkit.nuscenes.validation.graph import check_references
from dataset_devkit.nuscenes.validation.io import DatarootReader, dataroot_path
from dataset_devkit.nuscenes.validation.tables import (
    key_frame_channels,
    key_frame_tokens,
    load_tables,
)

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
    #: ``(sample token, channel) -> key-frame sample_data row`` (the row itself: one lookup).
    camera: dict[tuple[str, str], Row] = field(default_factory=dict)
    channels: tuple[str, ...] = ()
    by_key: dict[str, dict[str, Any]] = field(default_factory=dict)


def _keyed(rows: list[Any], key: str) -> dict[str, Any]:
    return {row[key]: row for row in rows}


def load_index(dataroot: str | Path, version: str) -> DatasetIndex:
    """Read and check *dataroot*; raise MalformedDataset listing every issue, if any."""
    # Loading allocates hundreds of thousands of acyclic dicts and tuples; the cyclic GC
    # would rescan the growing heap again and again for nothing, so pause it meanwhile.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_index(dataroot, version)
    finally:
        if enabled:
            gc.enable()


def _load_index(dataroot: str | Path, version: str) -> DatasetIndex:
    check_version(version)
    root = dataroot_path(dataroot)
    issues: list[str] = []
    with DatarootReader(root) as reader:
        loaded = load_tables(reader, version, issues)
        check_references(loaded, issues)
        # A published dataroot carries mz_extensions/content_manifest.json; verifying it is
        # validate's work, like the other thorough checks.
        ext = load_extensions(reader, issues, manifest=True)
        check_source_contract(loaded, ext, issues, gnss_rows=False)
        check_evidence(loaded, ext, issues, expected_validation=None)
    if issues:
        raise MalformedDataset(root, sorted(set(issues)))
    tables, tokens = loaded.tables, loaded.index
    # Every channel resolved (check_references passed), so None never occurs.
    keys = typing.cast(list[tuple[str, str]], key_frame_channels(loaded))
    sample_data = tokens["sample_data"]
    camera = dict(zip(keys, map(sample_data.__getitem__, key_frame_tokens(loaded)), strict=True))
    if len(camera) != len(keys):
        counts = Counter(keys)
        raise MalformedDataset(
            root,
            sorted(
                f"{spec.VERSION}/sample_data.json: {n} key frames for sample {s} {c}, expected 1"
                for (s, c), n in counts.items()
                if n != 1
            ),
        )
    # Plain values; the SDK's copies turn tuples into lists. gnss.json (one row per
    # image) stays a decoded struct until ``Dataset.gnss()`` asks for it.
    docs = {
        name: doc if name == spec.GNSS_FILE else msgspec.to_builtins(doc)
        for name, doc in ext.docs.items()
    }
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
        channels=tuple(sorted(row["channel"] for row in tables["sensor"])),
        by_key=by_key,
    )
