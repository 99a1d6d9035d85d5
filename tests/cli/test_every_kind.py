"""``validate PATH``/``inspect PATH`` on one tree of every kind the demo writes.

The demo runs once (at 80 columns, as a user's terminal), then each of its trees is
validated and inspected as a user would, and the hashes the demo printed are checked to be
whole lines a user can copy.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

import dataset_devkit
from tests.cli.report_check import check_report
from tests.cli_run import run_devkit
from tests.optional import need

#: Demo trees, relative to its output, and the kind each one is.
TREES = {
    "integrity/published": "content-manifest-tree",
    "nuscenes_publish/out/v1.0-trainval": "nuscenes-dataroot",
    "release/GenVR-duo-demo-packages": "release",
    "release/data/GenVR-duo-demo": "restored-release",
    "vin_store/vin-offline-store": "vin-store",
    "stereo/GenVR-duo-20261023": "stereo-dataset",
}


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    env = dict(os.environ, COLUMNS="80")
    source_root = str(Path(dataset_devkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> tuple[Path, str]:
    need("nuscenes")  # the demo checks its dataroot with the official loader
    out = tmp_path_factory.mktemp("demo") / "out"
    done = run_devkit(env, "demo", str(out))
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_the_demo_prints_every_root_hash_whole_at_80_columns(demo: tuple[Path, str]) -> None:
    _, text = demo
    hashes = re.findall(r"^  root_sha256 \([^)]+\)\s+([0-9a-f]+)$", text, re.MULTILINE)
    assert len(hashes) >= 8
    assert all(len(h) == 64 for h in hashes), hashes
    # No hex run anywhere was cut: runs are tokens (32) or hashes (64), never a fragment.
    runs = {len(run) for run in re.findall(r"[0-9a-f]{16,}", text)}
    assert runs <= {32, 64}, runs


def test_the_demo_ends_with_commands_that_work_on_what_it_wrote(
    demo: tuple[Path, str], env: dict[str, str]
) -> None:
    out, text = demo
    tail = text[text.index("next, try:") :].splitlines()[1:]
    commands = [shlex.split(line) for line in tail if line.startswith("  dataset-devkit ")]
    assert len(commands) >= 5
    for command in commands:
        assert any(str(out) in arg for arg in command), command
    # Each suggestion works (the tampered copy fails, as it should); plain validate/inspect
    # of the demo's trees are run by the test below already.
    covered: set[tuple[str, ...]] = {
        (c, str(out / tree)) for c in ("validate", "inspect") for tree in TREES
    }
    dataroot = str(out / "nuscenes_publish/out/v1.0-trainval")  # inspect PATH runs the same
    covered.add(("inspect", "--dataroot", dataroot, "--version", "v1.0-trainval"))
    for command in commands:
        if tuple(command[1:]) in covered:
            continue
        done = run_devkit(env, *command[1:])
        expected = 1 if "tampered-copy" in " ".join(command) else 0
        assert done.returncode == expected, (command, done.stderr)


@pytest.mark.parametrize("tree", sorted(TREES))
def test_validate_and_inspect_tell_the_kind_and_agree_with_the_demo(
    demo: tuple[Path, str], env: dict[str, str], tree: str
) -> None:
    out, text = demo
    validated = run_devkit(env, "validate", str(out / tree), "--json")
    assert validated.returncode == 0, validated.stderr
    report = check_report(validated.stdout, ok=True, kind=TREES[tree])
    assert report["root_sha256"] in text  # the hash the demo printed for that tree
    inspected = run_devkit(env, "inspect", str(out / tree), "--json")
    assert inspected.returncode == 0, inspected.stderr
    summary = check_report(inspected.stdout, ok=True, kind=TREES[tree])
    assert summary["root_sha256"] == report["root_sha256"]


def test_inspect_shows_a_table_and_the_root_hash(
    demo: tuple[Path, str], env: dict[str, str]
) -> None:
    out, text = demo
    shown = run_devkit(env, "inspect", str(out / "release" / "GenVR-duo-demo-packages"))
    assert shown.returncode == 0, shown.stderr
    assert "release" in shown.stdout and "packages" in shown.stdout
    hashes = re.findall(r"^root_sha256 ([0-9a-f]{64})$", shown.stdout, re.MULTILINE)
    assert len(hashes) == 1 and hashes[0] in text


def test_a_damaged_tree_fails_validate_with_every_issue_in_the_report(
    demo: tuple[Path, str], env: dict[str, str]
) -> None:
    out, _ = demo
    done = run_devkit(env, "validate", str(out / "integrity" / "tampered-copy"), "--json")
    assert done.returncode == 1
    report = check_report(done.stdout, ok=False, kind="content-manifest-tree")
    kinds = {(issue["path"], issue["kind"]) for issue in report["issues"]}
    assert kinds == {
        ("data/stray.bin", "extra"),
        ("data/train/000000.bin", "changed"),
        ("data/val/000000.bin", "missing"),
        ("labels/link.json", "linked"),
    }
    assert done.stderr.startswith("error: ")


def test_the_nuscenes_spelling_on_a_stereo_tree_tells_its_kind_as_validate_path_does(
    demo: tuple[Path, str], env: dict[str, str]
) -> None:
    out, _ = demo
    stereo = str(out / "stereo" / "GenVR-duo-20261023")
    contract = run_devkit(env, "validate", "--dataroot", stereo, "--version", "v1.0-trainval")
    assert contract.returncode == 1
    assert contract.stderr == (
        f"error: {stereo}: not a nuScenes dataroot, this is a stereo-dataset (check it with: "
        f"dataset-devkit stereo validate {stereo})\n"
    )
    told = run_devkit(env, "validate", stereo)
    assert told.returncode == 0 and "valid stereo-dataset" in told.stdout


def test_a_directory_of_no_kind_says_what_it_is_not(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "notes.txt").write_text("x")
    for command in ("validate", "inspect"):
        done = run_devkit(env, command, str(tmp_path))
        assert done.returncode == 1
        assert f"{tmp_path}: not a dataset-devkit tree: not a release (needs" in done.stderr
        assert done.stdout == ""


def test_path_and_dataroot_together_is_a_usage_error(tmp_path: Path, env: dict[str, str]) -> None:
    done = run_devkit(env, "validate", str(tmp_path), "--dataroot", str(tmp_path))
    assert done.returncode == 2 and "not both" in done.stderr


def test_a_release_restored_in_part_names_the_families_it_holds(
    demo: tuple[Path, str], env: dict[str, str], tmp_path: Path
) -> None:
    out, _ = demo
    release = str(out / "release" / "GenVR-duo-demo-packages")
    restored = run_devkit(env, "release", "unpack", release, "--base", "--out", str(tmp_path))
    assert restored.returncode == 0, restored.stderr
    done = run_devkit(env, "validate", str(tmp_path), "--json")
    assert done.returncode == 0, done.stdout  # a supported state, as verify says too
    report = check_report(done.stdout, ok=True, kind="restored-release")
    assert report["families"] == ["base"] and set(report["families_absent"]) == {"depth"}
    damaged = tmp_path / "GenVR-duo-demo" / "genvr_i2s.jsonl"
    damaged.chmod(0o644)
    damaged.write_bytes(b"{}\n")
    done = run_devkit(env, "validate", str(tmp_path), "--json")
    assert done.returncode == 1
    report = check_report(done.stdout, ok=False, kind="restored-release")
    assert "does not verify" in report["error"]
    assert any("genvr_i2s.jsonl" in str(issue) for issue in report["issues"])
