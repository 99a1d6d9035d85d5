"""Loading of the ``mz_extensions`` documents and the source, recording and GNSS contract.

Each document is decoded strictly into its ``spec.py`` record (unknown or missing fields are
issues naming the ``$.json.path``). The checks here bind the documents to the official
tables: every token an extension names must exist, and the decoded-source GNSS contract of the
seed (local translation equals the ego pose, whole-metre global east/north, only the fixed
source/privacy/pose combinations) is enforced row by row.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from dataset_devkit.errors import DevkitError
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.compact import compact_gnss
from dataset_devkit.nuscenes.validation.io import DatarootReader
from dataset_devkit.nuscenes.validation.tables import LoadedTables

__all__ = ["LoadedExtensions", "check_source_contract", "load_extensions"]

DIGEST_RE = re.compile(r"^(?P<backend>[A-Za-z0-9_.-]+):sha256:[0-9a-f]{64}$")


@dataclass(slots=True)
class LoadedExtensions:
    """The decoded ``mz_extensions`` documents; a document that failed to load is absent."""

    docs: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        """The decoded document *name*, or None when it failed to load."""
        return self.docs.get(name)


def _rel(name: str) -> str:
    return f"{spec.EXTENSIONS_DIR}/{name}"


def load_extensions(
    reader: DatarootReader,
    issues: list[str],
    *,
    manifest: bool,
    share_with: LoadedTables | None = None,
) -> LoadedExtensions:
    """Read and strictly decode every extension document, reporting unexpected files.

    *manifest* says whether ``content_manifest.json`` may be among them: it is part of a
    published dataroot (checked by the integrity core, not decoded here) and unexpected in a
    staging or finalized one, which must not carry a manifest before publication writes it.
    With *share_with*, the GNSS rows are decoded a block at a time and name their tokens
    with the strings of those tables (same values, one copy: see ``compact_gnss``).
    """
    loaded = LoadedExtensions()
    try:
        entries = reader.list_dir(spec.EXTENSIONS_DIR)
    except DevkitError as exc:
        issues.append(f"{spec.EXTENSIONS_DIR}: cannot list the extension directory ({exc})")
        entries = []
    for name, kind in entries:
        if name == spec.CONTENT_MANIFEST_FILE:
            if not manifest:
                issues.append(
                    f"{_rel(name)}: unexpected {kind}: the content manifest is written by "
                    "publication, after validation"
                )
        elif name not in spec.EXTENSION_RECORDS:
            issues.append(f"{_rel(name)}: unexpected {kind} in the extension directory")
    for name, record in spec.EXTENSION_RECORDS.items():
        try:
            data = reader.read_bytes(_rel(name))
        except DevkitError as exc:
            issues.append(f"{_rel(name)}: cannot read extension document ({exc})")
            continue
        shared = name == spec.GNSS_FILE and share_with is not None
        compact = compact_gnss(data, share_with.index) if shared and share_with else None
        try:
            doc: Any = compact if compact is not None else msgspec.json.decode(data, type=record)
        except msgspec.ValidationError as exc:
            issues.append(f"{_rel(name)}: does not match {record.__name__} ({exc})")
            continue
        except msgspec.DecodeError as exc:
            issues.append(f"{_rel(name)}: malformed JSON ({exc})")
            continue
        del data  # not kept while the next document is read (gnss.json is large)
        expected = (
            spec.VALIDITY_SCHEMA_VERSION
            if name == spec.VALIDITY_FILE
            else spec.EXTENSION_SCHEMA_VERSION
        )
        if doc.schema_version != expected:
            issues.append(
                f"{_rel(name)} at $.schema_version: expected {expected}, found {doc.schema_version}"
            )
            continue
        loaded.docs[name] = doc
    return loaded


def check_source_contract(
    t: LoadedTables, ext: LoadedExtensions, issues: list[str], *, gnss_rows: bool = True
) -> None:
    """Check source.json, recordings.json and gnss.json against each other and the tables.

    ``gnss_rows=False`` (the SDK's load) checks only that every GNSS row resolves (its
    pose, that pose's camera frame, its recording) and leaves the rest of the per-row
    contract (values equal to the ego pose, every pose covered) to ``validate``.
    """
    source = ext.get(spec.SOURCE_FILE)
    recordings = ext.get(spec.RECORDINGS_FILE)
    if source is not None:
        _check_source(t, source, recordings, issues)
    if recordings is not None:
        _check_recordings(t, recordings, source, issues)
    gnss = ext.get(spec.GNSS_FILE)
    if gnss is not None and (gnss_rows or not _gnss_references_resolve(t, gnss, recordings)):
        _check_gnss(t, gnss, source, recordings, issues)


def _gnss_references_resolve(
    t: LoadedTables, doc: spec.GnssDocument, recordings: spec.RecordingsDocument | None
) -> bool:
    """Whether every GNSS row names a distinct ego pose, that pose's camera frame and a
    recording: the SDK's load-time share of the GNSS contract, in C-level passes.

    A False answer sends the caller to the full row-by-row check, which names each issue.
    """
    rows = doc.rows
    poses = list(map(operator.attrgetter("ego_pose_token"), rows))
    frames = list(map(operator.attrgetter("sample_data_token"), rows))
    if len(set(poses)) != len(poses):
        return False
    # The exporter writes one GNSS row per sample_data row, in table order: then two list
    # comparisons (C loops over identical strings) prove every frame and its pose.
    sd_rows = t.tables["sample_data"]
    if frames == list(map(operator.itemgetter("token"), sd_rows)) and poses == list(
        map(operator.itemgetter("ego_pose_token"), sd_rows)
    ):
        return _gnss_digests_resolve(doc, recordings)
    frame_index = t.index["sample_data"]
    if not frame_index.keys() >= set(frames):
        return False
    # Each row's pose must be its frame's pose; frames' poses resolve (a sample_data foreign
    # key the table checks prove), so the poses need no lookup of their own.
    frame_poses = map(operator.itemgetter("ego_pose_token"), map(frame_index.__getitem__, frames))
    if list(frame_poses) != poses:
        return False
    return _gnss_digests_resolve(doc, recordings)


def _gnss_digests_resolve(
    doc: spec.GnssDocument, recordings: spec.RecordingsDocument | None
) -> bool:
    if recordings is None:
        return True
    digests = {r.source_digest for r in recordings.recordings}
    return set(map(operator.attrgetter("source_digest"), doc.rows)) <= digests


def _check_source(
    t: LoadedTables,
    source: spec.SourceDocument,
    recordings: spec.RecordingsDocument | None,
    issues: list[str],
) -> None:
    rel = _rel(spec.SOURCE_FILE)
    found = (source.privacy, source.pose_frame, source.global_horizontal_resolution_m)
    if (source.source_type, *found) not in spec.SOURCE_COMBINATIONS:
        allowed = sorted(str(c[1:]) for c in spec.SOURCE_COMBINATIONS if c[0] == source.source_type)
        issues.append(
            f"{rel}: source/privacy/pose combination {source.source_type}/{found[0]}/{found[1]}"
            f"/{found[2]} is outside the fixed contract (expected one of {', '.join(allowed)})"
        )
    local = source.pose_frame == spec.POSE_FRAME_LOCAL_TF
    if local != isinstance(source.world_frame, str) or (
        isinstance(source.world_frame, str) and not source.world_frame
    ):
        issues.append(
            f"{rel} at $.world_frame: expected the frame name exactly when pose_frame is "
            f"{spec.POSE_FRAME_LOCAL_TF}, found {source.world_frame!r} with {source.pose_frame}"
        )
    if source.global_crs != spec.GLOBAL_CRS:
        issues.append(
            f"{rel} at $.global_crs: expected {spec.GLOBAL_CRS}, found {source.global_crs}"
        )
    reencoded = recordings is not None and any(
        isinstance(c.source_encoding, str) for r in recordings.recordings for c in r.cameras
    )
    if source.source_type == spec.SOURCE_MCAP:
        policy = "per_camera" if reencoded else "verbatim"
    else:
        policy = "reencoded"
    quality = None if policy == "verbatim" else spec.JPEG_QUALITY
    if (source.jpeg_policy, source.jpeg_quality) != (policy, quality):
        issues.append(
            f"{rel} at $.jpeg_policy: expected {policy} (quality {quality}) for "
            f"{source.source_type}, found {source.jpeg_policy} (quality {source.jpeg_quality})"
        )
    maps = t.tables["map"]
    if maps and source.scaffold_map_token != maps[0]["token"]:
        issues.append(
            f"{rel} at $.scaffold_map_token: {source.scaffold_map_token} is not the map "
            f"record {maps[0]['token']}"
        )


def _check_recordings(
    t: LoadedTables,
    doc: spec.RecordingsDocument,
    source: spec.SourceDocument | None,
    issues: list[str],
) -> None:
    rel = _rel(spec.RECORDINGS_FILE)
    logs_seen: dict[str, str] = {}
    digests: set[str] = set()
    scenes_seen: dict[str, str] = {}
    sensors = {row["channel"]: row for row in t.tables["sensor"]}
    for i, rec in enumerate(doc.recordings):
        where = f"{rel} at $.recordings[{i}]"
        m = DIGEST_RE.match(rec.source_digest)
        if m is None or m.group("backend") != rec.backend:
            issues.append(
                f"{where}.source_digest: expected '{rec.backend}:sha256:<64 hex>', "
                f"found {rec.source_digest!r}"
            )
        if rec.source_digest in digests:
            issues.append(f"{where}.source_digest: duplicate fingerprint {rec.source_digest}")
        digests.add(rec.source_digest)
        if source is not None and rec.source_type != source.source_type:
            issues.append(
                f"{where}.source_type: {rec.source_type} differs from source.json "
                f"{source.source_type}"
            )
        if not rec.selected:
            # Listed with its fate: it owns no log, scene or calibration in the tables.
            tokens = [rec.log_token, *rec.scene_tokens]
            tokens += [c.sensor_token + c.calibrated_sensor_token for c in rec.cameras]
            if any(tokens) or not rec.reason:
                issues.append(
                    f"{where}: a recording that is not selected needs a reason and no log, "
                    "scene or camera tokens"
                )
            continue
        if rec.reason:
            issues.append(f"{where}.reason: a selected recording has no reason, found one")
        if rec.log_token not in t.index["log"]:
            issues.append(f"{where}.log_token: token {rec.log_token} not found in log")
        elif rec.log_token in logs_seen:
            issues.append(
                f"{where}.log_token: log {rec.log_token} is also {logs_seen[rec.log_token]}"
            )
        logs_seen.setdefault(rec.log_token, rec.recording_id)
        for scene_token in rec.scene_tokens:
            scene = t.index["scene"].get(scene_token)
            if scene is None:
                issues.append(f"{where}.scene_tokens: token {scene_token} not found in scene")
            elif scene["log_token"] != rec.log_token:
                issues.append(
                    f"{where}.scene_tokens: scene {scene_token} belongs to log {scene['log_token']}"
                )
            if scene_token in scenes_seen:
                issues.append(f"{where}.scene_tokens: scene {scene_token} is listed twice")
            scenes_seen.setdefault(scene_token, rec.recording_id)
        for j, cam in enumerate(rec.cameras):
            cwhere = f"{where}.cameras[{j}]"
            sensor = sensors.get(cam.channel)
            if sensor is None or sensor["token"] != cam.sensor_token:
                issues.append(
                    f"{cwhere}.sensor_token: no sensor {cam.sensor_token} for {cam.channel}"
                )
            cs = t.index["calibrated_sensor"].get(cam.calibrated_sensor_token)
            if cs is None or cs["sensor_token"] != cam.sensor_token:
                issues.append(
                    f"{cwhere}.calibrated_sensor_token: {cam.calibrated_sensor_token} is not a "
                    f"calibration of sensor {cam.sensor_token}"
                )
            if doc.channel_mapping.get(cam.source_name) != cam.channel:
                issues.append(
                    f"{cwhere}.channel: channel_mapping maps {cam.source_name!r} to "
                    f"{doc.channel_mapping.get(cam.source_name)!r}, expected {cam.channel!r}"
                )
    for log in t.tables["log"]:
        if log["token"] not in logs_seen:
            issues.append(f"{rel}: log {log['token']} has no recording")
    for scene in t.tables["scene"]:
        if scene["token"] not in scenes_seen:
            issues.append(f"{rel}: scene {scene['token']} is not listed by any recording")


def _check_gnss(
    t: LoadedTables,
    doc: spec.GnssDocument,
    source: spec.SourceDocument | None,
    recordings: spec.RecordingsDocument | None,
    issues: list[str],
) -> None:
    rel = _rel(spec.GNSS_FILE)
    if source is not None and (doc.global_crs, doc.global_horizontal_resolution_m) != (
        source.global_crs,
        source.global_horizontal_resolution_m,
    ):
        issues.append(f"{rel}: global CRS/resolution differ from source.json")
    digests = None if recordings is None else {r.source_digest for r in recordings.recordings}
    seen: set[str] = set()
    for i, row in enumerate(doc.rows):
        where = f"{rel} at $.rows[{i}]"
        pose = t.index["ego_pose"].get(row.ego_pose_token)
        sd = t.index["sample_data"].get(row.sample_data_token)
        if row.ego_pose_token in seen:
            issues.append(f"{where}.ego_pose_token: pose {row.ego_pose_token} has two rows")
        seen.add(row.ego_pose_token)
        if pose is None:
            issues.append(
                f"{where}.ego_pose_token: token {row.ego_pose_token} not found in ego_pose"
            )
            continue
        if sd is None or sd["ego_pose_token"] != row.ego_pose_token:
            issues.append(
                f"{where}.sample_data_token: {row.sample_data_token} is not the camera frame "
                f"of pose {row.ego_pose_token}"
            )
        if list(row.translation_xyz_m) != list(pose["translation"]):
            issues.append(
                f"{where}.translation_xyz_m: {list(row.translation_xyz_m)} differs from "
                f"ego_pose.translation {list(pose['translation'])}"
            )
        if row.timestamp_ns // 1000 != pose["timestamp"]:
            issues.append(
                f"{where}.timestamp_ns: {row.timestamp_ns} // 1000 is not the ego pose "
                f"timestamp {pose['timestamp']}"
            )
        if digests is not None and row.source_digest not in digests:
            issues.append(f"{where}.source_digest: {row.source_digest} is not a recording")
    if source is not None and source.pose_frame == spec.POSE_FRAME_LOCAL_TF:
        return  # poses in the recording's own frame: GNSS rows only where fixes exist
    for pose in t.tables["ego_pose"]:
        if pose["token"] not in seen:
            issues.append(f"{rel}: ego pose {pose['token']} has no GNSS row")
