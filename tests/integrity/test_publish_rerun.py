"""``publish`` re-run after a kill: a tree it already renamed into place is reported done.

The kill is real (the child SIGKILLs itself from the phase hook, at the phase named), and
the re-run is the same ``dataset-devkit publish STAGING --out FINAL`` command.
"""

from __future__ import annotations

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


def test_the_same_command_after_a_kill_after_the_rename_says_already_published(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    phase = "renamed"  # killed before the check and the note's removal (other phases:
    # test_publish_faults.py kills at random moments)
    staging = make_tree(tmp_path / "staging")
    final = tmp_path / "final"
    _killed_publish(staging, final, phase, package_env)
    assert final.exists() and (tmp_path / record_name(final)).exists()
    rerun = run_limited(package_env, ["publish", str(staging), "--out", str(final)])
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.startswith(f"already published {final}"), rerun.stdout
    report = verify_tree(final)
    assert report.ok and report.file_count == len(SAMPLE)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]  # no note left behind
    again = run_limited(package_env, ["publish", str(staging), "--out", str(final)])
    assert again.returncode == 1  # the note is gone: a third run is a plain refusal
    assert "already exists" in again.stderr


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


def test_without_a_note_an_existing_final_name_stays_a_refusal(tmp_path: Path) -> None:
    final = tmp_path / "final"
    publish_tree(make_tree(tmp_path / "staging"), final)
    with pytest.raises(DestinationExistsError, match="already exists"):
        publish_tree(tmp_path / "staging", final)  # same names, but no run left a note
