"""The ``mz_extensions/`` documents of an export, built in memory from evidence and tables."""

from __future__ import annotations

import math
from collections import Counter

import msgspec

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes.evidence.labels import resolve_annotations
from dataset_devkit.nuscenes.evidence.records import EvidenceDocument, EvScene
from dataset_devkit.nuscenes.evidence.tags import scene_tags
from dataset_devkit.nuscenes.export.tables import Tables
from dataset_devkit.nuscenes.spec import (
    ANNOTATIONS_FILE,
    CONFIG_FILE,
    EXTENSION_SCHEMA_VERSION,
    GLOBAL_CRS,
    GNSS_FILE,
    JPEG_QUALITY,
    PIPELINE_AUDIT_FILE,
    RECORDINGS_FILE,
    SOURCE_COMBINATIONS,
    SOURCE_CONTRACTS,
    SOURCE_DECODED,
    SOURCE_FILE,
    SPLIT_FILE,
    TAGS_FILE,
    VALIDATION_FILE,
    VALIDATION_NOT_RUN,
    VALIDITY_FILE,
    VALIDITY_SCHEMA_VERSION,
    AnnotationsDocument,
    CameraRecord,
    ChronologyEntry,
    ConfigDocument,
    GnssDocument,
    GnssRow,
    PipelineAuditDocument,
    RecordingChronology,
    RecordingRecord,
    RecordingsDocument,
    RecordingValidity,
    Rejection,
    SceneValidity,
    SceneWindowAudit,
    SourceDocument,
    SplitAssignment,
    SplitDocument,
    TagsDocument,
    ValidationDocument,
    ValidityDocument,
)

__all__ = ["build_extensions", "source_document"]


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def source_document(
    source_type: str,
    map_token: str,
    *,
    pose_frame: str | None = None,
    world_frame: str | None = None,
    reencoded_cameras: bool = False,
) -> SourceDocument:
    """``source.json`` for *source_type*, refusing anything outside the fixed contract.

    *pose_frame* other than the source type's default (a message log's own transform tree
    frame) is recorded with its *world_frame* name; *reencoded_cameras* says that some
    message-log cameras were not JPEG (then each camera's source encoding is in
    ``recordings.json`` and the non-JPEG ones were encoded at quality 95).
    """
    contract = SOURCE_CONTRACTS.get(source_type)
    if contract is None:
        raise ConfigError(f"unknown source type {source_type!r}", key="source_type")
    privacy, default_frame, resolution = contract
    frame = pose_frame or default_frame
    if (source_type, privacy, frame, resolution) not in SOURCE_COMBINATIONS:
        raise ConfigError(
            f"pose frame {frame!r} is outside the contract for {source_type}", key="pose_frame"
        )
    decoded = source_type == SOURCE_DECODED
    if decoded:
        policy, quality = "reencoded", JPEG_QUALITY
    elif reencoded_cameras:
        policy, quality = "per_camera", JPEG_QUALITY
    else:
        policy, quality = "verbatim", None
    return SourceDocument(
        schema_version=EXTENSION_SCHEMA_VERSION,
        source_type=source_type,  # type: ignore[arg-type]
        privacy=privacy,  # type: ignore[arg-type]
        pose_frame=frame,  # type: ignore[arg-type]
        global_horizontal_resolution_m=resolution,
        global_crs=GLOBAL_CRS,
        jpeg_policy=policy,  # type: ignore[arg-type]
        jpeg_quality=quality,
        scaffold_map_token=map_token,
        world_frame=world_frame if world_frame is not None else msgspec.UNSET,
    )


def _pose_frame(doc: EvidenceDocument) -> tuple[str | None, str | None]:
    """The dataset's pose frame and world frame name: one for every recording."""
    frames = {(r.pose_frame, r.world_frame) for r in doc.recordings}
    if len(frames) > 1:
        listed = ", ".join(
            f"{r.recording_id}: {r.world_frame if isinstance(r.world_frame, str) else 'GNSS'}"
            for r in doc.recordings
        )
        raise ConfigError(
            f"the recordings' ego poses are in different frames ({listed}); one dataset has "
            "one pose frame: declare [ingest.pose] world_frame",
            key="ingest.pose.world_frame",
        )
    ((frame, world),) = frames
    return (
        frame if isinstance(frame, str) else None,
        world if isinstance(world, str) else None,
    )


def build_extensions(doc: EvidenceDocument, t: Tables, evidence_sha256: str) -> dict[str, object]:
    """Every extension document (but ``content_manifest.json``, which publication writes
    last), by file name."""
    scenes = {s.scene_id: s for s in doc.derived.scenes}
    selected = [scenes[sid] for sid in doc.derived.selected_scene_ids]
    exported = Counter((f.image.source_digest, f.record.calibrated_sensor_token) for f in t.frames)
    recordings = []
    for rec in doc.recordings:
        log = t.log_by_digest.get(rec.source_digest, "")
        cams = tuple(
            CameraRecord(
                source_name=c.source_name,
                channel=c.channel,
                sensor_token=t.sensor_by_channel[c.channel] if log else "",
                calibrated_sensor_token=t.calibrated_by_key[(rec.source_digest, c.channel)]
                if log
                else "",
                width=c.width,
                height=c.height,
                intrinsic=c.intrinsic,
                distortion_model=c.distortion_model,
                distortion=c.distortion,
                frame_id=c.frame_id,
                topic=c.topic,
                frames_observed=len(c.timestamps_ns),
                source_encoding=c.source_encoding,
                frames_exported=exported[
                    (rec.source_digest, t.calibrated_by_key[(rec.source_digest, c.channel)])
                ]
                if log
                else 0,
            )
            for c in rec.cameras
        )
        all_times = [ts for c in rec.cameras for ts in c.timestamps_ns]
        recordings.append(
            RecordingRecord(
                recording_id=rec.recording_id,
                log_token=log,
                source_type=rec.source_type,  # type: ignore[arg-type]
                backend=rec.backend,
                source_name=rec.source_name,
                source_size=rec.source_size,
                source_digest=rec.source_digest,
                truncated=rec.truncated,
                start_timestamp_ns=min(all_times),
                end_timestamp_ns=max(all_times),
                cameras=cams,
                scene_tokens=tuple(
                    t.scenes_by_id[s.scene_id][0]
                    for s in selected
                    if s.source_digest == rec.source_digest
                ),
                selected=bool(log),
                reason="" if log else _unselected_reason(doc, rec.source_digest),
                truncation_detail=rec.observations.truncation_detail if rec.truncated else "",
                pose_source=rec.pose_source,
                clock=rec.clock,
            )
        )
    resolution = SOURCE_CONTRACTS[doc.source_type][2]
    pose_frame, world_frame = _pose_frame(doc)
    gnss_rows = tuple(
        GnssRow(
            ego_pose_token=f.ego_pose.token,
            sample_data_token=f.record.token,
            source_digest=f.image.source_digest,
            timestamp_ns=f.frame.timestamp_ns,
            translation_xyz_m=f.ego_pose.translation,
            published_east_m=_round_half_up(f.frame.gnss_east_m),
            published_north_m=_round_half_up(f.frame.gnss_north_m),
            fix_timestamp_ns=f.frame.gnss_timestamp_ns,
        )
        for f in t.frames
        # Poses in a recording's own frame have a GNSS row only where a fix exists.
        if f.frame.gnss_timestamp_ns is not None
        and f.frame.gnss_east_m is not None
        and f.frame.gnss_north_m is not None
    )
    named = [(s, t.scenes_by_id[s.scene_id][0]) for s in selected]
    windows, matches, refs = resolve_annotations(doc.namespace, doc.labels, doc.recordings, named)
    split_by_id = {s.scene_id: s for s in doc.derived.splits}
    return {
        SOURCE_FILE: source_document(
            doc.source_type,
            t.map[0].token,
            pose_frame=pose_frame,
            world_frame=world_frame,
            reencoded_cameras=any(
                isinstance(c.source_encoding, str) for r in doc.recordings for c in r.cameras
            ),
        ),
        RECORDINGS_FILE: RecordingsDocument(
            schema_version=EXTENSION_SCHEMA_VERSION,
            channel_mapping=doc.channel_mapping,
            recordings=tuple(recordings),
        ),
        GNSS_FILE: GnssDocument(
            schema_version=EXTENSION_SCHEMA_VERSION,
            global_crs=GLOBAL_CRS,
            global_horizontal_resolution_m=resolution,
            rows=gnss_rows,
        ),
        VALIDITY_FILE: _validity(doc, t, selected),
        VALIDATION_FILE: ValidationDocument(
            schema_version=EXTENSION_SCHEMA_VERSION, state=VALIDATION_NOT_RUN
        ),
        TAGS_FILE: TagsDocument(
            schema_version=EXTENSION_SCHEMA_VERSION,
            tags=tuple(scene_tags(s, *t.scenes_by_id[s.scene_id][:2]) for s in selected),
        ),
        ANNOTATIONS_FILE: AnnotationsDocument(
            schema_version=EXTENSION_SCHEMA_VERSION,
            label_file_name=doc.label_file_name,
            label_file_sha256=doc.label_file_sha256,
            records=doc.labels,
            windows=windows,
            matches=matches,
            scene_references=refs,
        ),
        SPLIT_FILE: SplitDocument(
            schema_version=EXTENSION_SCHEMA_VERSION,
            namespace=doc.namespace,
            method=doc.config.split.method,
            test_fraction=doc.config.split.test_fraction,
            assignments=tuple(
                SplitAssignment(
                    scene_token=t.scenes_by_id[s.scene_id][0],
                    scene_name=t.scenes_by_id[s.scene_id][1],
                    split=split_by_id[s.scene_id].split,  # type: ignore[arg-type]
                    group_id=split_by_id[s.scene_id].group_id,
                )
                for s in selected
            ),
        ),
        CONFIG_FILE: ConfigDocument(
            schema_version=EXTENSION_SCHEMA_VERSION,
            config=doc.config,
            config_fingerprint=doc.config_fingerprint,
            evidence_fingerprint=evidence_sha256,
        ),
        PIPELINE_AUDIT_FILE: _audit(doc, t),
    }


def _unselected_reason(doc: EvidenceDocument, digest: str) -> str:
    """Why a recording contributes no scene: its windows' reasons, counted."""
    reasons = Counter(
        doc.derived.rejected_by.get(s.scene_id, "not selected")
        for s in doc.derived.scenes
        if s.source_digest == digest
    )
    if not reasons:
        return "no scene window (no camera frame)"
    total = sum(reasons.values())
    listed = "; ".join(f"{n}x {why}" for why, n in sorted(reasons.items()))
    return f"none of its {total} scene windows was selected: {listed}"


def _validity(doc: EvidenceDocument, t: Tables, selected: list[EvScene]) -> ValidityDocument:
    recordings = []
    for rec in doc.recordings:
        windows = [s for s in doc.derived.scenes if s.source_digest == rec.source_digest]
        valid = any(s.valid for s in windows)
        recordings.append(
            RecordingValidity(
                source_digest=rec.source_digest,
                recording_id=rec.recording_id,
                valid=valid,
                reasons=() if valid else ("no valid scene window",),
                observations=rec.observations,
                scene_windows=tuple(
                    SceneWindowAudit(
                        scene_index=s.scene_index,
                        start_timestamp_ns=s.start_timestamp_ns,
                        end_timestamp_ns=s.end_timestamp_ns,
                        valid=s.valid,
                        reasons=s.reasons,
                        cameras=s.audits,
                    )
                    for s in windows
                ),
            )
        )
    scenes = tuple(
        SceneValidity(
            scene_token=t.scenes_by_id[s.scene_id][0],
            scene_name=t.scenes_by_id[s.scene_id][1],
            source_digest=s.source_digest,
            scene_index=s.scene_index,
            valid=s.valid,
            reasons=s.reasons,
            nbr_samples=len(s.grid_timestamps_ns),
            sample_tokens=t.scenes_by_id[s.scene_id][2],
            channels=s.channels,
            max_abs_offset_ns=max((a.max_abs_offset_ns for a in s.audits), default=0),
            sample_timestamps_ns=s.grid_timestamps_ns,
        )
        for s in selected
    )
    return ValidityDocument(
        schema_version=VALIDITY_SCHEMA_VERSION, recordings=tuple(recordings), scenes=scenes
    )


def _audit(doc: EvidenceDocument, t: Tables) -> PipelineAuditDocument:
    filtering = tuple(
        Rejection(subject=f"{rec.source_name}: {r.subject}", reason=r.reason)
        for rec in doc.recordings
        for r in rec.filtering
    )
    chronology = []
    for rec in doc.recordings:
        entries = []
        for s in doc.derived.scenes:
            if s.source_digest != rec.source_digest:
                continue
            token = t.scenes_by_id.get(s.scene_id, ("",))[0]
            entries.append(
                ChronologyEntry(
                    scene_index=s.scene_index,
                    start_timestamp_ns=s.start_timestamp_ns,
                    end_timestamp_ns=s.end_timestamp_ns,
                    selected=bool(token),
                    scene_token=token,
                    reason=doc.derived.rejected_by.get(s.scene_id, ""),
                )
            )
        chronology.append(
            RecordingChronology(source_digest=rec.source_digest, entries=tuple(entries))
        )
    return PipelineAuditDocument(
        schema_version=EXTENSION_SCHEMA_VERSION,
        filtering=filtering,
        rejections=doc.rejections,
        selection=doc.derived.selection,
        selected_scene_ids=doc.derived.selected_scene_ids,
        chronology=tuple(chronology),
    )
