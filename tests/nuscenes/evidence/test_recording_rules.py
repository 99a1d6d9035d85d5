"""Selection rules scoped to some recordings (``recordings = ["van-*"]``): per-recording
required cameras, with the dropped scenes' reasons in the audit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig, SelectionRule
from dataset_devkit.nuscenes.build.service import build_dataset
from dataset_devkit.nuscenes.common.tokens import encode_canonical
from dataset_devkit.nuscenes.config import load_build_config
from dataset_devkit.nuscenes.evidence import derive, read_evidence
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap

SMALL = SampleDrive(duration_s=6.0, fps=10.0, width=32, height=24)
RIG3 = ("cam_front", "cam_back", "cam_front_left")
LATER = 1_699_970_000_000_000_000
THREE = "CAM_BACK,CAM_FRONT,CAM_FRONT_LEFT"


def _toml(base: Path, rules: str, out: str = "out") -> Path:
    path = base / f"{out}.toml"
    path.write_text(
        'namespace = "fleet"\n[sources]\ntype = "mcap_hf"\n'
        'paths = ["van-a.mcap", "van-b.mcap", "car-c.mcap"]\n'
        f"[scenario]\nscene_duration_s = 2.0\nmin_scene_duration_s = 1.0\nrules = {rules}\n"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        f'[paths]\noutput_dir = "{out}"\n[executor]\nworkers = 1\n'
    )
    return path


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rules")
    write_sample_mcap(folder / "van-a.mcap", replace(SMALL, cameras=RIG3))
    write_sample_mcap(folder / "van-b.mcap", replace(SMALL, cameras=RIG3, start_ns=LATER))
    write_sample_mcap(folder / "car-c.mcap", replace(SMALL, start_ns=LATER + 10**12))
    return folder


@pytest.mark.needs("nuscenes")
def test_required_cameras_per_recording_drop_only_that_recordings_scenes(fleet: Path) -> None:
    # The vans must carry three cameras; the car's rig has two and is not held to it.
    rules = f'[{{kind = "require_cameras", value = "{THREE}", recordings = ["van-*"]}}]'
    kept = build_dataset(load_build_config(_toml(fleet, rules, "vans")))
    assert kept.scenes == 9 and kept.dropped == ()

    # Held to it, the car's scenes are dropped with the rule and its scope as the reason.
    rules = f'[{{kind = "require_cameras", value = "{THREE}", recordings = ["car-c"]}}]'
    result = build_dataset(load_build_config(_toml(fleet, rules, "car")))
    reason = "rule 0 require_cameras (recordings car-c): its recording has no CAM_FRONT_LEFT"
    assert result.scenes == 6
    ext = result.dataroot / "mz_extensions"
    audit = json.loads((ext / "pipeline_audit.json").read_text())
    recordings = json.loads((ext / "recordings.json").read_text())["recordings"]
    car = next(r for r in recordings if r["recording_id"] == "car-c")
    assert car["selected"] is False and reason in car["reason"]
    entries = next(c for c in audit["chronology"] if c["source_digest"] == car["source_digest"])
    assert [e["reason"] for e in entries["entries"]] == [reason] * 3
    assert audit["selection"][0]["rule"]["recordings"] == ["car-c"]
    windows = [line for line in result.dropped if line.startswith("scene window")]
    assert len(windows) == 3 and all(line.endswith(f"dropped: {reason}") for line in windows)
    assert any(line.startswith("recording car-c") for line in result.dropped)


@pytest.mark.needs("nuscenes")
def test_a_scoped_max_scenes_caps_only_the_matching_recordings(fleet: Path) -> None:
    evidence = read_evidence(fleet / "car" / "evidence")
    rules = (SelectionRule(kind="max_scenes", value=1, recordings=("van-*",)),)
    config = PipelineConfig(
        namespace="fleet",
        scenario=ScenarioConfig(scene_duration_s=2.0, min_scene_duration_s=1.0, rules=rules),
    )
    derived = derive(evidence.document.recordings, config)
    by_recording = {r.source_digest: r.recording_id for r in evidence.document.recordings}
    selected = [
        by_recording[s.source_digest]
        for s in derived.scenes
        if s.scene_id in derived.selected_scene_ids
    ]
    assert sorted(selected) == ["car-c", "car-c", "car-c", "van-a"]
    assert set(derived.rejected_by.values()) == {"rule 0 max_scenes (recordings van-*)"}


@pytest.mark.parametrize(
    ("recordings", "message"),
    [
        ("[]", "expected a non-empty list of recording ids or shell patterns"),
        ('[" "]', "expected a non-empty list of recording ids or shell patterns"),
        ('"van-*"', "Expected `array`, got `str`"),
    ],
)
def test_a_bad_recordings_scope_is_refused_when_the_config_is_read(
    fleet: Path, recordings: str, message: str
) -> None:
    rules = f'[{{kind = "min_samples", value = 1, recordings = {recordings}}}]'
    with pytest.raises(ConfigError, match=r"scenario\.rules") as caught:
        load_build_config(_toml(fleet, rules, "never"))
    assert message in str(caught.value)


@pytest.mark.needs("nuscenes")
def test_a_pattern_matching_no_recording_is_refused_naming_the_ids(fleet: Path) -> None:
    rules = f'[{{kind = "require_cameras", value = "{THREE}", recordings = ["vn-*"]}}]'
    with pytest.raises(ConfigError) as caught:
        build_dataset(load_build_config(_toml(fleet, rules, "typo")))
    assert caught.value.key == "scenario.rules[0].recordings"
    assert str(caught.value) == (
        "scenario.rules[0].recordings: 'vn-*' matches no recording of this build "
        "(recording ids: car-c, van-a, van-b)"
    )
    assert not (fleet / "typo" / "v1.0-trainval").exists()


def test_an_unscoped_rule_encodes_as_before() -> None:
    """Configs without a scope keep their fingerprint, so published root hashes stay."""
    assert encode_canonical(SelectionRule(kind="require_valid")) == (
        b'{"kind":"require_valid","value":null}'
    )
    scoped = SelectionRule(kind="min_samples", value=2, recordings=("a",))
    assert msgspec.json.decode(encode_canonical(scoped), type=SelectionRule) == scoped
