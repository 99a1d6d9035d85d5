"""Human labels (the seed's Task 7, human half): import a label file, resolve it to scenes.

Labels are kept apart from computed tags and never become object annotations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import decode_json_record
from dataset_devkit.nuscenes.common.tokens import make_token
from dataset_devkit.nuscenes.evidence.records import EvRecording, EvScene
from dataset_devkit.nuscenes.ingest.source import open_regular
from dataset_devkit.nuscenes.spec import (
    AnnotationMatch,
    AnnotationRecord,
    AnnotationSceneReference,
    AnnotationWindow,
)

__all__ = ["read_labels", "resolve_annotations"]

_MAX_NS = (1 << 63) - 1  # nanosecond times are signed 64-bit, as in every table


class _Label(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    recording_id: str
    label: str
    start_ns: int
    end_ns: int
    attributes: dict[str, str] = {}


class _LabelFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema_version: Literal[1]
    labels: list[_Label]


def read_labels(
    path: Path, recordings: Sequence[EvRecording]
) -> tuple[str, str, tuple[AnnotationRecord, ...]]:
    """Read a label file; returns ``(file name, sha256, records)`` sorted by label id."""
    with open_regular(path, "label file") as f:
        raw = f.read()
    doc = decode_json_record(raw, _LabelFile, path)
    known = {r.recording_id for r in recordings}
    seen: set[str] = set()
    records = []
    for i, label in enumerate(doc.labels):
        where = f"$.labels[{i}]"
        if label.id in seen:
            raise FormatError(f"duplicate label id {label.id!r}", path=path, field=f"{where}.id")
        seen.add(label.id)
        if label.recording_id not in known:
            raise FormatError(
                f"label {label.id!r} names unknown recording {label.recording_id!r}; "
                f"known: {sorted(known)}",
                path=path,
                field=f"{where}.recording_id",
            )
        if not 0 <= label.start_ns < label.end_ns <= _MAX_NS:
            raise FormatError(
                f"label {label.id!r} needs 0 <= start_ns < end_ns <= 2**63 - 1, found "
                f"{label.start_ns}..{label.end_ns}",
                path=path,
                field=where,
            )
        records.append(
            AnnotationRecord(
                annotation_id=label.id,
                recording_id=label.recording_id,
                label=label.label,
                start_ns=label.start_ns,
                end_ns=label.end_ns,
                attributes=dict(sorted(label.attributes.items())),
            )
        )
    records.sort(key=lambda r: r.annotation_id)
    return path.name, hashlib.sha256(raw).hexdigest(), tuple(records)


def resolve_annotations(
    namespace: str,
    records: Sequence[AnnotationRecord],
    recordings: Sequence[EvRecording],
    scenes: Sequence[tuple[EvScene, str]],
) -> tuple[
    tuple[AnnotationWindow, ...], tuple[AnnotationMatch, ...], tuple[AnnotationSceneReference, ...]
]:
    """Clip labels to their recordings and match them to the exported ``(scene, token)``s.

    Every record is kept; windows exist only for recordings that contribute an exported
    scene (so every window references a recording of ``recordings.json``).
    """
    by_id: Mapping[str, EvRecording] = {r.recording_id: r for r in recordings}
    exported = {scene.source_digest for scene, _ in scenes}
    windows, matches = [], []
    refs: dict[str, list[tuple[str, str]]] = {token: [] for _, token in scenes}
    for record in records:
        rec = by_id[record.recording_id]
        if rec.source_digest not in exported:
            continue
        times = [t for c in rec.cameras for t in c.timestamps_ns]
        lo = max(record.start_ns, min(times)) if times else record.start_ns
        hi = min(record.end_ns, max(times)) if times else record.end_ns
        if lo > hi:
            continue  # entirely outside the recording: kept as a record, no window
        window = AnnotationWindow(
            window_token=make_token(namespace, "annotation_window", record.annotation_id),
            annotation_id=record.annotation_id,
            source_digest=rec.source_digest,
            start_timestamp_ns=lo,
            end_timestamp_ns=hi,
        )
        windows.append(window)
        for scene, token in scenes:
            if scene.source_digest != rec.source_digest:
                continue
            start = max(lo, scene.grid_timestamps_ns[0])
            end = min(hi, scene.grid_timestamps_ns[-1])
            if start > end:
                continue
            match = AnnotationMatch(
                match_token=make_token(namespace, "annotation_match", record.annotation_id, token),
                annotation_id=record.annotation_id,
                window_token=window.window_token,
                scene_token=token,
                overlap_start_ns=start,
                overlap_end_ns=end,
            )
            matches.append(match)
            refs[token].append((record.annotation_id, match.match_token))
    references = tuple(
        AnnotationSceneReference(
            scene_token=token,
            annotation_ids=tuple(a for a, _ in sorted(pairs)),
            match_tokens=tuple(m for _, m in sorted(pairs)),
        )
        for token, pairs in sorted(refs.items())
    )
    return tuple(windows), tuple(matches), references
