"""Help for every flag, readable metavars, ``--version``, completion, global flags anywhere."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import dataset_devkit
from dataset_devkit.cli.help import unwrap_paragraphs, walk_commands
from dataset_devkit.integrity import write_manifest
from tests.cli_run import run_devkit

app_module = importlib.import_module("dataset_devkit.cli.app")
COMMANDS = [path for path, _ in walk_commands(app_module.full_command())]
#: How Typer prints a Python type where a metavar belongs: <bool>, <list[str]>, <Path>.
_PYTHON_TYPE = re.compile(r"<(?:bool|int|float|str|Path|[A-Za-z]+Choice|(?:list|tuple)\[[^>]*\])>")


def _options(command: Any) -> list[Any]:
    ctx = command.context_class(command, info_name="dataset-devkit")
    return [p for p in command.get_params(ctx) if p.param_type_name == "option"]


def test_every_visible_option_of_every_command_has_help_text() -> None:
    missing = [
        f"{' '.join(path) or 'dataset-devkit'} {param.opts[0]}"
        for path, command in walk_commands(app_module.full_command())
        for param in _options(command)
        if not param.hidden and not (param.help or "").strip()
    ]
    assert missing == []
    assert len(COMMANDS) >= 15  # the walk found the groups' subcommands too


#: One child process prints every help page (a process per page costs a second each).
_ALL_HELP = """
import contextlib, io, json, sys
from dataset_devkit.cli.app import main
pages = {}
for path in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([*path, "--help"])
    pages[" ".join(path)] = out.getvalue()
print(json.dumps(pages))
"""


def test_every_help_page_shows_metavars_not_python_types(package_env: dict[str, str]) -> None:
    env = {**package_env, "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-c", _ALL_HELP, json.dumps(COMMANDS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    pages = {tuple(k.split()): v for k, v in json.loads(done.stdout).items()}
    assert set(pages) == set(COMMANDS)
    for path, page in pages.items():
        assert "Usage: dataset-devkit" in page, (path, page)
        assert _PYTHON_TYPE.findall(page) == [], (path, page)
        for param in _options(dict(walk_commands(app_module.full_command()))[path]):
            if not param.hidden:
                assert param.opts[0] in page, (path, param.opts[0])
    for path, page in pages.items():
        if "--expect-root" in page:  # one spelling of the same value everywhere
            assert re.search(r"--expect-root\s+HEX", page), (path, page)
        if path != ("release", "pack"):
            assert "pack:" not in page, (path, page)  # --json of pack explained on pack only
    pack = pages[("release", "pack")]
    assert "full|sample|none" in pack and "en|zh" in pack
    assert re.search(r"--package-limit\s+SIZE", pack), pack
    assert "--out" in pages[("stereo", "build")].split("Arguments")[0]  # not an absent ROOT
    assert "{DIR}" in pages[("verify",)] and "{DIR}" in pages[("manifest",)]  # as docs/cli.md
    release_verify = pages[("release", "verify")]
    assert "--family" in release_verify and "NAME" in release_verify
    for flag in ("--base", "--depth", "--all"):
        line = next(line for line in release_verify.splitlines() if f" {flag} " in line)
        assert "family" in line.lower(), line


def test_help_paragraphs_are_joined_so_the_terminal_wraps_them() -> None:
    # Typer keeps a docstring's line breaks after the first paragraph: at 80 columns the
    # help broke mid-sentence. Every paragraph is one line (list items stay apart).
    assert unwrap_paragraphs("Title.\n\nOne\nsentence.\n\n- a\n- b\n\n\bkept\nas is") == (
        "Title.\n\nOne sentence.\n\n- a\n- b\n\n\bkept\nas is"
    )
    for path, command in walk_commands(app_module.full_command()):
        for paragraph in (command.help or "").split("\n\n"):
            lines = paragraph.split("\n")
            assert all(line.startswith(("-", "*", " ", "\b")) for line in lines[1:]), path


def test_version_and_completion_are_there(package_env: dict[str, str]) -> None:
    version = run_devkit(package_env, "--version")
    assert version.returncode == 0
    assert version.stdout == f"dataset-devkit {dataset_devkit.__version__}\n"
    # Typer's own test switch: take the shell named here instead of detecting the one the
    # tests run under (shellingham finds none in some process trees, and the flag then
    # prints "Shell  not supported" whatever this project does).
    named = {**package_env, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    completion = run_devkit(named, "--show-completion", "bash")
    assert completion.returncode == 0 and "_DATASET_DEVKIT_COMPLETE" in completion.stdout
    assert "--install-completion" in run_devkit(package_env, "--help").stdout


def test_debug_and_quiet_work_after_the_command_too(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    missing = str(tmp_path / "missing")
    plain = run_devkit(package_env, "verify", missing)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    for argv in (("--debug", "verify", missing), ("verify", missing, "--debug")):
        done = run_devkit(package_env, *argv)
        assert done.returncode == 1
        assert "Traceback" in done.stderr, argv
        assert done.stderr.rstrip().endswith(f"error: {missing}: no such directory")
    write_manifest(tmp_path)
    quiet = run_devkit(package_env, "verify", str(tmp_path), "--quiet")
    assert quiet.returncode == 0 and quiet.stdout.startswith("OK ")


@pytest.mark.parametrize(
    ("old", "new", "command"),
    [
        ("--to", "--out", "publish"),
        ("--location", "--manifest-location", "manifest"),
    ],
)
def test_an_old_spelling_still_works_and_says_it_is_deprecated(
    old: str, new: str, command: str, tmp_path: Path, package_env: dict[str, str]
) -> None:
    tree = tmp_path / "tree"
    (tree / "meta").mkdir(parents=True)
    (tree / "meta" / "a.txt").write_text("a")
    value = str(tmp_path / "final") if command == "publish" else "meta/content_manifest.json"
    done = run_devkit(package_env, command, str(tree), old, value)
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"warning: {old} is deprecated; use {new} (same meaning)\n"
    assert "root_sha256 " in done.stdout
    both = run_devkit(package_env, command, str(tree), old, value, new, value)
    assert both.returncode == 2 and f"give {new} only" in both.stderr
    assert old not in run_devkit(package_env, command, "--help").stdout
