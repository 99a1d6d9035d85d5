"""``build``, ``validate`` and ``inspect`` as a user runs them: exit codes, output, JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap
from tests.cli.report_check import check_report
from tests.cli_run import run_devkit as run
from tests.nuscenes.dataroot_fixture import Fixture, publish_fixture, writable_copy


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Fixture]:
    return publish_fixture(tmp_path_factory.mktemp("cli"))


def test_validate_accepts_a_published_dataroot(
    published: tuple[Path, Fixture], package_env: dict[str, str]
) -> None:
    root = str(published[0])
    done = run(package_env, "validate", "--dataroot", root, "--version", "v1.0-trainval")
    assert done.returncode == 0, done.stderr
    assert "root_sha256" in done.stdout


def test_validate_exits_1_listing_every_issue(
    published: tuple[Path, Fixture], tmp_path: Path, package_env: dict[str, str]
) -> None:
    copy = writable_copy(published[0], tmp_path / "copy")
    (copy / "maps" / "extra.png").write_bytes(b"x")
    image = copy / published[1].tables["sample_data"][0]["filename"]
    image.write_bytes(image.read_bytes()[:-4])
    done = run(package_env, "validate", "--dataroot", str(copy), "--version", "v1.0-trainval")
    assert done.returncode == 1
    assert "maps/extra.png" in done.stderr
    assert "JPEG does not decode" in done.stderr
    assert published[1].tables["sample_data"][0]["filename"] in done.stderr


def test_inspect_json_is_deterministic_and_complete(
    published: tuple[Path, Fixture], package_env: dict[str, str]
) -> None:
    args = ("inspect", "--dataroot", str(published[0]), "--version", "v1.0-trainval", "--json")
    first, second = run(package_env, *args), run(package_env, *args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    data = check_report(first.stdout, ok=True, kind="nuscenes-dataroot")
    assert data["validation_state"] == "passed"
    assert data["images"]["total"] == 12 and data["recordings"] == 1
    assert len(data["root_sha256"]) == 64
    table = run(package_env, *args[:-1])
    assert table.returncode == 0 and f"root_sha256 {data['root_sha256']}" in table.stdout


def test_an_unsupported_version_exits_1_naming_it(
    published: tuple[Path, Fixture], package_env: dict[str, str]
) -> None:
    done = run(package_env, "inspect", "--dataroot", str(published[0]), "--version", "v1.0-mini")
    assert done.returncode == 1
    assert "v1.0-mini" in done.stderr and done.stdout == ""


def test_a_missing_option_is_a_usage_error(package_env: dict[str, str]) -> None:
    assert run(package_env, "validate", "--version", "v1.0-trainval").returncode == 2


@pytest.mark.needs("nuscenes")
def test_build_publishes_and_refuses_a_second_run(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    write_sample_mcap(tmp_path / "drive.mcap", SampleDrive(duration_s=6.0))
    config = tmp_path / "build.toml"
    config.write_text(
        'namespace = "cli"\n[sources]\ntype = "mcap_hf"\npaths = ["drive.mcap"]\n'
        "[scenario]\nscene_duration_s = 5.0\n"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        '[paths]\noutput_dir = "out"\n'
    )
    done = run(package_env, "build", str(config), "--json")
    assert done.returncode == 0, done.stderr
    report = check_report(done.stdout, ok=True, kind="nuscenes-dataroot")
    assert report["root"] == str(tmp_path / "out" / "v1.0-trainval")
    assert len(report["root_sha256"]) == 64 and report["scenes"] >= 1
    again = run(package_env, "build", str(config))
    assert again.returncode == 1 and "already exists" in again.stderr


def test_build_rejects_a_config_outside_the_v1_contract(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    config = tmp_path / "build.toml"
    config.write_text(
        'namespace = "cli"\n[sources]\ntype = "mcap_hf"\npaths = ["a.mcap"]\n'
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = false\n'
        '[paths]\noutput_dir = "out"\n'
    )
    done = run(package_env, "build", str(config))
    assert done.returncode == 1
    assert "publication.refuse_overwrite" in done.stderr


def test_an_empty_dataroot_is_a_usage_error_instead_of_the_working_directory(
    package_env: dict[str, str],
) -> None:
    for command in ("validate", "inspect"):
        done = run(package_env, command, "--dataroot", "", "--version", "v1.0-trainval")
        assert done.returncode == 2
        assert done.stderr.strip() == (
            "error: Invalid value for '--dataroot': must not be empty (an unset shell "
            f"variable?) (see: dataset-devkit {command} --help)"
        ), done.stderr
        assert done.stdout == ""


@pytest.mark.needs("nuscenes")
def test_a_build_selecting_nothing_says_why_and_a_changed_rerun_names_the_old_evidence(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    write_sample_mcap(tmp_path / "drive.mcap", SampleDrive(duration_s=6.0))
    config = tmp_path / "build.toml"
    base = (
        'namespace = "cli"\n[sources]\ntype = "mcap_hf"\npaths = ["drive.mcap"]\n'
        "[scenario]\nscene_duration_s = 5.0\n{rules}"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        '[paths]\noutput_dir = "out"\n'
    )
    config.write_text(base.format(rules='rules = [{kind = "min_distance_m", value = 1e6}]\n'))
    done = run(package_env, "build", str(config))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "selects no scene of 2 scene windows; rejected 2 by rule 0 min_distance_m" in (
        done.stderr
    )
    config.write_text(base.format(rules=""))
    again = run(package_env, "build", str(config))
    assert again.returncode == 1
    assert f"{tmp_path / 'out' / 'evidence'}: existing evidence was built with another config" in (
        again.stderr
    )
    assert "set paths.evidence_dir to a new one" in again.stderr
    assert not (tmp_path / "out" / "v1.0-trainval").exists()


@pytest.mark.needs("nuscenes")
def test_a_require_cameras_typo_is_refused_before_the_ingest_with_the_channels_there_are(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    write_sample_mcap(tmp_path / "drive.mcap", SampleDrive(duration_s=6.0))
    config = tmp_path / "build.toml"
    config.write_text(
        'namespace = "cli"\n[sources]\ntype = "mcap_hf"\npaths = ["drive.mcap"]\n'
        '[scenario]\nrules = [{kind = "require_cameras", value = "CAM_FRONT,CAM_REAR"}]\n'
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        '[paths]\noutput_dir = "out"\n'
    )
    done = run(package_env, "build", str(config))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert (
        "scenario.rules[0].value: no recording has a camera channel 'CAM_REAR'; did you mean "
        "'CAM_BACK'? (channels: CAM_BACK, CAM_FRONT)" in done.stderr
    )
    assert not (tmp_path / "out" / "evidence").exists()


def test_build_config_mistakes_exit_1_with_one_line_naming_file_and_key(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    (tmp_path / "cfg").mkdir()
    config = tmp_path / "build.toml"
    config.write_text(
        'namespace = "cli"\n[sources]\ntype = "mcap_hf"\npaths = ["a.mcap"]\n'
        "[scenario]\nscene_duration_s = inf\n"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        '[paths]\noutput_dir = "out"\n'
    )
    for target, expected in (
        (config, f"error: {config}: scenario.scene_duration_s must be a finite number, found inf"),
        (tmp_path / "cfg", "expected a TOML config file, found a directory"),
    ):
        done = run(package_env, "build", str(target))
        assert done.returncode == 1, done.stderr
        assert expected in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_dataroot_one_level_off_gets_a_did_you_mean_hint(
    published: tuple[Path, Fixture], package_env: dict[str, str]
) -> None:
    root = published[0]
    for given, meant in ((root.parent, root), (root / "v1.0-trainval", root)):
        done = run(package_env, "validate", "--dataroot", str(given), "--version", "v1.0-trainval")
        assert done.returncode == 1
        assert f"did you mean {meant}?" in done.stderr.splitlines()[0], done.stderr


def test_an_empty_build_config_argument_is_refused_not_read_as_the_working_directory(
    package_env: dict[str, str],
) -> None:
    done = run(package_env, "build", "")
    assert done.returncode == 2
    assert "'CONFIG': must not be empty (an unset shell variable?)" in done.stderr
