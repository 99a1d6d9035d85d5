"""Checks of the evidence documents: validity, tags, annotations, split, config and audit.

These bind the Task 5-7 evidence the exporter copied into ``mz_extensions`` to the scenes that
were actually exported: every scene is described exactly once, every reference resolves, the
split is full and disjoint, and the chronology accounts for every selected scene.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.evidence.writer import config_fingerprint
from dataset_devkit.nuscenes.validation.chains import walk_scene_samples
from dataset_devkit.nuscenes.validation.extensions import LoadedExtensions
from dataset_devkit.nuscenes.validation.tables import LoadedTables

__all__ = ["check_evidence"]


def _rel(name: str) -> str:
    return f"{spec.EXTENSIONS_DIR}/{name}"


def _exactly_once(
    rel: str, what: str, tokens: Iterable[str], expected: Iterable[str], issues: list[str]
) -> None:
    seen: set[str] = set()
    wanted = set(expected)
    for token in tokens:
        if token in seen:
            issues.append(f"{rel}: {what} {token} is listed twice")
        elif token not in wanted:
            issues.append(f"{rel}: {what} {token} is not an exported scene")
        seen.add(token)
    for token in sorted(wanted - seen):
        issues.append(f"{rel}: exported scene {token} has no {what} entry")


def _check_validity(t: LoadedTables, doc: spec.ValidityDocument, issues: list[str]) -> None:
    rel = _rel(spec.VALIDITY_FILE)
    _exactly_once(rel, "scene", (s.scene_token for s in doc.scenes), t.index["scene"], issues)
    digests = {r.source_digest for r in doc.recordings}
    for i, agg in enumerate(doc.scenes):
        where = f"{rel} at $.scenes[{i}]"
        scene = t.index["scene"].get(agg.scene_token)
        if scene is None:
            continue
        chain = walk_scene_samples(t, scene, [])
        if list(agg.sample_tokens) != chain or agg.nbr_samples != len(chain):
            issues.append(f"{where}.sample_tokens: do not match the scene's sample chain")
        micros = [t.index["sample"][token]["timestamp"] for token in chain]
        if [ns // 1000 for ns in agg.sample_timestamps_ns] != micros:
            issues.append(
                f"{where}.sample_timestamps_ns: their // 1000 values are not the chain's "
                f"sample timestamps {micros}"
            )
        if agg.scene_name != scene["name"]:
            issues.append(f"{where}.scene_name: {agg.scene_name!r} is not {scene['name']!r}")
        if agg.source_digest not in digests:
            issues.append(f"{where}.source_digest: {agg.source_digest} has no recording entry")


def _check_tags(t: LoadedTables, doc: spec.TagsDocument, issues: list[str]) -> None:
    rel = _rel(spec.TAGS_FILE)
    _exactly_once(rel, "scene", (s.scene_token for s in doc.tags), t.index["scene"], issues)
    for i, tag in enumerate(doc.tags):
        scene = t.index["scene"].get(tag.scene_token)
        if scene is not None and (tag.scene_name, tag.nbr_samples) != (
            scene["name"],
            scene["nbr_samples"],
        ):
            issues.append(f"{rel} at $.tags[{i}]: name/nbr_samples differ from the scene table")


def _check_annotations(t: LoadedTables, doc: spec.AnnotationsDocument, issues: list[str]) -> None:
    rel = _rel(spec.ANNOTATIONS_FILE)
    ids = [r.annotation_id for r in doc.records]
    windows = {w.window_token: w for w in doc.windows}
    matches = {m.match_token: m for m in doc.matches}
    for what, keys in (
        ("annotation_id", ids),
        ("window_token", [w.window_token for w in doc.windows]),
        ("match_token", [m.match_token for m in doc.matches]),
    ):
        if len(set(keys)) != len(keys):
            issues.append(f"{rel}: duplicate {what} values")
    known = set(ids)
    for i, w in enumerate(doc.windows):
        if w.annotation_id not in known:
            issues.append(f"{rel} at $.windows[{i}].annotation_id: {w.annotation_id} is unknown")
    for i, m in enumerate(doc.matches):
        where = f"{rel} at $.matches[{i}]"
        window = windows.get(m.window_token)
        if window is None or window.annotation_id != m.annotation_id:
            issues.append(
                f"{where}.window_token: {m.window_token} is not a window of {m.annotation_id}"
            )
        if m.scene_token not in t.index["scene"]:
            issues.append(f"{where}.scene_token: token {m.scene_token} not found in scene")
    for i, ref in enumerate(doc.scene_references):
        where = f"{rel} at $.scene_references[{i}]"
        if ref.scene_token not in t.index["scene"]:
            issues.append(f"{where}.scene_token: token {ref.scene_token} not found in scene")
        for token in ref.match_tokens:
            match = matches.get(token)
            if match is None or match.scene_token != ref.scene_token:
                issues.append(f"{where}.match_tokens: {token} is not a match of this scene")
        for annotation_id in ref.annotation_ids:
            if annotation_id not in known:
                issues.append(f"{where}.annotation_ids: {annotation_id} is unknown")


def _check_split(
    t: LoadedTables,
    doc: spec.SplitDocument,
    config: spec.ConfigDocument | None,
    issues: list[str],
) -> None:
    rel = _rel(spec.SPLIT_FILE)
    tokens = [a.scene_token for a in doc.assignments]
    _exactly_once(rel, "split assignment for scene", tokens, t.index["scene"], issues)
    groups: dict[str, str] = {}
    for i, a in enumerate(doc.assignments):
        scene = t.index["scene"].get(a.scene_token)
        if scene is not None and scene["name"] != a.scene_name:
            issues.append(f"{rel} at $.assignments[{i}].scene_name: is not {scene['name']!r}")
        if groups.setdefault(a.group_id, a.split) != a.split:
            issues.append(
                f"{rel} at $.assignments[{i}].split: group {a.group_id} straddles train and test"
            )
    if config is not None:
        cfg = config.config
        found = (doc.namespace, doc.method, doc.test_fraction)
        wanted = (cfg.namespace, cfg.split.method, cfg.split.test_fraction)
        if found != wanted:
            issues.append(
                f"{rel}: namespace/method/test_fraction {found} differ from config {wanted}"
            )


def _check_config(doc: spec.ConfigDocument, issues: list[str]) -> None:
    rel = _rel(spec.CONFIG_FILE)
    if doc.config.image.jpeg_quality != spec.JPEG_QUALITY:
        issues.append(
            f"{rel} at $.config.image.jpeg_quality: expected {spec.JPEG_QUALITY}, "
            f"found {doc.config.image.jpeg_quality}"
        )
    fingerprint = config_fingerprint(doc.config)
    if doc.config_fingerprint != fingerprint:
        issues.append(
            f"{rel} at $.config_fingerprint: expected {fingerprint}, found {doc.config_fingerprint}"
        )


def _check_audit(
    t: LoadedTables, doc: spec.PipelineAuditDocument, ext: LoadedExtensions, issues: list[str]
) -> None:
    rel = _rel(spec.PIPELINE_AUDIT_FILE)
    if len(doc.selected_scene_ids) != len(t.tables["scene"]):
        issues.append(
            f"{rel} at $.selected_scene_ids: {len(doc.selected_scene_ids)} selected scenes, "
            f"the scene table has {len(t.tables['scene'])}"
        )
    recordings: spec.RecordingsDocument | None = ext.get(spec.RECORDINGS_FILE)
    digests = None if recordings is None else {r.source_digest for r in recordings.recordings}
    selected: list[str] = []
    for i, chron in enumerate(doc.chronology):
        where = f"{rel} at $.chronology[{i}]"
        if digests is not None and chron.source_digest not in digests:
            issues.append(f"{where}.source_digest: {chron.source_digest} is not a recording")
        last: spec.ChronologyEntry | None = None
        for j, entry in enumerate(chron.entries):
            ewhere = f"{where}.entries[{j}]"
            if last is not None and (
                entry.scene_index <= last.scene_index
                or entry.start_timestamp_ns < last.end_timestamp_ns
            ):
                issues.append(f"{ewhere}: scene windows are not in strict chronological order")
            if entry.selected:
                selected.append(entry.scene_token)
            elif entry.scene_token or not entry.reason:
                issues.append(f"{ewhere}: an unselected window needs a reason and no scene token")
            last = entry
    _exactly_once(rel, "chronology entry for scene", selected, t.index["scene"], issues)


def _check_validation_state(ext: LoadedExtensions, expected: Any, issues: list[str]) -> None:
    doc = ext.get(spec.VALIDATION_FILE)
    if expected is None:  # the SDK reads either state; validate demands the exact one
        return
    if doc is not None and doc != expected:
        issues.append(
            f"{_rel(spec.VALIDATION_FILE)}: expected {msgspec.json.encode(expected).decode()}, "
            f"found {msgspec.json.encode(doc).decode()}"
        )


def check_evidence(
    t: LoadedTables, ext: LoadedExtensions, issues: list[str], *, expected_validation: Any
) -> None:
    """Run every evidence check.

    *expected_validation* is the exact ``validation.json`` wanted, or None to accept any
    well-formed one (the SDK reads both staging and published dataroots).
    """
    config = ext.get(spec.CONFIG_FILE)
    if config is not None:
        _check_config(config, issues)
    checks: list[tuple[str, Any]] = [
        (spec.VALIDITY_FILE, _check_validity),
        (spec.TAGS_FILE, _check_tags),
        (spec.ANNOTATIONS_FILE, _check_annotations),
    ]
    for name, check in checks:
        doc = ext.get(name)
        if doc is not None:
            check(t, doc, issues)
    split = ext.get(spec.SPLIT_FILE)
    if split is not None:
        _check_split(t, split, config, issues)
    audit = ext.get(spec.PIPELINE_AUDIT_FILE)
    if audit is not None:
        _check_audit(t, audit, ext, issues)
    _check_validation_state(ext, expected_validation, issues)
