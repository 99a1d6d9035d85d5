"""The integrity commands as a user runs them: exit codes, messages, JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.report_check import check_report
from tests.cli_run import run_devkit as _run
from tests.integrity.helpers import make_tree


def test_manifest_then_verify_succeeds_and_prints_the_root_hash(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    root = make_tree(tmp_path / "t")
    made = _run(package_env, "manifest", str(root))
    assert made.returncode == 0, made.stderr
    digest = made.stdout.split("root_sha256 ")[1].strip()
    checked = _run(package_env, "verify", str(root))
    assert checked.returncode == 0
    assert digest in checked.stdout


def test_verify_of_a_damaged_tree_exits_1_listing_every_issue(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    root = make_tree(tmp_path / "t")
    assert _run(package_env, "manifest", str(root)).returncode == 0
    (root / "a.txt").write_text("changed")
    (root / "extra").write_text("x")
    result = _run(package_env, "verify", str(root))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "a.txt: changed" in result.stderr
    assert "extra: extra" in result.stderr
    as_json = _run(package_env, "verify", "--json", str(root))
    assert as_json.returncode == 1
    report = check_report(as_json.stdout)
    assert [issue["kind"] for issue in report["issues"]] == ["changed", "extra"]


def test_publish_command_refuses_an_existing_destination(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    staging = make_tree(tmp_path / ".staging")
    (tmp_path / "final").mkdir()
    result = _run(package_env, "publish", str(staging), "--out", str(tmp_path / "final"))
    assert result.returncode == 1
    assert "already exists" in result.stderr
    assert "Traceback" not in result.stderr
    ok = _run(package_env, "publish", str(staging), "--out", str(tmp_path / "final2"))
    assert ok.returncode == 0, ok.stderr
    assert "root_sha256" in ok.stdout


def test_a_missing_directory_is_a_one_line_error_and_debug_shows_the_traceback(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    result = _run(package_env, "verify", str(tmp_path / "absent"))
    assert result.returncode == 1
    assert f"{tmp_path / 'absent'}: no such directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_usage_errors_exit_2(package_env: dict[str, str]) -> None:
    assert _run(package_env, "verify").returncode == 2
    assert _run(package_env, "no-such-command").returncode == 2


@pytest.mark.needs("nuscenes")  # the demo checks its dataroot with the official loader
def test_demo_runs_every_step_and_reports_root_hashes(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    result = _run(package_env, "demo", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    assert "root_sha256" in result.stdout
    assert "demo complete" in result.stdout


def test_a_nested_manifest_is_written_where_asked_and_found_by_verify(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    root = make_tree(tmp_path / "t", {"meta/config.json": b"{}\n", "a": b"1"})
    made = _run(
        package_env, "manifest", str(root), "--manifest-location", "meta/content_manifest.json"
    )
    assert made.returncode == 0, made.stderr
    assert f"wrote {root / 'meta/content_manifest.json'}" in made.stdout
    assert not (root / "content_manifest.json").exists()
    checked = _run(package_env, "verify", str(root))
    assert checked.returncode == 0, checked.stderr
    assert "match meta/content_manifest.json" in checked.stdout
    (root / "content_manifest.json").write_bytes(b"a stray copy")
    explicit = _run(
        package_env,
        "verify",
        "--json",
        "--manifest-location",
        "meta/content_manifest.json",
        str(root),
    )
    assert explicit.returncode == 1
    report = check_report(explicit.stdout, ok=False, kind="content-manifest-tree")
    assert report["manifest_location"] == "meta/content_manifest.json"
    assert [(i["path"], i["kind"]) for i in report["issues"]] == [
        ("content_manifest.json", "extra")
    ]
    bad = _run(
        package_env, "manifest", str(root), "--manifest-location", "../content_manifest.json"
    )
    assert bad.returncode == 1
    assert "not a safe relative POSIX path" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_publish_command_writes_the_manifest_at_the_given_location(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    staging = make_tree(tmp_path / ".staging", {"meta/config.json": b"{}\n"})
    result = _run(
        package_env,
        "publish",
        str(staging),
        "--out",
        str(tmp_path / "final"),
        "--manifest-location",
        "meta/content_manifest.json",
    )
    assert result.returncode == 0, result.stderr
    assert "manifest meta/content_manifest.json" in result.stdout
    assert (tmp_path / "final/meta/content_manifest.json").is_file()
    assert _run(package_env, "verify", str(tmp_path / "final")).returncode == 0
