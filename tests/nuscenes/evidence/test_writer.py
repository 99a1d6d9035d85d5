"""build_evidence / read_evidence: immutable evidence with a manifest and fingerprints."""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dataset_devkit.errors import (
    ConfigError,
    DestinationExistsError,
    FormatError,
    MissingPathError,
    UnsafePathError,
    VerificationFailed,
)
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, verify_tree
from dataset_devkit.nuscenes import PipelineConfig, build_evidence, export_dataset, read_evidence
from dataset_devkit.nuscenes.evidence import Evidence, config_fingerprint
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap
from dataset_devkit.nuscenes.spec import ImageConfig
from tests.nuscenes.helpers import CONFIG, DRIVE, rewrite_mcap


def test_evidence_is_a_verified_tree_with_config_fingerprint(mcap_evidence: Evidence) -> None:
    assert verify_tree(mcap_evidence.root).ok
    doc = mcap_evidence.document
    assert doc.namespace == CONFIG.namespace
    assert doc.config == CONFIG
    assert doc.config_fingerprint == config_fingerprint(CONFIG)
    assert doc.channel_mapping == {"cam_back": "CAM_BACK", "cam_front": "CAM_FRONT"}
    selected = set(doc.derived.selected_scene_ids)
    assert len(selected) == 3
    assert len(doc.images) == sum(
        len(s.frames) for s in doc.derived.scenes if s.scene_id in selected
    )
    assert {s.split for s in doc.derived.splits} <= {"train", "test"}


def test_evidence_is_written_once(tmp_path: Path, recordings: dict[str, Path]) -> None:
    out = tmp_path / "evidence"
    out.mkdir()
    with pytest.raises(DestinationExistsError):
        build_evidence([recordings["json"]], CONFIG, out)


def test_json_and_protobuf_recordings_build_the_same_scene_graph(
    tmp_path: Path, recordings: dict[str, Path], mcap_evidence: Evidence
) -> None:
    other = build_evidence([recordings["json"]], CONFIG, tmp_path / "ev")
    a, b = mcap_evidence.document.derived, other.document.derived
    assert [s.grid_timestamps_ns for s in a.scenes] == [s.grid_timestamps_ns for s in b.scenes]
    assert [len(s.frames) for s in a.scenes] == [len(s.frames) for s in b.scenes]


def test_tampered_evidence_is_refused_on_read(tmp_path: Path, recordings: dict[str, Path]) -> None:
    ev = build_evidence([recordings["json"]], CONFIG, tmp_path / "ev")
    frame = ev.root / ev.document.images[0].path
    frame.chmod(0o644)
    frame.write_bytes(frame.read_bytes()[:-1] + b"\x00")
    with pytest.raises(VerificationFailed, match="does not match its content manifest"):
        read_evidence(ev.root)


def test_evidence_json_with_a_wrong_config_fingerprint_is_refused(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    ev = build_evidence([recordings["json"]], CONFIG, tmp_path / "ev")
    path = ev.root / "evidence.json"
    doc = json.loads(path.read_text())
    doc["config"]["scenario"]["scene_duration_s"] = 3.0
    path.write_text(json.dumps(doc))
    (ev.root / CONTENT_MANIFEST_NAME).unlink()
    from dataset_devkit.integrity import write_manifest

    write_manifest(ev.root)
    with pytest.raises(FormatError, match="config fingerprint"):
        read_evidence(ev.root)


def test_mixed_source_types_are_refused(tmp_path: Path, recordings: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match="one source type"):
        build_evidence([recordings["json"], recordings["decoded"]], CONFIG, tmp_path / "ev")


def test_the_same_recording_twice_is_refused_saying_how_to_fix_it(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    copy = tmp_path / "copy.mcap"
    copy.write_bytes(recordings["json"].read_bytes())
    for paths in ([recordings["json"], recordings["json"]], [recordings["json"], copy]):
        with pytest.raises(ConfigError, match="the same drive is listed twice") as info:
            build_evidence(paths, CONFIG, tmp_path / "ev")
        assert f"recordings {paths[0]} and {paths[1]} have the same content" in str(info.value)
        assert "remove one of them from sources.paths" in str(info.value)
        assert not (tmp_path / "ev").exists()


def test_recordings_of_different_sizes_are_not_hashed_again_to_compare_content(
    tmp_path: Path, recordings: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.nuscenes.evidence import inputs
    from dataset_devkit.nuscenes.ingest.source import content_sha256

    hashed: list[object] = []

    def counted(members: Any) -> str:
        hashed.append(members)
        return content_sha256(members)

    monkeypatch.setattr(inputs, "content_sha256", counted)
    later = dataclasses.replace(DRIVE, start_ns=DRIVE.start_ns + 10**12, duration_s=3.0)
    other = write_sample_mcap(tmp_path / "other.mcap", later, encoding="json")
    build_evidence([recordings["json"], other], CONFIG, tmp_path / "ev")
    assert hashed == []  # copies have equal sizes: these cannot be one drive
    copy = tmp_path / "copy.mcap"
    copy.write_bytes(recordings["json"].read_bytes())
    with pytest.raises(ConfigError, match="the same drive is listed twice"):
        build_evidence([recordings["json"], copy], CONFIG, tmp_path / "ev2")
    assert len(hashed) == 2


def test_different_drives_with_the_same_file_name_are_both_kept(tmp_path: Path) -> None:
    for car in ("car1", "car2"):
        (tmp_path / car).mkdir()
    a = write_sample_mcap(tmp_path / "car1" / "rec.mcap", DRIVE, encoding="json")
    later = dataclasses.replace(DRIVE, start_ns=DRIVE.start_ns + 10**12)
    b = write_sample_mcap(tmp_path / "car2" / "rec.mcap", later, encoding="json")
    evidence = build_evidence([a, b], CONFIG, tmp_path / "ev")
    ids = sorted(r.recording_id for r in evidence.document.recordings)
    assert len(ids) == 2 and all(i.startswith("rec-") and len(i) == 16 for i in ids)
    assert len({r.source_digest.split("#")[0] for r in evidence.document.recordings}) == 2


def test_different_drives_with_the_same_recorded_id_are_refused_naming_both(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    a = rewrite_mcap(recordings["json"], tmp_path / "a.mcap", metadata={"recording_id": "d1"})
    later = dataclasses.replace(DRIVE, start_ns=DRIVE.start_ns + 10**12)
    other = write_sample_mcap(tmp_path / "other.mcap", later, encoding="json")
    b = rewrite_mcap(other, tmp_path / "b.mcap", metadata={"recording_id": "d1"})
    with pytest.raises(ConfigError, match="different drives with the same recording_id 'd1'"):
        build_evidence([a, b], CONFIG, tmp_path / "ev")


def test_camera_names_that_normalize_to_one_channel_are_refused(tmp_path: Path) -> None:
    drive = SampleDrive(cameras=("cam_front", "camera-front"), duration_s=2.0, width=16, height=8)
    path = write_sample_mcap(tmp_path / "clash.mcap", drive, encoding="json")
    with pytest.raises(
        FormatError,
        match=r"'cam.*front' and 'cam.*front' both normalize to CAM_FRONT",
    ):
        build_evidence([path], CONFIG, tmp_path / "ev")
    assert not (tmp_path / "ev").exists()


def test_jpeg_quality_other_than_95_is_a_config_error(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = PipelineConfig(namespace="x", image=ImageConfig(jpeg_quality=90))
    with pytest.raises(ConfigError) as info:
        build_evidence([recordings["json"]], bad, tmp_path / "ev")
    assert info.value.key == "image.jpeg_quality"


def test_labels_are_imported_and_checked(tmp_path: Path, recordings: dict[str, Path]) -> None:
    start = DRIVE.start_ns
    labels = tmp_path / "labels.json"
    labels.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "labels": [
                    {
                        "id": "l1",
                        "recording_id": "drive-json",
                        "label": "rain",
                        "start_ns": start,
                        "end_ns": start + 1_000_000_000,
                        "attributes": {"intensity": "light"},
                    }
                ],
            }
        )
    )
    ev = build_evidence([recordings["json"]], CONFIG, tmp_path / "ev", labels=labels)
    assert [r.label for r in ev.document.labels] == ["rain"]
    assert ev.document.label_file_name == "labels.json"
    labels.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "labels": [
                    {
                        "id": "l1",
                        "recording_id": "nope",
                        "label": "rain",
                        "start_ns": 0,
                        "end_ns": 1,
                    }
                ],
            }
        )
    )
    with pytest.raises(
        FormatError, match=r"labels\[0\].recording_id: label 'l1' names unknown recording 'nope'"
    ):
        build_evidence([recordings["json"]], CONFIG, tmp_path / "ev2", labels=labels)


def test_the_same_recordings_and_config_give_the_same_evidence_hash(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    a = build_evidence([recordings["ros2"]], CONFIG, tmp_path / "a")
    b = build_evidence([recordings["ros2"]], CONFIG, tmp_path / "b")
    assert a.root_sha256 == b.root_sha256
    assert (a.root / "evidence.json").read_bytes() == (b.root / "evidence.json").read_bytes()


def test_a_build_failing_while_storing_frames_leaves_no_evidence(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    class Interrupted(Exception):
        pass

    def progress(stage: str, done: int, _total: int) -> None:
        if stage == "frames" and done == 3:
            raise Interrupted  # a failure midway through storing frames

    with pytest.raises(Interrupted):
        build_evidence([recordings["decoded"]], CONFIG, tmp_path / "ev", progress=progress)
    assert not (tmp_path / "ev").exists()


def test_the_mcap_vehicle_frame_comes_from_the_ingest_config(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    from dataset_devkit.nuscenes import IngestConfig

    config = PipelineConfig(
        namespace="x", scenario=CONFIG.scenario, ingest=IngestConfig(vehicle_frame="chassis")
    )
    with pytest.raises(FormatError, match="not reachable from 'chassis'"):
        build_evidence([recordings["json"]], config, tmp_path / "ev")


def test_camera_times_spanning_more_than_a_day_are_refused_before_any_window_is_cut(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    folder = tmp_path / "gap"
    shutil.copytree(recordings["decoded"], folder)
    doc = json.loads((folder / "recording.json").read_text())
    doc["cameras"][0]["timestamps_ns"][-1] = 9 * 10**18  # a stray stamp: 285 years later
    (folder / "recording.json").write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"camera frames span .* more than the 24 h") as info:
        build_evidence([folder], CONFIG, tmp_path / "evidence")
    assert str(folder) in str(info.value)
    assert not (tmp_path / "evidence").exists()


def test_a_missing_or_symlinked_recording_or_label_file_is_named_as_such(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    link = tmp_path / "link.mcap"
    link.symlink_to(recordings["protobuf"])
    cases = [
        ([tmp_path / "absent"], None, MissingPathError, "absent: recording not found"),
        ([link], None, UnsafePathError, "link.mcap: recording is a symlink"),
        (
            [recordings["protobuf"]],
            tmp_path / "labels.json",
            MissingPathError,
            "labels.json: label file not found",
        ),
    ]
    for paths, labels, kind, message in cases:
        with pytest.raises(kind, match=message):
            build_evidence(paths, CONFIG, tmp_path / "evidence", labels=labels)
        assert not (tmp_path / "evidence").exists()


def test_a_label_time_beyond_int64_is_refused_naming_the_label(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    labels = tmp_path / "labels.json"
    row = {"id": "l1", "recording_id": "drive-json", "label": "rain"}
    labels.write_text(
        json.dumps({"schema_version": 1, "labels": [{**row, "start_ns": 0, "end_ns": 10**30}]})
    )
    with pytest.raises(FormatError, match=r"labels\[0\]: label 'l1' needs .* <= 2\*\*63 - 1"):
        build_evidence([recordings["json"]], CONFIG, tmp_path / "ev", labels=labels)
    assert not (tmp_path / "ev").exists()


@pytest.mark.parametrize(
    ("recordings_arg", "config", "out", "labels", "key"),
    [
        ("drive.mcap", CONFIG, "ev", None, "recordings"),
        ([3], CONFIG, "ev", None, "recordings[0]"),
        (None, {"namespace": "x"}, "ev", None, "config"),
        (None, CONFIG, 3, None, "out"),
        (None, CONFIG, "ev", 3, "labels"),
    ],
)
def test_a_wrong_argument_is_a_config_error_naming_it(
    tmp_path: Path,
    recordings: dict[str, Path],
    recordings_arg: object,
    config: object,
    out: object,
    labels: object,
    key: str,
) -> None:
    paths = [recordings["protobuf"]] if recordings_arg is None else recordings_arg
    target = tmp_path / out if isinstance(out, str) else out
    with pytest.raises(ConfigError) as info:
        build_evidence(paths, config, target, labels=labels)  # type: ignore[arg-type]
    assert info.value.key == key and str(info.value).startswith(key)
    assert not (tmp_path / "ev").exists()


def test_a_key_frame_that_does_not_decode_names_the_recording_path(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    cut = False

    def cut_first_image(name: str, data: bytes) -> bytes:
        nonlocal cut
        if name != "foxglove.CompressedImage" or cut:
            return data
        doc = json.loads(data)
        jpeg = base64.b64decode(doc["data"])
        # cut inside the entropy-coded data: the headers read, the frame does not decode
        # (a cut before the scan header is refused earlier, by the header parse at ingest)
        scan = jpeg.index(b"\xff\xda") + 20
        doc["data"] = base64.b64encode(jpeg[: scan + (len(jpeg) - scan) // 2]).decode()
        cut = True
        return json.dumps(doc).encode()

    bad = rewrite_mcap(recordings["json"], tmp_path / "cut-jpeg.mcap", cut_first_image)
    with pytest.raises(
        FormatError,
        match=r"camera 'cam_\w+' \(topic '/cam_\w+/image'\) frame \d+ does not decode",
    ) as info:
        build_evidence([bad], CONFIG, tmp_path / "ev")
    assert str(info.value).startswith(f"{bad}: camera"), info.value
    assert not (tmp_path / "ev").exists()


def test_gnss_fixes_far_from_the_ego_poses_make_their_windows_invalid(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    shifted = tmp_path / "shifted"
    shutil.copytree(recordings["decoded"], shifted)
    doc = json.loads((shifted / "recording.json").read_text())
    for fix in doc["gnss"]:
        fix["latitude_deg"] += 0.05  # about 5.6 km north of where the poses put the car
    (shifted / "recording.json").write_text(json.dumps(doc))
    good = build_evidence([recordings["decoded"]], CONFIG, tmp_path / "good")
    assert any(s.valid for s in good.document.derived.scenes)
    bad = build_evidence([shifted], CONFIG, tmp_path / "bad")
    for scene in bad.document.derived.scenes:
        assert not scene.valid
        assert any(
            r.startswith("GNSS fixes lie up to 556") and "gnss_pose_tolerance_m=10.0" in r
            for r in scene.reasons
        ), scene.reasons
    with pytest.raises(FormatError, match=r"selects no scene.*GNSS fixes lie up to"):
        export_dataset(tmp_path / "staging", bad)
    # The tolerance is the config's: a generous one accepts the same recording.
    loose = PipelineConfig(
        namespace=CONFIG.namespace,
        scenario=msgspec.structs.replace(CONFIG.scenario, gnss_pose_tolerance_m=10_000.0),
        split=CONFIG.split,
    )
    accepted = build_evidence([shifted], loose, tmp_path / "loose")
    assert [s.valid for s in accepted.document.derived.scenes] == [
        s.valid for s in good.document.derived.scenes
    ]


def test_vehicles_may_name_the_same_camera_differently(tmp_path: Path) -> None:
    a = write_sample_mcap(tmp_path / "a.mcap", DRIVE, encoding="json")
    later = dataclasses.replace(DRIVE, cameras=("CAM-FRONT", "Cam Back"), start_ns=2 * 10**18)
    b = write_sample_mcap(tmp_path / "b.mcap", later, encoding="json")
    evidence = build_evidence([a, b], CONFIG, tmp_path / "ev")
    assert evidence.document.channel_mapping == {
        "CAM-FRONT": "CAM_FRONT",
        "Cam Back": "CAM_BACK",
        "cam_back": "CAM_BACK",
        "cam_front": "CAM_FRONT",
    }
    from dataset_devkit.nuscenes.validation import validate_dataroot

    export_dataset(tmp_path / "staging", evidence)
    assert validate_dataroot(tmp_path / "staging", state="staging").issues == ()


def test_whole_numbers_for_float_settings_give_readable_evidence(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    from dataset_devkit.nuscenes import ScenarioConfig

    config = PipelineConfig(
        namespace="x", scenario=ScenarioConfig(scene_duration_s=2, min_scene_duration_s=1)
    )
    evidence = build_evidence([recordings["json"]], config, tmp_path / "ev")
    assert evidence.document.config.scenario.scene_duration_s == 2.0
    export_dataset(tmp_path / "staging", evidence, config=config)
