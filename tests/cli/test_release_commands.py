"""The release commands as a user runs them: pack, verify, unpack, exit codes, JSON."""

from __future__ import annotations

from pathlib import Path

from tests.cli.report_check import check_report
from tests.cli_run import run_devkit as _run
from tests.release.helpers import SAMPLE, make_tree, read_tree


def test_pack_verify_unpack_then_verify_gives_the_published_root(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    tree = make_tree(tmp_path / "ds")
    made = _run(package_env, "manifest", str(tree))
    assert made.returncode == 0, made.stderr
    root = made.stdout.split("root_sha256 ")[1].strip()
    release = tmp_path / "rel"
    packed = _run(
        package_env,
        "release",
        "pack",
        str(tree),
        "--out",
        str(release),
        "--package-limit",
        "8192",
        "--rule",
        "**/depth-*/**=depth",
    )
    assert packed.returncode == 0, packed.stderr
    assert f"root_sha256 {root}" in packed.stdout
    checked = _run(package_env, "release", "verify", str(release), "--json")
    assert checked.returncode == 0, checked.stderr
    assert check_report(checked.stdout, ok=True, kind="release")["families"] == ["base", "depth"]
    data = tmp_path / "data"
    restored = _run(package_env, "release", "unpack", str(release), "--out", str(data), "--all")
    assert restored.returncode == 0, restored.stderr
    assert read_tree(data / "ds") == {**SAMPLE, "content_manifest.json": made_manifest(tree)}
    verified = _run(package_env, "verify", str(data / "ds"))
    assert verified.returncode == 0 and root in verified.stdout
    quick = _run(
        package_env, "release", "unpack", str(release), "--out", str(tmp_path / "fast"),
        "--base", "--no-fsync", "--json",
    )  # fmt: skip
    assert quick.returncode == 0, quick.stderr
    report = check_report(quick.stdout, ok=True, kind="restored-release")
    assert report["ok"] and report["families"] == ["base"] and report["skipped"] == 0


def made_manifest(tree: Path) -> bytes:
    return (tree / "content_manifest.json").read_bytes()


def test_failures_exit_1_with_one_clear_message(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    tree = make_tree(tmp_path / "ds")
    release = tmp_path / "rel"
    packed = _run(
        package_env,
        "release",
        "pack",
        str(tree),
        "--out",
        str(release),
        "--deliver",
        "base",
        "--package-limit",
        "8192",
        "--restore-test",
        "none",
    )
    assert packed.returncode == 0, packed.stderr
    pending = _run(package_env, "release", "unpack", str(release), "--out", "x", "--depth")
    assert pending.returncode == 1
    assert "declared but not delivered" in pending.stderr and "Traceback" not in pending.stderr
    again = _run(package_env, "release", "pack", str(tree), "--out", str(release))
    assert again.returncode == 1 and "never overwritten" in again.stderr
    usage = _run(package_env, "release", "unpack", str(release), "--out", "x")
    assert usage.returncode == 2


def test_a_typed_rule_that_matches_no_file_is_refused(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    tree = make_tree(tmp_path / "ds")
    release = tmp_path / "rel"
    done = _run(
        package_env, "release", "pack", str(tree), "--out", str(release),
        "--rule", "**/depth-*/**=depth", "--rule", "**/*.mpg=video",
    )  # fmt: skip
    assert done.returncode == 1
    assert "'**/*.mpg=video' matches no file" in done.stderr
    assert not release.exists()
