"""export_dataset rejections and source-specific rules (decoded GNSS, sweeps, labels)."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dataset_devkit.errors import FormatError, IntegrityError, UnsafePathError
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, write_manifest
from dataset_devkit.nuscenes import (
    PipelineConfig,
    SelectionRule,
    build_evidence,
    export_dataset,
    read_evidence,
)
from dataset_devkit.nuscenes.evidence import Evidence
from dataset_devkit.nuscenes.samples import SampleDrive, sample_events
from dataset_devkit.nuscenes.spec import EXTENSIONS_DIR, VERSION, ExportConfig, ScenarioConfig
from tests.nuscenes.helpers import CONFIG, DRIVE


def _ext(root: Path, name: str) -> Any:
    return json.loads((root / EXTENSIONS_DIR / name).read_text())


def _table(root: Path, name: str) -> Any:
    return json.loads((root / VERSION / f"{name}.json").read_text())


@pytest.mark.needs("nuscenes")
def test_decoded_export_declares_the_privacy_contract_and_local_gnss(
    tmp_path: Path, decoded_evidence: Evidence
) -> None:
    from nuscenes.nuscenes import NuScenes

    root = tmp_path / "staging"
    export_dataset(root, decoded_evidence)
    source = _ext(root, "source.json")
    assert (source["source_type"], source["privacy"], source["pose_frame"]) == (
        "decoded_hf",
        "privacy_transformed",
        "recording_local_enu_v1",
    )
    assert source["global_horizontal_resolution_m"] == 1.0
    assert source["jpeg_quality"] == 95
    poses = {p["token"]: p for p in _table(root, "ego_pose")}
    rows = _ext(root, "gnss.json")["rows"]
    assert len(rows) == len(poses)
    for row in rows:
        assert row["translation_xyz_m"] == poses[row["ego_pose_token"]]["translation"]
        assert isinstance(row["published_east_m"], int)
        assert isinstance(row["published_north_m"], int)
    # local ENU: the vehicle starts near the origin, unlike Web Mercator metres
    assert abs(rows[0]["translation_xyz_m"][0]) < 100
    nusc = NuScenes(version=VERSION, dataroot=str(root), verbose=False)
    assert len(nusc.sample_data) == len(rows)
    recordings = _ext(root, "recordings.json")["recordings"]
    assert recordings[0]["source_digest"].startswith("pyav:sha256:")


@pytest.mark.needs("nuscenes")
def test_sweeps_option_exports_non_key_frames_the_loader_accepts(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    from nuscenes.nuscenes import NuScenes

    config = PipelineConfig(
        namespace="sweeps", scenario=CONFIG.scenario, export=ExportConfig(include_sweeps=True)
    )
    ev = build_evidence([recordings["json"]], config, tmp_path / "ev")
    root = tmp_path / "staging"
    export_dataset(root, ev)
    nusc = NuScenes(version=VERSION, dataroot=str(root), verbose=False)
    sweeps = [sd for sd in nusc.sample_data if not sd["is_key_frame"]]
    assert sweeps
    for sd in sweeps:
        assert sd["filename"].startswith("sweeps/CAM_")
        assert nusc.get("sample", sd["sample_token"])
        assert nusc.get("ego_pose", sd["ego_pose_token"])
        assert (root / sd["filename"]).is_file()
    keys = [sd for sd in nusc.sample_data if sd["is_key_frame"]]
    assert len(keys) == sum(len(s["data"]) for s in nusc.sample)


def _rewrite_evidence(ev: Evidence, tmp_path: Path, change) -> Path:
    copy = tmp_path / "evidence-copy"
    shutil.copytree(ev.root, copy)
    for p in copy.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    doc = json.loads((copy / "evidence.json").read_text())
    change(doc)
    (copy / "evidence.json").unlink()
    (copy / "evidence.json").write_bytes(msgspec.json.encode(doc))
    (copy / CONTENT_MANIFEST_NAME).unlink()
    write_manifest(copy)
    return copy


def test_evidence_whose_selection_disagrees_with_its_inputs_is_refused(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    def drop_one(doc: dict[str, Any]) -> None:
        doc["derived"]["selected_scene_ids"] = doc["derived"]["selected_scene_ids"][:-1]

    copy = _rewrite_evidence(mcap_evidence, tmp_path, drop_one)
    with pytest.raises(IntegrityError, match="selected scenes differ"):
        export_dataset(tmp_path / "staging", copy)
    assert not (tmp_path / "staging").exists()


def test_evidence_whose_scene_graph_disagrees_is_refused(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    def shift(doc: dict[str, Any]) -> None:
        doc["recordings"][0]["cameras"][0]["timestamps_ns"][5] += 1  # a key frame

    copy = _rewrite_evidence(mcap_evidence, tmp_path, shift)
    with pytest.raises(IntegrityError, match=r"scene graph of .*#0 differs"):
        export_dataset(tmp_path / "staging", copy)


def test_a_frame_changed_after_the_evidence_was_opened_is_refused(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    copy = tmp_path / "ev"
    shutil.copytree(mcap_evidence.root, copy)
    ev = read_evidence(copy)
    frame = copy / ev.document.images[3].path
    frame.chmod(0o644)
    data = bytearray(frame.read_bytes())
    data[-3] ^= 0xFF
    frame.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match=r"SHA-256 .* differs from the evidence"):
        export_dataset(tmp_path / "staging", ev)


def test_a_staged_copy_that_reads_back_other_bytes_is_refused(
    tmp_path: Path, mcap_evidence: Evidence, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.integrity import write_new_read_back
    from dataset_devkit.nuscenes.export import images

    real = write_new_read_back

    def flipped(parent: Any, name: str, data: bytes, mode: int = 0o644) -> bytes:
        copy = bytearray(real(parent, name, data, mode))
        copy[-3] ^= 0xFF  # what a faulty disk or a concurrent writer would give back
        return bytes(copy)

    monkeypatch.setattr(images, "write_new_read_back", flipped)
    with pytest.raises(
        IntegrityError, match=r"staging/.+\.jpg: staged copy differs from its source"
    ):
        export_dataset(tmp_path / "staging", mcap_evidence, workers=1)


def test_a_frame_replaced_by_a_symlink_is_refused(tmp_path: Path, mcap_evidence: Evidence) -> None:
    copy = tmp_path / "ev"
    shutil.copytree(mcap_evidence.root, copy)
    ev = read_evidence(copy)
    frame = copy / ev.document.images[0].path
    frame.chmod(0o644)
    frame.unlink()
    frame.symlink_to(copy / ev.document.images[1].path)
    with pytest.raises(UnsafePathError):
        export_dataset(tmp_path / "staging", ev)


def test_timestamps_that_collide_in_microseconds_are_refused(tmp_path: Path) -> None:
    from mcap.writer import Writer

    drive = SampleDrive(cameras=("cam_front",), duration_s=2.0, width=16, height=8)
    path = tmp_path / "collide.mcap"
    with path.open("wb") as f:
        writer = Writer(f)
        writer.start()
        ids: dict[str, int] = {}
        names = {
            "tf": "foxglove.FrameTransform",
            "ego": "foxglove.FrameTransform",
            "fix": "foxglove.LocationFix",
            "calibration": "foxglove.CameraCalibration",
            "image": "foxglove.CompressedImage",
        }
        events = list(sample_events(drive))
        first_image = next(
            p for _, k, p in events if k == "image" and p["timestamp"]["nsec"] == 100_000_000
        )
        twin = {
            **first_image,
            "timestamp": {"sec": first_image["timestamp"]["sec"], "nsec": 100_000_400},
        }
        events.append((0, "image", twin))
        for t, kind, p in events:
            if kind not in ids:
                sid = writer.register_schema(name=names[kind], encoding="jsonschema", data=b"{}")
                ids[kind] = writer.register_channel(
                    topic=f"/{kind}", message_encoding="json", schema_id=sid
                )
            if kind == "image":
                p = {**p, "data": base64.b64encode(p["data"]).decode()}
            writer.add_message(ids[kind], log_time=t, publish_time=t, data=json.dumps(p).encode())
        writer.finish()
    config = PipelineConfig(
        namespace="c",
        scenario=ScenarioConfig(scene_duration_s=2.0, min_scene_duration_s=1.0),
        export=ExportConfig(include_sweeps=True),
    )
    ev = build_evidence([path], config, tmp_path / "ev")
    with pytest.raises(
        FormatError, match=r"CAM_FRONT: timestamps .* collide after conversion to microseconds"
    ):
        export_dataset(tmp_path / "staging", ev)


def test_an_empty_selection_is_refused(tmp_path: Path, recordings: dict[str, Path]) -> None:
    config = PipelineConfig(
        namespace="none",
        scenario=ScenarioConfig(
            scene_duration_s=2.0,
            min_scene_duration_s=1.0,
            rules=(SelectionRule(kind="min_mean_speed_mps", value=100.0),),
        ),
    )
    ev = build_evidence([recordings["json"]], config, tmp_path / "ev")
    with pytest.raises(FormatError, match="selects no scene"):
        export_dataset(tmp_path / "staging", ev)


def test_chronology_audit_and_annotations_reference_exported_scenes(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    config = PipelineConfig(
        namespace="audit",
        scenario=ScenarioConfig(
            scene_duration_s=2.0,
            min_scene_duration_s=1.0,
            rules=(SelectionRule(kind="require_valid"), SelectionRule(kind="max_scenes", value=2)),
        ),
    )
    labels = tmp_path / "labels.json"
    start = DRIVE.start_ns
    labels.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "labels": [
                    {
                        "id": "wet",
                        "recording_id": "drive-json",
                        "label": "wet_road",
                        "start_ns": start + 1_000_000_000,
                        "end_ns": start + 3_000_000_000,
                    }
                ],
            }
        )
    )
    ev = build_evidence([recordings["json"]], config, tmp_path / "ev", labels=labels)
    root = tmp_path / "staging"
    export_dataset(root, ev)
    audit = _ext(root, "pipeline_audit.json")
    (chronology,) = audit["chronology"]
    assert [e["selected"] for e in chronology["entries"]] == [True, True, False]
    assert chronology["entries"][2]["reason"] == "rule 1 max_scenes"
    scenes = {s["token"]: s for s in _table(root, "scene")}
    assert {e["scene_token"] for e in chronology["entries"] if e["selected"]} == set(scenes)
    annotations = _ext(root, "annotations.json")
    assert {m["scene_token"] for m in annotations["matches"]} == set(scenes)
    tags = _ext(root, "tags.json")["tags"]
    assert all(t["time_of_day"] == "day" and t["distance_m"] > 0 for t in tags)
    split = _ext(root, "split.json")["assignments"]
    assert {a["scene_token"] for a in split} == set(scenes)
    assert len({a["split"] for a in split}) == 1  # adjacent scenes share one group
    validity = _ext(root, "validity.json")
    assert validity["schema_version"] == 2
    assert len(validity["recordings"][0]["scene_windows"]) == 3
    assert [s["scene_token"] for s in validity["scenes"]] == list(scenes)
    samples = {s["token"]: s for s in _table(root, "sample")}
    for scene in validity["scenes"]:
        micros = [samples[t]["timestamp"] for t in scene["sample_tokens"]]
        assert micros == [ns // 1000 for ns in scene["sample_timestamps_ns"]]


def test_evidence_image_dimensions_that_disagree_with_the_jpeg_are_refused(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    def widen(doc: dict[str, Any]) -> None:
        doc["images"][0]["width"] += 1

    copy = _rewrite_evidence(mcap_evidence, tmp_path, widen)
    with pytest.raises(IntegrityError, match=r"JPEG is 32x24, evidence says 33x24"):
        export_dataset(tmp_path / "staging", copy)


def test_a_frame_whose_size_changed_is_refused(tmp_path: Path, mcap_evidence: Evidence) -> None:
    copy = tmp_path / "ev"
    shutil.copytree(mcap_evidence.root, copy)
    ev = read_evidence(copy)
    frame = copy / ev.document.images[2].path
    frame.chmod(0o644)
    frame.write_bytes(frame.read_bytes() + b"\x00")
    with pytest.raises(IntegrityError, match=r"size \d+ bytes, evidence says \d+"):
        export_dataset(tmp_path / "staging", ev)


def test_non_finite_calibration_in_evidence_is_refused(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    def poison(doc: dict[str, Any]) -> None:
        doc["recordings"][0]["cameras"][0]["translation"][0] = "INF"

    copy = _rewrite_evidence(mcap_evidence, tmp_path, poison)
    raw = (copy / "evidence.json").read_bytes().replace(b'"INF"', b"1e999")
    (copy / "evidence.json").unlink()
    (copy / "evidence.json").write_bytes(raw)
    (copy / CONTENT_MANIFEST_NAME).unlink()
    write_manifest(copy)
    with pytest.raises(FormatError, match=r"cameras\[0\].translation\[0\]: Number out of range"):
        export_dataset(tmp_path / "staging", copy)


def test_a_source_type_outside_the_fixed_contract_is_refused(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    def relabel(doc: dict[str, Any]) -> None:
        doc["source_type"] = "raw_hf"
        for rec in doc["recordings"]:
            rec["source_type"] = "raw_hf"

    copy = _rewrite_evidence(mcap_evidence, tmp_path, relabel)
    with pytest.raises(FormatError, match="outside the fixed contract"):
        export_dataset(tmp_path / "staging", copy)


def test_a_truncated_recording_is_published_with_its_loss_in_the_audit(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    # Issue 4: a recorder crash is read up to the last complete message and the loss is
    # recorded in the audit, never hidden: follow it from ingest to the exported documents.
    data = recordings["protobuf"].read_bytes()
    cut = tmp_path / "crashed.mcap"
    cut.write_bytes(data[: len(data) * 9 // 10])
    evidence = build_evidence([cut], CONFIG, tmp_path / "evidence")
    root = tmp_path / "staging"
    export_dataset(root, evidence)
    ext = root / EXTENSIONS_DIR
    audit = json.loads((ext / "pipeline_audit.json").read_text())
    reasons = [r["reason"] for r in audit["rejections"] if r["subject"] == "crashed.mcap"]
    assert len(reasons) == 1
    assert reasons[0].startswith("truncated: ") and "messages salvaged" in reasons[0]
    validity = json.loads((ext / "validity.json").read_text())
    (observed,) = [r["observations"] for r in validity["recordings"]]
    assert observed["truncated"] is True
    assert "messages salvaged" in observed["truncation_detail"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("ego_translation", (0.0, float("inf"), 1.0), "ego translation must be finite"),
        ("ego_rotation", (0.0, 0.0, 0.0, 0.0), "ego rotation has zero length"),
        ("ego_rotation", (1.0, float("nan"), 0.0, 0.0), "ego rotation must be finite"),
    ],
)
def test_a_frame_pose_that_cannot_be_published_is_refused_naming_the_frame(
    mcap_evidence: Evidence, field: str, value: tuple[float, ...], message: str
) -> None:
    from dataset_devkit.nuscenes.export.tables import build_tables

    doc = mcap_evidence.document
    scene = next(s for s in doc.derived.scenes if s.scene_id in doc.derived.selected_scene_ids)
    frame = scene.frames[2]
    bad = msgspec.structs.replace(frame, **{field: value})
    frames = (*scene.frames[:2], bad, *scene.frames[3:])
    scenes = tuple(
        msgspec.structs.replace(s, frames=frames) if s is scene else s for s in doc.derived.scenes
    )
    poisoned = msgspec.structs.replace(
        doc, derived=msgspec.structs.replace(doc.derived, scenes=scenes)
    )
    where = rf"^scene mz-\w+-\d+ {frame.channel} frame {frame.timestamp_ns} {message}"
    with pytest.raises(FormatError, match=where):
        build_tables(poisoned)
    build_tables(doc)  # the evidence as it is builds
