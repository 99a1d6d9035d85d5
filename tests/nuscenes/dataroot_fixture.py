"""A tiny valid nuScenes dataroot writer for the validator, SDK and build-service tests.

It writes the 13 official tables, real JPEGs, the compatibility map scaffold and the
``mz_extensions`` documents, so these tests do not wait for the exporter; the end-to-end
test goes through the real exporter.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import msgspec
from PIL import Image

from dataset_devkit.integrity import canonical_json
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.evidence.writer import config_fingerprint

VERSION = "v1.0-trainval"


def token(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=8)
def jpeg_bytes(width: int, height: int, shade: int = 90) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (shade, 120, 200)).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def png_black_1x1() -> bytes:
    buf = io.BytesIO()
    Image.new("L", (1, 1), 0).save(buf, format="PNG")
    return buf.getvalue()


@dataclass
class Fixture:
    root: Path
    tables: dict[str, list[dict[str, Any]]]
    extensions: dict[str, Any] = field(default_factory=dict)

    def first(self, table: str) -> dict[str, Any]:
        return self.tables[table][0]


def build_tables(
    *,
    scenes: int = 2,
    samples: int = 3,
    cameras: tuple[str, ...] = ("CAM_FRONT", "CAM_BACK"),
    width: int = 16,
    height: int = 8,
) -> dict[str, list[dict[str, Any]]]:
    t: dict[str, list[dict[str, Any]]] = {
        name: []
        for name in (
            "category",
            "attribute",
            "visibility",
            "instance",
            "sensor",
            "calibrated_sensor",
            "ego_pose",
            "log",
            "scene",
            "sample",
            "sample_data",
            "sample_annotation",
            "map",
        )
    }
    log = token("log", 0)
    t["log"].append(
        {
            "token": log,
            "logfile": "rec-0",
            "vehicle": "demo-car",
            "date_captured": "2026-01-02",
            "location": "recording-local",
        }
    )
    calib = {}
    for c, channel in enumerate(cameras):
        sensor = token("sensor", channel)
        t["sensor"].append({"token": sensor, "channel": channel, "modality": "camera"})
        calib[channel] = token("calibrated_sensor", channel)
        t["calibrated_sensor"].append(
            {
                "token": calib[channel],
                "sensor_token": sensor,
                "translation": [1.0, 0.0, 1.5 + c],
                "rotation": [0.5, -0.5, 0.5, -0.5],
                "camera_intrinsic": [[10.0, 0.0, 8.0], [0.0, 10.0, 4.0], [0.0, 0.0, 1.0]],
            }
        )
    for s in range(scenes):
        scene = token("scene", s)
        sample_tokens = [token("sample", s, i) for i in range(samples)]
        t["scene"].append(
            {
                "token": scene,
                "name": f"mz-{token('rec')[:12]}-{s:04d}",
                "description": "",
                "log_token": log,
                "nbr_samples": samples,
                "first_sample_token": sample_tokens[0],
                "last_sample_token": sample_tokens[-1],
            }
        )
        for i, st in enumerate(sample_tokens):
            ts = 1_000_000 + s * 20_000_000 + i * 500_000
            t["sample"].append(
                {
                    "token": st,
                    "timestamp": ts,
                    "scene_token": scene,
                    "prev": sample_tokens[i - 1] if i else "",
                    "next": sample_tokens[i + 1] if i + 1 < samples else "",
                }
            )
        for c, channel in enumerate(cameras):
            sds = [token("sample_data", s, i, channel) for i in range(samples)]
            for i, sd in enumerate(sds):
                ts = 1_000_000 + s * 20_000_000 + i * 500_000 + c
                pose = token("ego_pose", sd)
                t["ego_pose"].append(
                    {
                        "token": pose,
                        "timestamp": ts,
                        "rotation": [1.0, 0.0, 0.0, 0.0],
                        "translation": [float(i), float(s), 0.0],
                    }
                )
                t["sample_data"].append(
                    {
                        "token": sd,
                        "sample_token": sample_tokens[i],
                        "ego_pose_token": pose,
                        "calibrated_sensor_token": calib[channel],
                        "filename": f"samples/{channel}/{sd}.jpg",
                        "fileformat": "jpg",
                        "width": width,
                        "height": height,
                        "timestamp": ts,
                        "is_key_frame": True,
                        "prev": sds[i - 1] if i else "",
                        "next": sds[i + 1] if i + 1 < samples else "",
                    }
                )
    t["map"].append(
        {
            "token": token("map"),
            "log_tokens": [log],
            "category": "compatibility_scaffold",
            "filename": "maps/compatibility_scaffold.png",
        }
    )
    return t


def write_tables(root: Path, tables: dict[str, list[dict[str, Any]]]) -> None:
    (root / VERSION).mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        (root / VERSION / f"{name}.json").write_bytes(canonical_json(rows))


def build_extensions(tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The ten mz_extensions documents matching *tables* (decoded_hf contract)."""
    digest = "pyav:sha256:" + hashlib.sha256(b"rec-0").hexdigest()
    log = tables["log"][0]["token"]
    scenes = tables["scene"]
    by_sensor = {row["token"]: row for row in tables["sensor"]}
    cameras = tuple(
        spec.CameraRecord(
            source_name=by_sensor[cs["sensor_token"]]["channel"].lower(),
            channel=by_sensor[cs["sensor_token"]]["channel"],
            sensor_token=cs["sensor_token"],
            calibrated_sensor_token=cs["token"],
            width=16,
            height=8,
            intrinsic=cast(Any, tuple(tuple(r) for r in cs["camera_intrinsic"])),
            distortion_model="plumb_bob",
            distortion=(0.0, 0.0, 0.0, 0.0, 0.0),
            frame_id="cam",
            topic="",
            frames_observed=10,
            frames_exported=6,
        )
        for cs in tables["calibrated_sensor"]
    )
    chains = {}
    by_sample = {row["token"]: row for row in tables["sample"]}
    for scene in scenes:
        chain, tok = [], scene["first_sample_token"]
        by_token = {row["token"]: row for row in tables["sample"]}
        while tok:
            chain.append(tok)
            tok = by_token[tok]["next"]
        chains[scene["token"]] = tuple(chain)
    channels = tuple(sorted(row["channel"] for row in tables["sensor"]))
    config = spec.PipelineConfig(namespace="fixture")
    sd_by_pose = {sd["ego_pose_token"]: sd for sd in tables["sample_data"]}
    empty_obs = spec.RecordingObservations(
        messages_read=0,
        image_frames={},
        calibrations={},
        poses=0,
        gnss_fixes=0,
        truncated=False,
        truncation_detail="",
        rejected_messages=0,
    )
    return {
        spec.SOURCE_FILE: spec.SourceDocument(
            schema_version=1,
            source_type="decoded_hf",
            privacy="privacy_transformed",
            pose_frame="recording_local_enu_v1",
            global_horizontal_resolution_m=1.0,
            global_crs=spec.GLOBAL_CRS,
            jpeg_policy="reencoded",
            jpeg_quality=95,
            scaffold_map_token=tables["map"][0]["token"],
        ),
        spec.RECORDINGS_FILE: spec.RecordingsDocument(
            schema_version=1,
            channel_mapping={c.source_name: c.channel for c in cameras},
            recordings=(
                spec.RecordingRecord(
                    recording_id="rec-0",
                    log_token=log,
                    source_type="decoded_hf",
                    backend="pyav",
                    source_name="rec-0",
                    source_size=5,
                    source_digest=digest,
                    truncated=False,
                    start_timestamp_ns=0,
                    end_timestamp_ns=1,
                    cameras=cameras,
                    scene_tokens=tuple(s["token"] for s in scenes),
                ),
            ),
        ),
        spec.GNSS_FILE: spec.GnssDocument(
            schema_version=1,
            global_crs=spec.GLOBAL_CRS,
            global_horizontal_resolution_m=1.0,
            rows=tuple(
                spec.GnssRow(
                    ego_pose_token=p["token"],
                    sample_data_token=sd_by_pose[p["token"]]["token"],
                    source_digest=digest,
                    timestamp_ns=p["timestamp"] * 1000 + 7,
                    translation_xyz_m=tuple(p["translation"]),
                    published_east_m=1000,
                    published_north_m=2000,
                    fix_timestamp_ns=p["timestamp"] * 1000,
                )
                for p in tables["ego_pose"]
            ),
        ),
        spec.VALIDITY_FILE: spec.ValidityDocument(
            schema_version=2,
            recordings=(
                spec.RecordingValidity(
                    source_digest=digest,
                    recording_id="rec-0",
                    valid=True,
                    reasons=(),
                    observations=empty_obs,
                    scene_windows=(),
                ),
            ),
            scenes=tuple(
                spec.SceneValidity(
                    scene_token=s["token"],
                    scene_name=s["name"],
                    source_digest=digest,
                    scene_index=i,
                    valid=True,
                    reasons=(),
                    nbr_samples=s["nbr_samples"],
                    sample_tokens=chains[s["token"]],
                    sample_timestamps_ns=tuple(
                        by_sample[tok]["timestamp"] * 1000 + 123 for tok in chains[s["token"]]
                    ),
                    channels=channels,
                    max_abs_offset_ns=0,
                )
                for i, s in enumerate(scenes)
            ),
        ),
        spec.VALIDATION_FILE: spec.ValidationDocument(schema_version=1, state="not_run"),
        spec.TAGS_FILE: spec.TagsDocument(
            schema_version=1,
            tags=tuple(
                spec.SceneTags(
                    scene_token=s["token"],
                    scene_name=s["name"],
                    source_digest=digest,
                    duration_s=1.0,
                    distance_m=2.0,
                    mean_speed_mps=2.0,
                    max_speed_mps=3.0,
                    time_of_day="day",
                    local_solar_hour=12.0,
                    channels=channels,
                    nbr_samples=s["nbr_samples"],
                )
                for s in scenes
            ),
        ),
        spec.ANNOTATIONS_FILE: spec.AnnotationsDocument(
            schema_version=1,
            label_file_name="labels.json",
            label_file_sha256="0" * 64,
            records=(
                spec.AnnotationRecord(
                    annotation_id="lbl-1",
                    recording_id="rec-0",
                    label="rain",
                    start_ns=0,
                    end_ns=10,
                    attributes={"intensity": "light"},
                ),
            ),
            windows=(
                spec.AnnotationWindow(
                    window_token=token("window", 1),
                    annotation_id="lbl-1",
                    source_digest=digest,
                    start_timestamp_ns=0,
                    end_timestamp_ns=10,
                ),
            ),
            matches=(
                spec.AnnotationMatch(
                    match_token=token("match", 1),
                    annotation_id="lbl-1",
                    window_token=token("window", 1),
                    scene_token=scenes[0]["token"],
                    overlap_start_ns=0,
                    overlap_end_ns=10,
                ),
            ),
            scene_references=(
                spec.AnnotationSceneReference(
                    scene_token=scenes[0]["token"],
                    annotation_ids=("lbl-1",),
                    match_tokens=(token("match", 1),),
                ),
            ),
        ),
        spec.SPLIT_FILE: spec.SplitDocument(
            schema_version=1,
            namespace="fixture",
            method="recording_groups_v1",
            test_fraction=0.2,
            assignments=tuple(
                spec.SplitAssignment(
                    scene_token=s["token"],
                    scene_name=s["name"],
                    split="train" if i == 0 else "test",
                    group_id=f"g{i}",
                )
                for i, s in enumerate(scenes)
            ),
        ),
        spec.CONFIG_FILE: spec.ConfigDocument(
            schema_version=1,
            config=config,
            config_fingerprint=config_fingerprint(config),
            evidence_fingerprint="e" * 64,
        ),
        spec.PIPELINE_AUDIT_FILE: spec.PipelineAuditDocument(
            schema_version=1,
            filtering=(),
            rejections=(),
            selection=(),
            selected_scene_ids=tuple(f"{digest}#{i}" for i in range(len(scenes))),
            chronology=(
                spec.RecordingChronology(
                    source_digest=digest,
                    entries=tuple(
                        spec.ChronologyEntry(
                            scene_index=i,
                            start_timestamp_ns=i * 10,
                            end_timestamp_ns=i * 10 + 10,
                            selected=True,
                            scene_token=s["token"],
                            reason="",
                        )
                        for i, s in enumerate(scenes)
                    ),
                ),
            ),
        ),
    }


def write_extensions(root: Path, docs: dict[str, Any]) -> None:
    (root / spec.EXTENSIONS_DIR).mkdir(parents=True, exist_ok=True)
    for name, doc in docs.items():
        (root / spec.EXTENSIONS_DIR / name).write_bytes(canonical_json(msgspec.to_builtins(doc)))


def audit_windows(tables: dict[str, list[dict[str, Any]]], docs: dict[str, Any]) -> None:
    """Give *docs* the per-window camera audits the exporter writes, with losses in them.

    Each scene becomes a selected window whose cameras matched every grid point; after every
    other scene comes a window rejected because one camera missed two grid points; and a
    second recording contributed nothing (both its windows rejected). Only the extension
    documents change: the tables stay as :func:`build_tables` wrote them.
    """
    interval = spec.SAMPLE_INTERVAL_NS
    channels = tuple(sorted(row["channel"] for row in tables["sensor"]))
    first = {row["token"]: row for row in tables["sample"]}
    recordings: spec.RecordingsDocument = docs[spec.RECORDINGS_FILE]
    validity: spec.ValidityDocument = docs[spec.VALIDITY_FILE]
    audit: spec.PipelineAuditDocument = docs[spec.PIPELINE_AUDIT_FILE]
    kept = recordings.recordings[0]
    dropped_digest = "pyav:sha256:" + hashlib.sha256(b"rec-dropped").hexdigest()

    def window(index: int, start: int, n: int, missing: dict[str, tuple[int, ...]]) -> Any:
        cams = tuple(
            spec.CameraGridAudit(
                channel=ch,
                grid_points=n,
                matched=n - len(missing.get(ch, ())),
                missing_grid_indices=missing.get(ch, ()),
                max_abs_offset_ns=1000 * c,
                frames_in_window=5 * n,
                frames_without_pose=0,
                offsets_ns=tuple(None if g in missing.get(ch, ()) else 1000 * c for g in range(n)),
            )
            for c, ch in enumerate(channels)
        )
        reasons = tuple(f"{ch} misses {len(m)} of {n} grid points" for ch, m in missing.items())
        return spec.SceneWindowAudit(
            scene_index=index,
            start_timestamp_ns=start,
            end_timestamp_ns=start + n * interval,
            valid=not reasons,
            reasons=reasons,
            cameras=cams,
        )

    windows, entries, scene_index = [], [], {}
    for s, scene in enumerate(tables["scene"]):
        n = scene["nbr_samples"]
        start = first[scene["first_sample_token"]]["timestamp"] * 1000
        windows.append(window(2 * s, start, n, {}))
        scene_index[scene["token"]] = 2 * s
        if s % 2 == 0:
            lost = channels[s // 2 % len(channels)]
            missed = tuple(g for g in (1, 2) if g < n) or (0,)
            windows.append(window(2 * s + 1, start + 10**10, n, {lost: missed}))
    for w in windows:
        token = next((t for t, i in scene_index.items() if i == w.scene_index), "")
        entries.append(
            spec.ChronologyEntry(
                scene_index=w.scene_index,
                start_timestamp_ns=w.start_timestamp_ns,
                end_timestamp_ns=w.end_timestamp_ns,
                selected=bool(token),
                scene_token=token,
                reason="" if token else "rule 0 require_valid: " + "; ".join(w.reasons),
            )
        )
    lost_windows = tuple(
        window(i, 10**9 + i * 3 * 10**9, 4, {channels[0]: (0, 1, 2, 3)}) for i in range(2)
    )
    docs[spec.RECORDINGS_FILE] = msgspec.structs.replace(
        recordings,
        recordings=(
            msgspec.structs.replace(
                kept,
                start_timestamp_ns=windows[0].start_timestamp_ns,
                end_timestamp_ns=windows[-1].end_timestamp_ns,
            ),
            msgspec.structs.replace(
                kept,
                recording_id="rec-dropped",
                log_token="",
                source_name="rec-dropped",
                source_digest=dropped_digest,
                start_timestamp_ns=lost_windows[0].start_timestamp_ns,
                end_timestamp_ns=lost_windows[-1].end_timestamp_ns,
                cameras=tuple(
                    msgspec.structs.replace(
                        c, sensor_token="", calibrated_sensor_token="", frames_exported=0
                    )
                    for c in kept.cameras
                ),
                scene_tokens=(),
                selected=False,
                reason="none of its 2 scene windows was selected",
            ),
        ),
    )
    rv = validity.recordings[0]
    docs[spec.VALIDITY_FILE] = msgspec.structs.replace(
        validity,
        recordings=(
            msgspec.structs.replace(rv, scene_windows=tuple(windows)),
            msgspec.structs.replace(
                rv,
                source_digest=dropped_digest,
                recording_id="rec-dropped",
                valid=False,
                reasons=("no valid scene window",),
                scene_windows=lost_windows,
            ),
        ),
        scenes=tuple(
            msgspec.structs.replace(v, scene_index=scene_index[v.scene_token])
            for v in validity.scenes
        ),
    )
    docs[spec.PIPELINE_AUDIT_FILE] = msgspec.structs.replace(
        audit,
        selected_scene_ids=tuple(
            f"{kept.source_digest}#{2 * s}" for s in range(len(tables["scene"]))
        ),
        chronology=(
            spec.RecordingChronology(source_digest=kept.source_digest, entries=tuple(entries)),
            spec.RecordingChronology(
                source_digest=dropped_digest,
                entries=tuple(
                    spec.ChronologyEntry(
                        scene_index=w.scene_index,
                        start_timestamp_ns=w.start_timestamp_ns,
                        end_timestamp_ns=w.end_timestamp_ns,
                        selected=False,
                        scene_token="",
                        reason="rule 0 require_valid: " + "; ".join(w.reasons),
                    )
                    for w in lost_windows
                ),
            ),
        ),
    )


def write_dataroot(root: Path, *, audit: bool = False, **kwargs: Any) -> Fixture:
    """Write a complete, valid staging dataroot at *root* and return its tables.

    ``audit=True`` adds the exporter's per-window camera audits, with losses
    (:func:`audit_windows`).
    """
    tables = build_tables(**kwargs)
    write_tables(root, tables)
    extensions = build_extensions(tables)
    if audit:
        audit_windows(tables, extensions)
    write_extensions(root, extensions)
    for sd in tables["sample_data"]:
        path = root / sd["filename"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg_bytes(sd["width"], sd["height"]))
    (root / "maps").mkdir(exist_ok=True)
    (root / tables["map"][0]["filename"]).write_bytes(png_black_1x1())
    return Fixture(root=root, tables=tables, extensions=extensions)


def publish_fixture(parent: Path, **kwargs: Any) -> tuple[Path, Fixture]:
    """Write a valid staging dataroot beside ``parent/v1.0-trainval`` and publish it there.

    Publishing runs the official loader check: the test needs nuscenes-devkit.
    """
    from dataset_devkit.integrity import new_staging_dir
    from tests.optional import need

    need("nuscenes")
    from dataset_devkit.nuscenes.build.publish import publish_dataroot

    parent.mkdir(parents=True, exist_ok=True)
    final = parent / VERSION
    staging = new_staging_dir(final)
    fixture = write_dataroot(staging, **kwargs)
    publish_dataroot(staging, final)
    return final, fixture


def writable_copy(src: Path, dst: Path) -> Path:
    """Copy a published (read-only) tree to *dst* and make the copy writable for tampering."""
    import os
    import shutil

    shutil.copytree(src, dst, symlinks=True)
    for dirpath, _dirnames, filenames in os.walk(dst):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return dst


def read_table(root: Path, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((root / VERSION / f"{name}.json").read_text())
    return rows


def rewrite_table(root: Path, name: str, rows: list[dict[str, Any]]) -> None:
    path = root / VERSION / f"{name}.json"
    path.unlink()
    path.write_text(json.dumps(rows))


def rewrite_extension(root: Path, name: str, doc: Any) -> None:
    path = root / spec.EXTENSIONS_DIR / name
    path.unlink()
    path.write_bytes(canonical_json(doc if isinstance(doc, dict) else msgspec.to_builtins(doc)))


def read_extension(root: Path, name: str) -> Any:
    return json.loads((root / spec.EXTENSIONS_DIR / name).read_text())
