"""A build over an uneven fleet: no bad drive sinks it, and nothing left out is silent."""

from __future__ import annotations

import contextlib
import io
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from dataset_devkit.nuscenes import (
    PipelineConfig,
    ScenarioConfig,
    SelectionRule,
    build_evidence,
    export_dataset,
)
from dataset_devkit.nuscenes.build.service import build_dataset
from dataset_devkit.nuscenes.config import load_build_config
from dataset_devkit.nuscenes.ingest import read_decoded
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_decoded, write_sample_mcap
from dataset_devkit.nuscenes.sdk import Dataset
from dataset_devkit.nuscenes.validation import validate_dataroot
from dataset_devkit.nuscenes.validation.summary import inspect_dataroot
from tests.cli_run import run_devkit
from tests.nuscenes.helpers import write_ros2_split

RIG3 = ("cam_front", "cam_back", "cam_front_left")
SMALL = SampleDrive(duration_s=6.0, fps=10.0, width=32, height=24)
LATER = 1_699_970_000_000_000_000


def _toml(base: Path, source_type: str, paths: list[str], rules: str = "") -> Path:
    listed = ", ".join(f'"{p}"' for p in paths)
    path = base / "build.toml"
    path.write_text(
        f'namespace = "fleet"\n[sources]\ntype = "{source_type}"\npaths = [{listed}]\n'
        f"[scenario]\nscene_duration_s = 2.0\nmin_scene_duration_s = 1.0\n{rules}"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        '[paths]\noutput_dir = "out"\n'
    )
    return path


def _cut_last_split(bag: Path, fraction: float) -> None:
    last = sorted(bag.glob("*.mcap"))[-1]
    data = last.read_bytes()
    last.write_bytes(data[: int(len(data) * fraction)])


@pytest.mark.needs("nuscenes")
def test_a_mixed_fleet_builds_names_every_loss_and_loads_in_the_official_loader(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    from nuscenes.nuscenes import NuScenes

    write_sample_mcap(tmp_path / "good-a.mcap", replace(SMALL, cameras=RIG3))
    write_sample_mcap(tmp_path / "good-b.mcap", replace(SMALL, cameras=RIG3, start_ns=LATER))
    # A 2-camera vehicle, and a drive whose 5 Hz camera never meets the 2 Hz grid.
    write_sample_mcap(tmp_path / "rig2.mcap", replace(SMALL, start_ns=LATER + 10**12))
    write_sample_mcap(tmp_path / "slow.mcap", replace(SMALL, fps=5.0, start_ns=LATER + 2 * 10**12))
    bag = write_ros2_split(
        tmp_path / "crashed-bag", replace(SMALL, cameras=RIG3, start_ns=LATER + 3 * 10**12)
    )
    _cut_last_split(bag, 0.6)
    paths = ["good-a.mcap", "good-b.mcap", "rig2.mcap", "slow.mcap", "crashed-bag"]
    done = run_devkit(package_env, "build", str(_toml(tmp_path, "mcap_hf", paths)))
    assert done.returncode == 0, done.stderr
    root = tmp_path / "out" / "v1.0-trainval"
    assert "warning: recording crashed-bag (crashed-bag) is truncated (crashed-bag_1.mcap: " in (
        done.stderr
    )
    assert "complete scenes before the cut kept" in done.stderr
    assert "dropped: recording slow (slow.mcap) contributes no scene: none of its 3 scene " in (
        done.stdout
    )
    for index in range(3):
        assert (
            f"dropped: scene window {index} of recording slow (slow.mcap) dropped: "
            "rule 0 require_valid: CAM_BACK misses" in done.stdout
        )

    recordings = json.loads((root / "mz_extensions" / "recordings.json").read_text())
    fate = {r["recording_id"]: (r["selected"], r["reason"]) for r in recordings["recordings"]}
    assert set(fate) == {"good-a", "good-b", "rig2", "slow", "crashed-bag"}
    assert all(fate[r] == (True, "") for r in ("good-a", "good-b", "rig2", "crashed-bag"))
    assert fate["slow"][0] is False and "3x rule 0 require_valid" in fate["slow"][1]
    crashed = next(r for r in recordings["recordings"] if r["recording_id"] == "crashed-bag")
    assert crashed["truncated"] and len(crashed["scene_tokens"]) >= 2

    ds = Dataset(root)
    channels = {}
    for scene in ds.table("scene"):
        log = ds.get("log", scene["log_token"])
        sample = ds.scene_samples(scene["token"])[0]
        channels[log["logfile"]] = {
            ds.get("calibrated_sensor", sd["calibrated_sensor_token"])["sensor_token"]
            for sd in ds.table("sample_data")
            if sd["sample_token"] == sample["token"]
        }
    assert len(channels["rig2.mcap"]) == 2 and len(channels["good-a.mcap"]) == 3
    with contextlib.redirect_stdout(io.StringIO()):
        nusc = NuScenes(version="v1.0-trainval", dataroot=str(root), verbose=False)
    assert len(nusc.scene) == len(ds.table("scene"))
    for sample in nusc.sample:
        names = {nusc.get("sample_data", t)["channel"] for t in sample["data"].values()}
        scene = nusc.get("scene", sample["scene_token"])
        logfile = nusc.get("log", scene["log_token"])["logfile"]
        assert len(names) == (2 if logfile == "rig2.mcap" else 3)
        for token in sample["data"].values():
            assert Path(nusc.get_sample_data_path(token)).is_file()

    summary = inspect_dataroot(root).to_json()
    assert summary["recordings"] == 5 and summary["recordings_selected"] == 4
    assert any("crashed-bag" in w and "truncated" in w for w in summary["warnings"])
    assert any(
        d.startswith("recording slow (slow.mcap) contributes no scene") for d in summary["dropped"]
    )
    table = run_devkit(
        package_env, "inspect", "--dataroot", str(root), "--version", "v1.0-trainval"
    )
    assert table.returncode == 0 and "warning: recording crashed-bag" in table.stdout


def _build(tmp_path: Path, recordings: list[Path], rules: tuple[SelectionRule, ...]) -> Path:
    config = PipelineConfig(
        namespace="fleet",
        scenario=ScenarioConfig(scene_duration_s=2.0, min_scene_duration_s=1.0, rules=rules),
    )
    tmp_path.mkdir(exist_ok=True)
    evidence = build_evidence(recordings, config, tmp_path / "evidence")
    export_dataset(tmp_path / "staging", evidence, config=config)
    return tmp_path / "staging"


def test_recordings_without_a_selected_scene_are_listed_with_their_fate(tmp_path: Path) -> None:
    a = write_sample_mcap(tmp_path / "a.mcap", SMALL)
    b = write_sample_mcap(tmp_path / "b.mcap", replace(SMALL, start_ns=LATER))
    rules = (SelectionRule(kind="require_valid"), SelectionRule(kind="max_scenes", value=3))
    staging = _build(tmp_path, [a, b], rules)
    report = validate_dataroot(staging, state="staging")
    assert report.issues == ()
    recordings = report.extensions.get("recordings.json").recordings
    assert [(r.recording_id, r.selected) for r in recordings] == [("a", True), ("b", False)]
    assert recordings[1].reason == "none of its 3 scene windows was selected: 3x rule 1 max_scenes"
    assert recordings[1].log_token == "" and recordings[1].scene_tokens == ()
    sdk = Dataset(staging)
    assert [r["selected"] for r in sdk.recordings()] == [True, False]


def test_rigs_with_different_cameras_combine_and_required_cameras_drop_with_a_reason(
    tmp_path: Path,
) -> None:
    three = write_sample_mcap(tmp_path / "three.mcap", replace(SMALL, cameras=RIG3))
    two = write_sample_mcap(tmp_path / "two.mcap", replace(SMALL, start_ns=LATER))
    staging = _build(tmp_path / "mixed", [three, two], (SelectionRule(kind="require_valid"),))
    report = validate_dataroot(staging, state="staging")
    assert report.issues == ()
    rules = (
        SelectionRule(kind="require_valid"),
        SelectionRule(kind="require_cameras", value="CAM_FRONT_LEFT"),
    )
    staging = _build(tmp_path / "required", [three, two], rules)
    report = validate_dataroot(staging, state="staging")
    assert report.issues == ()
    audit = report.extensions.get("pipeline_audit.json")
    two_digest = next(
        r.source_digest
        for r in report.extensions.get("recordings.json").recordings
        if r.recording_id == "two"
    )
    entries = next(c for c in audit.chronology if c.source_digest == two_digest).entries
    assert [e.reason for e in entries] == [
        "rule 1 require_cameras: its recording has no CAM_FRONT_LEFT"
    ] * 3


@pytest.mark.needs("nuscenes")
def test_a_damaged_video_packet_publishes_its_frames_as_invalid_never_as_good(
    tmp_path: Path,
) -> None:
    drive = write_sample_decoded(
        tmp_path / "drive", SampleDrive(duration_s=12.0, width=64, height=48)
    )
    video = drive / "cam_front.mp4"
    data = bytearray(video.read_bytes())
    at = int(len(data) * 0.3)
    data[at : at + 48] = random.Random(0).randbytes(48)  # 48 bytes at 30% of one camera
    video.write_bytes(bytes(data))
    config = load_build_config(_toml(tmp_path, "decoded_hf", ["drive"]))
    result = build_dataset(config)
    assert any("invalid video frames, never exported" in w for w in result.warnings)
    validity = json.loads((result.dataroot / "mz_extensions" / "validity.json").read_text())
    obs = validity["recordings"][0]["observations"]
    assert obs["invalid_frames"]["cam_front"] >= 2
    assert "decoder concealed damaged data" in " ".join(obs["invalid_frame_detail"])
    windows = validity["recordings"][0]["scene_windows"]
    hit = [w for w in windows if any("frames in the window are invalid" in r for r in w["reasons"])]
    assert hit and not any(w["valid"] for w in hit)
    audit = json.loads((result.dataroot / "mz_extensions" / "pipeline_audit.json").read_text())
    assert any("invalid: decoder concealed" in f["reason"] for f in audit["filtering"])
    (front,) = [c for c in read_decoded(drive).cameras if c.source_name == "cam_front"]
    bad = {t // 1000 for t, _ in front.invalid_frames}
    assert len(bad) == obs["invalid_frames"]["cam_front"]
    ds = Dataset(result.dataroot)
    exported = {sd["timestamp"] for sd in ds.table("sample_data") if "CAM_FRONT/" in sd["filename"]}
    assert exported and not bad & exported
