"""Two publishers of one final name: the loser says one thing, wherever it lost, and what to
do with its staging directory; the winner's record of its publication is kept."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from dataset_devkit.errors import DestinationExistsError
from dataset_devkit.integrity import publish_tree, staged_publication, verify_tree
from dataset_devkit.integrity.publish_record import record_name
from tests.cli_run import run_many
from tests.integrity.helpers import make_tree

OTHER = {"other.txt": b"the other publisher's tree\n"}


def _winner_first(final: Path, winner: Path) -> Callable[[str], None]:
    publish_tree(winner, final)
    return lambda _phase: None


def _winner_while_sealing(final: Path, winner: Path) -> Callable[[str], None]:
    def hook(phase: str) -> None:
        if phase == "rechecked":  # the loser is sealed, not yet under the lock
            publish_tree(winner, final)

    return hook


def _rename_ignoring_the_lock(final: Path, winner: Path) -> Callable[[str], None]:
    def hook(phase: str) -> None:
        if phase == "locked":  # a writer that does not take the lock renames first
            os.rename(winner, final)

    return hook


WHERE = {
    "before it started": (_winner_first, "untouched"),
    "while it was sealed": (_winner_while_sealing, "sealed read-only"),
    "at the rename": (_rename_ignoring_the_lock, "sealed read-only"),
}


@pytest.mark.parametrize("where", sorted(WHERE))
def test_the_loser_says_one_thing_and_what_to_do_with_its_staging(
    where: str, tmp_path: Path
) -> None:
    final, loser = tmp_path / "final", make_tree(tmp_path / "loser")
    winner = make_tree(tmp_path / "winner", OTHER)
    make_hook, state = WHERE[where]
    hook = make_hook(final, winner)
    with pytest.raises(DestinationExistsError) as lost:
        publish_tree(loser, final, on_phase=hook)
    assert str(lost.value) == (
        f"{final}: already exists; a published tree is never replaced; {loser} is left "
        f"{state}{', as it would have been published' if 'sealed' in state else ''}: publish "
        f"it under another name (dataset-devkit publish {loser} --out OTHER) or remove it "
        f"(chmod -R u+w {loser} && rm -rf {loser})"
    )
    assert loser.is_dir() and (tmp_path / "final" / "other.txt").exists()
    if where != "at the rename":  # the winner published through publish_tree: its record
        assert (tmp_path / record_name(final)).exists()
        assert publish_tree(winner, final).already_published


def test_a_private_staging_that_loses_is_removed_and_not_mentioned(tmp_path: Path) -> None:
    final = tmp_path / "final"
    publish_tree(make_tree(tmp_path / "winner", OTHER), final)
    with pytest.raises(DestinationExistsError) as lost, staged_publication(final) as staging:
        (staging / "a.txt").write_text("a\n")
    assert str(lost.value) == f"{final}: already exists; a published tree is never replaced"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["final", record_name(final)])


def test_the_command_line_prints_the_loss_in_one_line(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    final = tmp_path / "final"
    publish_tree(make_tree(tmp_path / "winner", OTHER), final)
    loser = make_tree(tmp_path / "loser")
    # As a user would type it, absolute or relative: one wording either way.
    argvs = [["publish", str(loser), "--out", str(final)], ["publish", "loser", "--out", "final"]]
    lines = [err for _, _, err in run_many(package_env, argvs, cwd=str(tmp_path))]
    assert all(line.count("\n") == 1 for line in lines), lines
    assert lines[0].startswith(f"error: {final}: already exists; a published tree is never")
    assert lines[1] == lines[0]
    assert verify_tree(final).ok
