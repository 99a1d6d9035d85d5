"""A run imports only the command module it names; the map of commands to modules is whole.

``dataset-devkit release pack`` should not import the nuScenes pipeline, numpy or the store
reader: each command module is imported on demand, from the table in ``cli/app.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dataset_devkit.cli.app import COMMAND_MODULES, command_for, full_command, new_app

SRC = Path(__file__).resolve().parents[2] / "src"

#: What a run of one command group must leave unimported (each is another group's).
FOREIGN = {
    "release": ["dataset_devkit.nuscenes", "dataset_devkit.vin_store", "numpy"],
    "verify": ["dataset_devkit.nuscenes", "dataset_devkit.vin_store", "numpy"],
    "stereo": ["dataset_devkit.nuscenes", "dataset_devkit.vin_store"],
    "cache": ["dataset_devkit.nuscenes", "dataset_devkit.release"],
}


def _commands(command: object) -> list[str]:
    return sorted(getattr(command, "commands", {}))


@pytest.mark.parametrize("module", sorted(COMMAND_MODULES))
def test_each_module_adds_exactly_the_commands_the_table_gives_it(module: str) -> None:
    import typer

    assert _commands(typer.main.get_command(new_app([module]))) == sorted(COMMAND_MODULES[module])


def test_the_table_covers_every_command_once() -> None:
    named = [name for names in COMMAND_MODULES.values() for name in names]
    assert len(named) == len(set(named))
    assert _commands(full_command()) == sorted(named)


@pytest.mark.parametrize(
    ("args", "commands"),
    [
        (["release", "pack", "x"], ["release"]),
        (["--debug", "--quiet", "verify", "x"], ["manifest", "publish", "verify"]),
        (["store", "--help"], ["store"]),
        ([], None),  # the root help lists every command
        (["--help"], None),
        (["relase", "pack"], None),  # an unknown name: Click's message, from the whole tree
        (["--version"], []),  # the root option alone
        (["--version", "--help"], None),
    ],
)
def test_a_run_builds_the_module_of_the_command_it_names(
    args: list[str], commands: list[str] | None
) -> None:
    built = command_for(args)
    assert _commands(built) == (_commands(full_command()) if commands is None else commands)


def test_shell_completion_sees_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_DATASET_DEVKIT_COMPLETE", "complete_bash")
    assert command_for(["release"]) is full_command()


@pytest.mark.parametrize(("typed", "offered"), [("rel", ["release"]), ("st", ["stereo", "store"])])
def test_bash_completes_command_names_from_every_module(typed: str, offered: list[str]) -> None:
    words = f"dataset-devkit {typed}"
    done = subprocess.run(
        [sys.executable, "-m", "dataset_devkit"],
        capture_output=True,
        text=True,
        check=True,
        env={
            "PYTHONPATH": str(SRC),
            "PATH": "/usr/bin:/bin",
            "_DATASET_DEVKIT_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": "1",
            "_TYPER_COMPLETE_ARGS": words,
        },
    )
    assert sorted(done.stdout.split()) == offered


@pytest.mark.parametrize("group", sorted(FOREIGN))
def test_a_run_leaves_the_other_groups_unimported(group: str) -> None:
    code = (
        "import json, sys\n"
        "from dataset_devkit.cli.app import main\n"
        "try:\n"
        f"    main([{group!r}, '--help'])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        f"print(json.dumps([m for m in {FOREIGN[group]!r} if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []
    assert f"dataset-devkit {group}" in done.stdout  # its help was printed
