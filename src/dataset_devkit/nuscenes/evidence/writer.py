"""Build the immutable evidence directory from recordings (ingest, Tasks 5-7, frame JPEGs)."""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from dataset_devkit.errors import ConfigError, FormatError
from dataset_devkit.integrity import SafeDir, path_argument, remove_staging, write_manifest
from dataset_devkit.nuscenes.common.arguments import check_instance, check_output_location
from dataset_devkit.nuscenes.common.jpeg import decode_jpeg, jpeg_dimensions
from dataset_devkit.nuscenes.common.tokens import encode_canonical
from dataset_devkit.nuscenes.evidence.derive import check_config, derive
from dataset_devkit.nuscenes.evidence.inputs import (
    MAX_RECORDING_SPAN_NS,
    channel_mapping,
    check_span,
    distinct_recordings,
    open_recording,
)
from dataset_devkit.nuscenes.evidence.labels import read_labels
from dataset_devkit.nuscenes.evidence.reader import Evidence, read_evidence
from dataset_devkit.nuscenes.evidence.records import (
    EVIDENCE_FILE,
    FRAMES_DIR,
    EvCamera,
    EvidenceDocument,
    EvImage,
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


def _to_evidence(src: RecordingSource, mapping: dict[str, str]) -> EvRecording:
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
            )
            for c in sorted(src.cameras, key=lambda c: mapping[c.source_name])
        ),
        translations=tuple((s.timestamp_ns, s.value) for s in src.translations),
        rotations=tuple((s.timestamp_ns, s.value) for s in src.rotations),
        gnss=tuple((g.timestamp_ns, g.east_m, g.north_m) for g in src.gnss),
        track=tuple((s.timestamp_ns, s.value) for s in src.track),
        gnss_pose_offsets_m=src.gnss_pose_offsets_m,
    )


def build_evidence(
    recordings: Sequence[Path | str],
    config: PipelineConfig,
    out: Path | str,
    *,
    labels: Path | str | None = None,
    progress: Progress | None = None,
) -> Evidence:
    """Ingest *recordings*, derive scenes/selection/splits, store frames; write *out* once.

    *out* must not exist. Its ``content_manifest.json`` is written last, so a directory
    without one is an interrupted build, never evidence; a failed build removes *out*.
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
    sources = []
    for i, path in enumerate(paths):
        report("ingest", i, len(recordings))
        source = open_recording(Path(path), vehicle_frame=config.ingest.vehicle_frame)
        check_span(source, Path(path))
        sources.append(source)
    report("ingest", len(recordings), len(recordings))
    types = sorted({s.source_type for s in sources})
    if len(types) != 1:
        raise ConfigError(
            f"all recordings of a dataset need one source type, found {types}", key="sources"
        )
    sources = distinct_recordings(paths, sources)
    origin = {s.source_digest: p for p, s in zip(paths, sources, strict=True)}
    sources.sort(key=lambda s: (s.recording_id, s.source_digest))
    mapping = channel_mapping(sources)
    ev_recordings = tuple(_to_evidence(s, mapping) for s in sources)
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
            images = _store_frames(
                root,
                sources,
                derived.scenes,
                set(derived.selected_scene_ids),
                mapping,
                report,
                origin,
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
    return read_evidence(out)


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
        # defaults): canonical JSON is their fields in sorted order.
        fields = sorted(value.__struct_fields__)
        return (
            b"{"
            + b",".join(
                encode_canonical(name) + b":" + _encode(getattr(value, name)) for name in fields
            )
            + b"}"
        )
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


def _store_frames(
    root: SafeDir,
    sources: Sequence[RecordingSource],
    scenes: Sequence[EvScene],
    selected: set[str],
    mapping: dict[str, str],
    report: Progress,
    origin: dict[str, Path],
) -> tuple[EvImage, ...]:
    """Extract the frames of the selected scenes and store them as verified JPEG files."""
    wanted: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for scene in scenes:
        if scene.scene_id in selected:
            for frame in scene.frames:
                wanted[scene.source_digest][frame.channel].add(frame.timestamp_ns)
    total = sum(len(ts) for per in wanted.values() for ts in per.values())
    done = 0
    images: list[EvImage] = []
    frames_dir = root.mkdir(FRAMES_DIR)
    with frames_dir:
        for src in sources:
            per_channel = wanted.get(src.source_digest)
            if not per_channel:
                continue
            short = src.source_digest.rsplit(":", 1)[-1][:16]
            by_name = {c.source_name: c for c in src.cameras}
            request = {
                name: frozenset(per_channel.get(mapping[name], ())) for name in sorted(by_name)
            }
            with frames_dir.mkdir(short) as rec_dir:
                for channel in sorted(per_channel):
                    rec_dir.mkdir(channel).close()
                for name, ts, data in src.extract_frames(request):
                    cam = by_name[name]
                    what = (
                        f"{origin[src.source_digest]}: camera {name!r} (topic {cam.topic!r}) "
                        f"frame {ts}"
                    )
                    dims = jpeg_dimensions(data, what)
                    if dims != (cam.width, cam.height) or decode_jpeg(data, what) != dims:
                        raise FormatError(
                            f"{what} is {dims[0]}x{dims[1]}, "
                            f"calibration says {cam.width}x{cam.height}"
                        )
                    rel = f"{mapping[name]}/{ts}.jpg"
                    rec_dir.write_bytes(rel, data)
                    images.append(
                        EvImage(
                            source_digest=src.source_digest,
                            channel=mapping[name],
                            timestamp_ns=ts,
                            path=f"{FRAMES_DIR}/{short}/{rel}",
                            size=len(data),
                            sha256=hashlib.sha256(data).hexdigest(),
                            width=dims[0],
                            height=dims[1],
                        )
                    )
                    done += 1
                    report("frames", done, total)
    images.sort(key=lambda im: (im.source_digest, im.channel, im.timestamp_ns))
    return tuple(images)
