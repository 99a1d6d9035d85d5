"""``dataset-devkit store ...`` as a user runs it: exit codes, messages, JSON."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dataset_devkit.demo.vin_store import run as run_demo
from dataset_devkit.vin_store import VinOfflineStoreReader, inspect_store
from tests.cli.report_check import check_report
from tests.tty_run import BAR, assert_full, last_frames, run_on_tty


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dataset_devkit", "store", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_inspect_reports_shards_blocks_splits_and_root_hash(
    store: Path, package_env: dict[str, str]
) -> None:
    result = _run(package_env, "inspect", str(store), "--json")
    assert result.returncode == 0, result.stderr
    summary = check_report(result.stdout, ok=True, kind="vin-store")
    assert summary["num_shards"] == 3
    assert summary["num_samples"] == 11
    assert {b["name"] for b in summary["blocks"]} >= {"vin.points_world", "oracle.candidate_pcs"}
    assert len(summary["root_sha256"]) == 64
    text = _run(package_env, "inspect", str(store))
    assert "vin.points_world" in text.stdout and "root_sha256" in text.stdout


def test_verify_passes_then_fails_with_every_issue_on_a_damaged_store(
    store: Path, package_env: dict[str, str]
) -> None:
    ok = _run(package_env, "verify", str(store))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("OK ")
    for path in (store, store / "shards", store / "shards" / "shard-000000"):
        path.chmod(0o700)
    offsets = store / "shards" / "shard-000000" / "oracle.candidate_pcs.offsets.npy"
    offsets.chmod(0o600)
    offsets.write_bytes(offsets.read_bytes()[:-8])
    (store / "shards" / "shard-000007").mkdir()
    bad = _run(package_env, "verify", str(store))
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: ")
    assert "offsets.npy" in bad.stderr and "shard-000007: extra shard" in bad.stderr
    as_json = _run(package_env, "verify", str(store), "--json")
    assert as_json.returncode == 1
    assert len(check_report(as_json.stdout, ok=False)["issues"]) >= 3


def test_sample_prints_one_sample_and_a_missing_index_exits_1(
    store: Path, package_env: dict[str, str]
) -> None:
    result = _run(package_env, "sample", str(store), "4", "--json")
    assert result.returncode == 0, result.stderr
    sample = check_report(result.stdout, ok=True)
    assert sample["record"]["sample_index"] == 4
    assert sample["blocks"]["vin.lengths"] == [1]
    assert sample["blocks"]["oracle.candidate_pcs"]["i"] == 1
    text = _run(package_env, "sample", str(store), "4", "--blocks", "vin.lengths")
    assert "vin.lengths" in text.stdout and "points_world" not in text.stdout
    missing = _run(package_env, "sample", str(store), "5")
    assert missing.returncode == 1
    assert "sample index 5 is not in" in missing.stderr
    usage = _run(package_env, "sample", str(store), "five")
    assert usage.returncode == 2


def test_demo_builds_a_store_and_reads_a_random_batch(tmp_path: Path) -> None:
    report = run_demo(tmp_path)
    labels = dict(report.lines)
    assert labels["verify"].startswith("OK")
    assert "vin.points_world [8, 64, 3] float32" in labels["random batch"]
    store = tmp_path / "vin-offline-store"
    assert report.root_sha256["vin-offline-store"] == inspect_store(store).root_sha256
    assert len(VinOfflineStoreReader(store)) == 96


def test_a_directory_that_is_not_a_store_is_one_clear_error(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    result = _run(package_env, "inspect", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: {tmp_path / 'manifest.json'}: missing: is this a VIN offline store?"
    )
    assert "Traceback" not in result.stderr


def test_verify_draws_a_bar_on_a_terminal_only(store: Path, package_env: dict[str, str]) -> None:
    code, shown = run_on_tty(package_env, "store", "verify", str(store))
    assert code == 0 and "OK " in shown, shown
    assert_full(last_frames(shown)["verify"], inspect_store(store).num_files)
    piped = _run(package_env, "verify", str(store))
    assert piped.returncode == 0 and piped.stderr == "" and BAR not in piped.stdout
    report = check_report(_run(package_env, "verify", str(store), "--json").stdout, ok=True)
    assert report["kind"] == "vin-store" and report["root"] == str(store)


def test_inspect_speaks_of_vin_families_only_for_a_store_of_the_vin_layout(
    store: Path, camera_store: Path, package_env: dict[str, str]
) -> None:
    vin = _run(package_env, "inspect", str(store))
    assert vin.returncode == 0, vin.stderr
    assert "VIN family" in vin.stdout and "trajectory" in vin.stdout and "core" in vin.stdout
    assert "VIN families: candidate_pcs, trajectory; absent: backbone, depths" in vin.stdout
    camera = _run(package_env, "inspect", str(camera_store))
    assert camera.returncode == 0, camera.stderr
    assert "camera.image" in camera.stdout and "camera.meta" in camera.stdout
    for word in ("famil", "optional", "backbone", "candidate_pcs"):
        assert word not in camera.stdout.lower(), word
    report = check_report(
        _run(package_env, "inspect", str(camera_store), "--json").stdout, ok=True, kind="vin-store"
    )
    assert report["vin_layout"] is False
    assert {b["family"] for b in report["blocks"]} == {None}
    assert VinOfflineStoreReader(camera_store).absent_families == ()
    assert inspect_store(camera_store).absent_families == ()
    absent = ("backbone", "depths", "gt_obbs", "detected_obbs")
    assert inspect_store(store).absent_families == absent
