"""Build the immutable evidence directory from recordings (ingest, Tasks 5-7, frame JPEGs)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path

import msgspec

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import SafeDir, path_argument, remove_staging, write_manifest
from dataset_devkit.nuscenes.common.arguments import check_instance, check_output_location
from dataset_devkit.nuscenes.common.streams import FixRows, PoseRows, QuatRows, TimedRows
from dataset_devkit.nuscenes.common.tokens import encode_canonical
from dataset_devkit.nuscenes.evidence.derive import check_config, derive
from dataset_devkit.nuscenes.evidence.inputs import (
    MAX_RECORDING_SPAN_NS,
    channel_mapping,
    check_recording_names,
    distinct_recordings,
    open_recording,
)
from dataset_devkit.nuscenes.evidence.labels import read_labels
from dataset_devkit.nuscenes.evidence.parallel import ingest_recordings, store_frames
from dataset_devkit.nuscenes.evidence.reader import Evidence, read_evidence
from dataset_devkit.nuscenes.evidence.records import (
    EVIDENCE_FILE,
    FRAMES_DIR,
    EvCamera,
    EvidenceDocument,
    EvRecording,
    EvScene,
)
from dataset_devkit.nuscenes.ingest import RecordingSource
from dataset_devkit.nuscenes.spec import (
    EVIDENCE_SCHEMA_VERSION,
    AnnotationRecord,
    PipelineConfig,
    Rejection,
)

__all__ = [
    "MAX_RECORDING_SPAN_NS",
    "build_evidence",
    "config_fingerprint",
    "encode_document",
    "open_recording",
]


Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``; the library never prints, callers render."""


def config_fingerprint(config: PipelineConfig) -> str:
    """SHA-256 of the canonical JSON of the resolved config (namespace included)."""
    return hashlib.sha256(encode_canonical(config)).hexdigest()


def _to_evidence(
    src: RecordingSource, mapping: dict[str, str], pose_declared: bool = False
) -> EvRecording:
    """*pose_declared*: ``[ingest.pose]`` is set (the default's evidence predates the field)."""
    return EvRecording(
        recording_id=src.recording_id,
        source_type=src.source_type,
        backend=src.backend,
        source_name=src.source_name,
        source_size=src.source_size,
        source_digest=src.source_digest,
        vehicle=src.vehicle,
        location=src.location,
        truncated=src.truncated,
        longitude_deg=src.longitude_deg,
        observations=src.observations,
        filtering=src.filtering,
        cameras=tuple(
            EvCamera(
                source_name=c.source_name,
                channel=mapping[c.source_name],
                topic=c.topic,
                frame_id=c.frame_id,
                width=c.width,
                height=c.height,
                intrinsic=c.intrinsic,
                distortion_model=c.distortion_model,
                distortion=c.distortion,
                translation=c.translation,
                rotation=c.rotation,
                timestamps_ns=c.timestamps_ns,
                invalid_frames=c.invalid_frames,
                source_encoding=c.source_encoding or msgspec.UNSET,
            )
            for c in sorted(src.cameras, key=lambda c: mapping[c.source_name])
        ),
        translations=PoseRows.from_rows((s.timestamp_ns, s.value) for s in src.translations),
        rotations=QuatRows.from_rows((s.timestamp_ns, s.value) for s in src.rotations),
        gnss=FixRows.from_rows((g.timestamp_ns, g.east_m, g.north_m) for g in src.gnss),
        track=PoseRows.from_rows((s.timestamp_ns, s.value) for s in src.track),
        gnss_pose_offsets_m=src.gnss_pose_offsets_m,
        pose_frame=src.pose_frame or msgspec.UNSET,
        world_frame=src.world_frame or msgspec.UNSET,
        pose_source=src.pose_source if src.pose_source and pose_declared else msgspec.UNSET,
        clock=src.clock or msgspec.UNSET,
    )


def _without_streams(src: RecordingSource) -> RecordingSource:
    return dataclasses.replace(src, translations=(), rotations=(), gnss=(), track=())


def build_evidence(
    recordings: Sequence[Path | str],
    config: PipelineConfig,
    out: Path | str,
    *,
    labels: Path | str | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> Evidence:
    """Ingest *recordings*, derive scenes/selection/splits, store frames; write *out* once.

    *executor* runs the per-recording work (ingest, then frame extraction) as one task per
    recording (see :mod:`.parallel`); None runs it in this process. Whatever runs it, the
    evidence is byte-identical. *out* must not exist. Its ``content_manifest.json`` is
    written last, so a directory without one is an interrupted build, never evidence; a
    failed build removes *out*.
    """
    check_instance(config, PipelineConfig, "config")
    check_config(config)
    # As it will be read back: ``scene_duration_s=2`` becomes 2.0, so the recorded
    # fingerprint matches the decoded config (an int here made the evidence unreadable).
    config = msgspec.json.decode(msgspec.json.encode(config), type=PipelineConfig)
    if isinstance(recordings, str | bytes | os.PathLike):
        raise ConfigError(
            f"recordings must be a list of paths, found the single path {recordings!r}",
            key="recordings",
        )
    if not recordings:
        raise ConfigError("at least one recording is needed", key="sources")
    paths = [path_argument(p, f"recordings[{i}]") for i, p in enumerate(recordings)]
    out = path_argument(out, "out")
    labels = None if labels is None else path_argument(labels, "labels")
    # before the ingest: a missing folder or an existing output would fail only at the end
    check_output_location(Path(out), "out", apart_from=[Path(p) for p in paths])
    report = progress or (lambda stage, done, total: None)
    check_recording_names([Path(p) for p in paths], config)
    sources = ingest_recordings(
        [Path(p) for p in paths],
        config.ingest,
        round(config.scenario.pose_tolerance_ms * 1e6),
        executor,
        report,
    )
    types = sorted({s.source_type for s in sources})
    if len(types) != 1:
        raise ConfigError(
            f"all recordings of a dataset need one source type, found {types}", key="sources"
        )
    sources = distinct_recordings(paths, sources)
    origin = {s.source_digest: p for p, s in zip(paths, sources, strict=True)}
    sources.sort(key=lambda s: (s.recording_id, s.source_digest))
    mapping = channel_mapping(sources)
    declared = not isinstance(config.ingest.pose, msgspec.UnsetType)
    ev_recordings = tuple(_to_evidence(s, mapping, declared) for s in sources)
    # The evidence holds the pose, GNSS and track streams as arrays now; the ingest's
    # objects per message (hundreds of bytes each) are not needed to store the frames.
    sources = [_without_streams(s) for s in sources]
    report("scenes", 0, 1)
    derived = derive(ev_recordings, config)
    report("scenes", 1, 1)
    label_name, label_sha = "", ""
    label_records: tuple[AnnotationRecord, ...] = ()
    if labels is not None:
        label_name, label_sha, label_records = read_labels(Path(labels), ev_recordings)
    root = SafeDir.create(out)  # refuses an existing path: evidence is written once
    try:
        with root:
            root.mkdir(FRAMES_DIR).close()
            images = store_frames(
                Path(out),
                sources,
                _wanted_frames(derived.scenes, set(derived.selected_scene_ids)),
                mapping,
                origin,
                executor,
                report,
            )
            doc = EvidenceDocument(
                schema_version=EVIDENCE_SCHEMA_VERSION,
                namespace=config.namespace,
                config=config,
                config_fingerprint=config_fingerprint(config),
                source_type=types[0],
                channel_mapping=mapping,
                recordings=ev_recordings,
                derived=derived,
                images=images,
                label_file_name=label_name,
                label_file_sha256=label_sha,
                labels=label_records,
                rejections=tuple(
                    Rejection(
                        subject=s.source_name,
                        reason=f"truncated: {s.observations.truncation_detail}",
                    )
                    for s in sources
                    if s.truncated
                ),
            )
            root.write_bytes(EVIDENCE_FILE, encode_document(doc))
        write_manifest(out)
    except BaseException:
        # Ours alone (created exclusively above): leave no half-built evidence behind.
        remove_staging(out)
        raise
    # Everything built here grows with the recordings' length: drop it before the evidence
    # is decoded back, or the build holds two copies at once.
    del sources, ev_recordings, derived, doc, images, label_records
    # The frames were hashed into the manifest just now, and the export checks each one
    # against it as it copies; hashing the tree a second time here held a report of every
    # file next to the decoded document (evidence.json itself is checked either way).
    return read_evidence(out, verify_frames=False)


def encode_document(doc: EvidenceDocument) -> bytes:
    """``encode_canonical(doc)``, the same bytes, built a piece at a time.

    Canonical JSON of a whole hour-long recording exists at once as Python lists, dicts and
    JSON chunks costing several times the file's size; here the evidence records are encoded
    field by field and their long sequences (capture times, poses) in blocks, so only one
    block is ever expanded while the document's bytes are assembled.
    """
    return _encode(doc)


#: Items of a long sequence encoded at once by :func:`encode_document`.
_BLOCK = 4096


def _encode(value: object) -> bytes:
    if isinstance(value, EvidenceDocument | EvRecording | EvCamera):
        # Evidence records encode every field under its own name (no rename, no omitted
        # defaults; unset additive fields left out, as msgspec does): canonical JSON is their
        # fields in sorted order.
        fields = sorted(
            f for f in value.__struct_fields__ if getattr(value, f) is not msgspec.UNSET
        )
        return (
            b"{"
            + b",".join(
                encode_canonical(name) + b":" + _encode(getattr(value, name)) for name in fields
            )
            + b"}"
        )
    if isinstance(value, TimedRows):
        blocks = (
            encode_canonical(value.to_builtins(i, i + _BLOCK))[1:-1]
            for i in range(0, len(value), _BLOCK)
        )
        return b"[" + b",".join(blocks) + b"]"
    if isinstance(value, tuple | list) and len(value) > _BLOCK:
        blocks = (
            encode_canonical(value[i : i + _BLOCK])[1:-1] for i in range(0, len(value), _BLOCK)
        )
        return b"[" + b",".join(blocks) + b"]"
    if isinstance(value, tuple | list) and any(
        isinstance(v, EvRecording | EvCamera) for v in value
    ):
        return b"[" + b",".join(_encode(v) for v in value) + b"]"
    return encode_canonical(value)


def _wanted_frames(scenes: Sequence[EvScene], selected: set[str]) -> dict[str, dict[str, set[int]]]:
    """Source digest -> channel -> capture times of the selected scenes' frames."""
    wanted: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for scene in scenes:
        if scene.scene_id in selected:
            for frame in scene.frames:
                wanted[scene.source_digest][frame.channel].add(frame.timestamp_ns)
    return wanted
