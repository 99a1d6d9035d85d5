"""The TOML build config: the documented example parses; the v1 contract is enforced by key."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes import config as config_module
from dataset_devkit.nuscenes.build.service import build_dataset
from dataset_devkit.nuscenes.config import load_build_config

BASE = """
namespace = "fleet"
[sources]
type = "mcap_hf"
paths = ["drives/a.mcap"]
[publication]
version = "v1.0-trainval"
refuse_overwrite = true
[paths]
output_dir = "out"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "build.toml"
    path.write_text(text)
    return path


def test_the_documented_example_parses(tmp_path: Path) -> None:
    doc = config_module.__doc__ or ""
    example = "\n".join(
        line[4:] for line in doc.split("::", 1)[1].split("Any unknown key")[0].splitlines()
    )
    config = load_build_config(write(tmp_path, example))
    assert config.pipeline.namespace == "fleet-a-2026"
    assert [r.kind for r in config.pipeline.scenario.rules] == ["require_valid", "max_scenes"]
    assert config.pipeline.ingest.vehicle_frame == "base_link"
    assert config.sources.labels == tmp_path / "labels.json"
    assert config.final_dataroot == tmp_path / "out" / "v1.0-trainval"
    assert config.evidence_dir == tmp_path / "out" / "evidence"


def test_relative_paths_resolve_against_the_config_file(tmp_path: Path) -> None:
    config = load_build_config(write(tmp_path, BASE))
    assert config.sources.paths == (tmp_path / "drives" / "a.mcap",)
    assert config.output_dir == tmp_path / "out"
    assert config.pipeline.image.jpeg_quality == 95


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('version = "v1.0-trainval"', 'version = "v1.0-mini"', "publication.version"),
        ("refuse_overwrite = true", "refuse_overwrite = false", "publication.refuse_overwrite"),
        ("[paths]", "[image]\njpeg_quality = 90\n[paths]", "image.jpeg_quality"),
        ("[paths]", "[scenario]\nscene_duration_s = 'long'\n[paths]", "scenario.scene_duration_s"),
        ("[paths]", "[scenario]\nrules = [{kind = 'bogus'}]\n[paths]", "scenario.rules.0.kind"),
        ('type = "mcap_hf"', 'type = "rosbag"', "sources.type"),
        ('output_dir = "out"', 'output_dir = "out"\ncolour = 1', "paths.colour"),
        ('output_dir = "out"', 'output_dir = ""', "paths.output_dir"),
        ('output_dir = "out"', 'output_dir = "out"\nevidence_dir = " "', "paths.evidence_dir"),
        ('paths = ["drives/a.mcap"]', 'paths = ["drives/a.mcap", ""]', "sources.paths[1]"),
        ("[paths]", "[scenario]\nscene_duration_s = inf\n[paths]", "scenario.scene_duration_s"),
        ("[paths]", "[scenario]\nscene_duration_s = 1e300\n[paths]", "scenario.scene_duration_s"),
        ("[paths]", "[scenario]\npose_tolerance_ms = nan\n[paths]", "scenario.pose_tolerance_ms"),
        (
            "[paths]",
            "[scenario]\nrules = [{kind = 'max_scenes', value = inf}]\n[paths]",
            "scenario.rules[0]",
        ),
        (
            "[paths]",
            "[scenario]\nrules = [{kind = 'min_distance_m', value = -3.0}]\n[paths]",
            "scenario.rules[0]",
        ),
        (
            "[paths]",
            "[scenario]\nrules = [{kind = 'time_of_day', value = 'noon'}]\n[paths]",
            "scenario.rules[0]",
        ),
        ("[paths]", "[split]\ntest_fraction = nan\n[paths]", "split.test_fraction"),
        (
            'output_dir = "out"',
            'output_dir = "out"\nevidence_dir = "out/v1.0-trainval"',
            "paths.evidence_dir",
        ),
        (
            'output_dir = "out"',
            'output_dir = "out"\nevidence_dir = "out/./v1.0-trainval/ev"',
            "paths.evidence_dir",
        ),
        ('output_dir = "out"', 'output_dir = "out"\nevidence_dir = "."', "paths.evidence_dir"),
        ('namespace = "fleet"', 'namespace = ""', "namespace"),
        ('namespace = "fleet"', 'namespace = "fleet"\nextra = 1', "extra"),
        ('paths = ["drives/a.mcap"]', "paths = []", "sources.paths"),
    ],
)
def test_a_value_outside_the_contract_names_its_key(
    tmp_path: Path, old: str, new: str, key: str
) -> None:
    assert old in BASE
    with pytest.raises(ConfigError) as info:
        load_build_config(write(tmp_path, BASE.replace(old, new)))
    assert info.value.key == key
    assert key in str(info.value)
    assert str(info.value).startswith(f"{tmp_path / 'build.toml'}: "), info.value


def test_a_config_that_is_a_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected a TOML config file, found a directory"):
        load_build_config(tmp_path)


def test_missing_sections_and_bad_toml_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_build_config(write(tmp_path, 'namespace = "x"'))
    assert info.value.key == "sources"
    with pytest.raises(ConfigError, match="not a TOML build config"):
        load_build_config(write(tmp_path, "namespace = "))
    with pytest.raises(ConfigError, match="does not exist"):
        load_build_config(tmp_path / "absent.toml")


@pytest.mark.needs("nuscenes")
def test_an_output_dir_under_a_file_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "drives").mkdir()
    text = BASE.replace('output_dir = "out"', 'output_dir = "build.toml/out"')
    with pytest.raises(ConfigError, match=r"a parent of .* is not a directory") as info:
        build_dataset(load_build_config(write(tmp_path, text)))
    assert info.value.key == "paths.output_dir"
    assert (tmp_path / "build.toml").read_text() == text


def test_a_wrong_source_type_is_caught_from_the_paths_before_any_recording_is_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "drives" / "folder").mkdir(parents=True)
    (tmp_path / "drives" / "folder" / "recording.json").write_text("not read")
    text = BASE.replace('paths = ["drives/a.mcap"]', 'paths = ["drives/folder"]')
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_build_config(path)
    assert info.value.key == "sources.type"
    assert str(info.value).startswith(f"{path}: sources.type is 'mcap_hf' but sources.paths[0]")
    assert "decoded recording folder (recording.json) ('decoded_hf')" in str(info.value)
    (tmp_path / "drives" / "bag").mkdir()
    (tmp_path / "drives" / "bag" / "metadata.yaml").write_text("not read")
    text = BASE.replace('type = "mcap_hf"', 'type = "decoded_hf"')
    path = write(tmp_path, text.replace('paths = ["drives/a.mcap"]', 'paths = ["drives/bag"]'))
    with pytest.raises(
        ConfigError, match=r"is a message log \(an \.mcap or \.bag file, or a ROS 2 bag"
    ):
        load_build_config(path)


@pytest.mark.parametrize(
    ("table", "listed"),
    [
        ('[scenario]\nrules = [{kind = "require_vaild"}]\n', "require_valid, min_samples"),
        ("", "mcap_hf, decoded_hf"),
    ],
)
def test_an_unknown_enumerated_value_lists_the_valid_ones(
    tmp_path: Path, table: str, listed: str
) -> None:
    text = BASE + table if table else BASE.replace('"mcap_hf"', '"mcap_hff"')
    with pytest.raises(ConfigError, match=f"Invalid enum value .*; expected one of {listed}"):
        load_build_config(write(tmp_path, text))


def test_an_unknown_rule_kind_from_python_lists_the_valid_kinds() -> None:
    from dataset_devkit.nuscenes import PipelineConfig, ScenarioConfig, SelectionRule
    from dataset_devkit.nuscenes.evidence import check_config

    rule = SelectionRule(kind="max_scene")  # type: ignore[arg-type]
    config = PipelineConfig(namespace="x", scenario=ScenarioConfig(rules=(rule,)))
    with pytest.raises(ConfigError, match="unknown selection rule 'max_scene'; expected one of"):
        check_config(config)


@pytest.mark.parametrize(
    ("edit", "key", "suggestion"),
    [
        (("namespace", "namspace"), "namspace", "did you mean 'namespace'?"),
        (("[paths]", "[path]"), "path", "did you mean 'paths'?"),
        (('paths = ["drives', 'path = ["drives'), "sources.path", "did you mean 'paths'?"),
        (("output_dir", "outptu_dir"), "paths.outptu_dir", "did you mean 'output_dir'?"),
        (
            ("[paths]", '[scenario]\nrules = [{ kind = "max_scenes", vaule = 3 }]\n[paths]'),
            "scenario.rules.0.vaule",
            "did you mean 'value'? (expected one of: kind, recordings, value)",
        ),
        (
            ("[paths]", "[split]\ntest_fractoin = 0.5\n[paths]"),
            "split.test_fractoin",
            "did you mean 'test_fraction'?",
        ),
    ],
)
def test_a_key_typo_at_any_depth_gets_the_near_miss_and_the_keys_of_its_table(
    tmp_path: Path, edit: tuple[str, str], key: str, suggestion: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_build_config(write(tmp_path, BASE.replace(*edit, 1)))
    assert info.value.key == key
    assert suggestion in str(info.value), str(info.value)
