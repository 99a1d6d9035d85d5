"""``publish`` re-run after a kill: a tree it already renamed into place is reported done.

The kill is real (the child SIGKILLs itself from the phase hook, at the phase named), and
the re-run is the same ``dataset-devkit publish STAGING --out FINAL`` command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dataset_devkit.errors import DestinationExistsError
from dataset_devkit.integrity import publish_tree, verify_tree
from dataset_devkit.integrity.publish_record import record_name, write_record
from tests.integrity.helpers import SAMPLE, make_tree
from tests.scale_tree import run_limited

_KILLED_AT = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from dataset_devkit.integrity import publish_tree

    def hook(phase):
        if phase == sys.argv[3]:
            os.kill(os.getpid(), signal.SIGKILL)

    publish_tree(Path(sys.argv[1]), Path(sys.argv[2]), on_phase=hook)
    hook("returned")
    """
)


def _killed_publish(staging: Path, final: Path, phase: str, env: dict[str, str]) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_AT, str(staging), str(final), phase],
        env=env,
        check=False,
        capture_output=True,
    )
    assert child.returncode == -9, child.stderr


#: Kills around the final rename: just before it (under the lock), right after it, after the
#: check of the renamed tree, and after ``publish_tree`` returned (before the process exits).
AROUND_THE_RENAME = ["locked", "renamed", "verified", "returned"]


@pytest.mark.parametrize("phase", AROUND_THE_RENAME)
def test_the_same_command_after_a_kill_around_the_rename_exits_0(
    phase: str, tmp_path: Path, package_env: dict[str, str]
) -> None:
    staging = make_tree(tmp_path / "staging")
    final = tmp_path / "final"
    _killed_publish(staging, final, phase, package_env)
    renamed = phase != "locked"
    assert final.exists() is renamed and (tmp_path / record_name(final)).exists() is renamed
    rerun = run_limited(package_env, ["publish", str(staging), "--out", str(final)])
    assert rerun.returncode == 0, rerun.stderr
    said = "already published" if renamed else "published"
    assert rerun.stdout.startswith(f"{said} {final}"), rerun.stdout
    report = verify_tree(final)
    assert report.ok and report.file_count == len(SAMPLE)
    # The record stays: every later run of the same command gives the same answer.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["final", record_name(final)])
    again = run_limited(package_env, ["publish", str(staging), "--out", str(final)])
    assert again.returncode == 0 and again.stdout.startswith(f"already published {final}")


def test_a_finished_publish_run_again_says_already_published(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    staging = make_tree(tmp_path / "staging")
    final = tmp_path / "final"
    first = run_limited(package_env, ["publish", str(staging), "--out", str(final), "--json"])
    assert first.returncode == 0, first.stderr
    again = run_limited(package_env, ["publish", str(staging), "--out", str(final), "--json"])
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["already_published"] is True
    assert json.loads(again.stdout)["root_sha256"] == json.loads(first.stdout)["root_sha256"]


def test_a_note_naming_this_staging_does_not_accept_another_tree(tmp_path: Path) -> None:
    staging = make_tree(tmp_path / "staging")
    other = make_tree(tmp_path / "other", {"x.txt": b"another tree\n"})
    final = tmp_path / "final"
    publish_tree(other, final)  # someone else's tree holds the final name
    parent = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:  # a note of a killed run of "publish staging", for a directory that is not final
        write_record(parent, final, staging, os.stat(staging), "0" * 64)
    finally:
        os.close(parent)
    staging.rename(tmp_path / "moved")  # the staging name is gone, as after a rename
    with pytest.raises(DestinationExistsError, match=r"is not the tree .*staging was"):
        publish_tree(staging, final)
    assert verify_tree(final).ok


def test_a_note_for_the_final_tree_with_another_root_is_refused(tmp_path: Path) -> None:
    staging = make_tree(tmp_path / "staging")
    final = tmp_path / "final"
    result = publish_tree(staging, final)
    parent = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:  # the same directory, but the note promised another root hash
        write_record(parent, final, staging, os.stat(final), "f" * 64)
    finally:
        os.close(parent)
    with pytest.raises(DestinationExistsError, match="does not verify as the tree"):
        publish_tree(staging, final)
    assert (tmp_path / record_name(final)).exists()
    assert verify_tree(final).root_sha256 == result.root_sha256


def test_without_a_record_an_existing_final_name_stays_a_refusal(tmp_path: Path) -> None:
    final = tmp_path / "final"
    publish_tree(make_tree(tmp_path / "other"), final)
    with pytest.raises(DestinationExistsError, match="no record beside it says staging"):
        publish_tree(tmp_path / "staging", final)  # no run of "publish staging" left one
    (tmp_path / record_name(final)).unlink()
    with pytest.raises(DestinationExistsError, match="already exists"):
        publish_tree(tmp_path / "staging", final)


def test_a_private_staging_leaves_no_record(tmp_path: Path) -> None:
    final = tmp_path / "final"
    publish_tree(make_tree(tmp_path / ".final.staging-0"), final, user_staging=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]
