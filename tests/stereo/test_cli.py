"""``dataset-devkit stereo build|validate`` through the real root app."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from dataset_devkit.cli import new_app
from tests.cli.report_check import check_report


def test_build_then_validate_with_json_output(source, tmp_path):
    runner = CliRunner()
    out = tmp_path / "GenVR-duo-20261023"
    built = runner.invoke(
        new_app(), ["stereo", "build", str(source), "--out", str(out), "--json", "--workers", "1"]
    )
    assert built.exit_code == 0, built.output
    summary = check_report(built.stdout, ok=True, kind="stereo-dataset")
    assert summary["pairs"] == 3 and summary["has_depth"] is True
    report = tmp_path / "reader_validation.json"
    checked = runner.invoke(
        new_app(),
        [
            "stereo",
            "validate",
            str(out),
            "--with-depth",
            "--full",
            "--json",
            "--report",
            str(report),
        ],
    )
    assert checked.exit_code == 0, checked.output
    result = check_report(checked.stdout, ok=True, kind="stereo-dataset")
    assert result["ok"] is True and result["issues"] == []
    assert json.loads(report.read_text())["scope"] == "full"


def test_validate_of_a_missing_root_exits_1_with_one_line(tmp_path, package_env):
    done = subprocess.run(
        [sys.executable, "-m", "dataset_devkit", "stereo", "validate", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        env=package_env,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == f"error: {tmp_path / 'none'}: no such stereo dataset\n"


def test_build_from_a_bad_source_exits_1_naming_the_problem(tmp_path, package_env):
    (tmp_path / "export.json").write_text('{"format": "genvr-render-export"}')
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dataset_devkit",
            "stereo",
            "build",
            str(tmp_path),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=package_env,
        check=False,
    )
    assert done.returncode == 1
    assert "export.json" in done.stderr and "missing required field" in done.stderr


def test_build_without_out_is_a_usage_error(source):
    assert CliRunner().invoke(new_app(), ["stereo", "build", str(source)]).exit_code == 2


def test_validate_never_replaces_an_existing_report(built, tmp_path):
    report = tmp_path / "report.json"
    report.write_text("keep me")
    result = CliRunner().invoke(
        new_app(), ["stereo", "validate", str(built.root), "--report", str(report)]
    )
    assert result.exit_code != 0
    assert report.read_text() == "keep me"
