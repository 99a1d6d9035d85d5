"""End to end: recordings written by the real writers -> build -> published dataroot,
opened by our SDK and by the official nuScenes loader."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from dataset_devkit.errors import ConfigError, DestinationExistsError
from dataset_devkit.nuscenes.build.service import BuildResult, build_dataset
from dataset_devkit.nuscenes.config import BuildConfig, load_build_config
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_decoded, write_sample_mcap
from dataset_devkit.nuscenes.sdk.dataset import Dataset
from dataset_devkit.nuscenes.validation.dataroot import validate_dataroot
from dataset_devkit.nuscenes.validation.summary import inspect_dataroot

#: Every build publishes, and publishing checks the dataroot with the official loader.
pytestmark = pytest.mark.needs("nuscenes")

DRIVE = SampleDrive(duration_s=12.0)


def write_config(base: Path, source_type: str, recordings: list[str], output: str) -> Path:
    paths = ", ".join(f'"{r}"' for r in recordings)
    text = f"""
namespace = "e2e-test"

[sources]
type = "{source_type}"
paths = [{paths}]

[scenario]
scene_duration_s = 5.0

[split]
test_fraction = 0.5

[image]
jpeg_quality = 95

[publication]
version = "v1.0-trainval"
refuse_overwrite = true

[paths]
output_dir = "{output}"
"""
    path = base / f"{output}.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def mcap_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[BuildConfig, BuildResult]:
    base = tmp_path_factory.mktemp("mcap")
    write_sample_mcap(base / "drive.mcap", DRIVE)
    config = load_build_config(write_config(base, "mcap_hf", ["drive.mcap"], "out"))
    stages: list[str] = []
    result = build_dataset(config, progress=lambda stage, done, total: stages.append(stage))
    assert {"ingest", "images", "check-images", "official-loader", "hash"} <= set(stages)
    return config, result


def test_an_mcap_build_publishes_a_dataroot_both_readers_open(
    mcap_build: tuple[BuildConfig, BuildResult],
) -> None:
    from nuscenes.nuscenes import NuScenes

    config, result = mcap_build
    assert result.dataroot == config.output_dir / "v1.0-trainval"
    assert validate_dataroot(result.dataroot).root_sha256 == result.root_sha256
    ds = Dataset(result.dataroot)
    with contextlib.redirect_stdout(io.StringIO()):
        nusc = NuScenes(version="v1.0-trainval", dataroot=str(result.dataroot), verbose=False)
    assert len(nusc.scene) == len(ds.table("scene")) == result.scenes >= 2
    for scene in ds.table("scene"):
        samples = ds.scene_samples(scene["token"])
        first = nusc.get("sample", scene["first_sample_token"])
        for channel in ds.channels:
            row = ds.camera(samples[0]["token"], channel)
            assert first["data"][channel] == row["token"]
            with Image.open(nusc.get_sample_data_path(row["token"])) as img:
                assert img.size == (row["width"], row["height"])
    assert ds.source_metadata()["source_type"] == "mcap_hf"
    assert ds.validation_report()["state"] == "passed"
    assert set(ds.scenes_in_split("train")) | set(ds.scenes_in_split("test")) == {
        s["token"] for s in ds.table("scene")
    }


def test_the_same_inputs_build_the_same_root_hash(
    mcap_build: tuple[BuildConfig, BuildResult], tmp_path: Path
) -> None:
    config, result = mcap_build
    base = config.output_dir.parent
    again = load_build_config(write_config(base, "mcap_hf", ["drive.mcap"], "again"))
    assert build_dataset(again).root_sha256 == result.root_sha256


def test_a_rebuild_into_an_existing_destination_is_refused(
    mcap_build: tuple[BuildConfig, BuildResult],
) -> None:
    config, result = mcap_build
    with pytest.raises(DestinationExistsError):
        build_dataset(config)
    assert validate_dataroot(result.dataroot).ok
    assert not [p for p in config.output_dir.iterdir() if ".staging-" in p.name]


def test_a_decoded_build_with_sweeps_and_labels_meets_the_contract(tmp_path: Path) -> None:
    write_sample_decoded(tmp_path / "drive", DRIVE, recording_id="drive-decoded")
    label = {
        "id": "lbl-1",
        "recording_id": "drive-decoded",
        "label": "rain",
        "start_ns": DRIVE.start_ns + 1_000_000_000,
        "end_ns": DRIVE.start_ns + 3_000_000_000,
        "attributes": {"intensity": "light"},
    }
    (tmp_path / "labels.json").write_text(json.dumps({"schema_version": 1, "labels": [label]}))
    path = write_config(tmp_path, "decoded_hf", ["drive"], "out")
    text = path.read_text().replace("[sources]", "[export]\ninclude_sweeps = true\n[sources]")
    path.write_text(text.replace('paths = ["drive"]', 'paths = ["drive"]\nlabels = "labels.json"'))
    result = build_dataset(load_build_config(path))
    summary = inspect_dataroot(result.dataroot).to_json()
    assert (summary["source_type"], summary["privacy"], summary["pose_frame"]) == (
        "decoded_hf",
        "privacy_transformed",
        "recording_local_enu_v1",
    )
    assert summary["images"]["sweeps"] > 0
    ds = Dataset(result.dataroot)
    first = ds.table("scene")[0]["token"]
    assert [a["annotation_id"] for a in ds.annotations(first)] == ["lbl-1"]
    sweep = next(sd for sd in ds.table("sample_data") if not sd["is_key_frame"])
    assert sweep["filename"].startswith("sweeps/CAM_") and ds.image_path(sweep["token"]).is_file()
    rows = ds.gnss()["rows"]
    assert rows and all(isinstance(r["published_east_m"], int) for r in rows)
    pose = ds.ego_pose(rows[0]["sample_data_token"])
    assert rows[0]["translation_xyz_m"] == pose["translation"]


def test_reused_evidence_of_other_recordings_or_labels_is_refused_not_republished(
    mcap_build: tuple[BuildConfig, BuildResult], tmp_path: Path
) -> None:
    config, _ = mcap_build
    base = config.output_dir.parent
    other = write_sample_mcap(tmp_path / "other.mcap", SampleDrive(duration_s=6.0, speed_mps=3.0))
    reuse = load_build_config(write_config(base, "mcap_hf", ["drive.mcap", str(other)], "reuse"))
    shared = dataclasses.replace(reuse, evidence_dir=config.evidence_dir)
    with pytest.raises(ConfigError, match="built from other recordings") as info:
        build_dataset(shared)
    assert info.value.key == "sources.paths"
    assert str(config.evidence_dir) in str(info.value)
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"schema_version": 1, "labels": []}))
    same = load_build_config(write_config(base, "mcap_hf", ["drive.mcap"], "labelled"))
    labelled = dataclasses.replace(
        same,
        evidence_dir=config.evidence_dir,
        sources=dataclasses.replace(same.sources, labels=labels),
    )
    with pytest.raises(ConfigError, match="another label file") as info:
        build_dataset(labelled)
    assert info.value.key == "sources.labels"
    for name in ("reuse", "labelled"):
        assert not (base / name / "v1.0-trainval").exists()


def test_evidence_left_by_a_killed_build_is_named_with_what_to_do(
    mcap_build: tuple[BuildConfig, BuildResult],
) -> None:
    config, _ = mcap_build
    base = config.output_dir.parent
    killed = load_build_config(write_config(base, "mcap_hf", ["drive.mcap"], "killed"))
    (killed.evidence_dir / "frames").mkdir(parents=True)  # no content manifest: killed midway
    with pytest.raises(ConfigError, match="exists but is not evidence") as info:
        build_dataset(killed)
    assert info.value.key == "paths.evidence_dir"
    assert not killed.final_dataroot.exists()
