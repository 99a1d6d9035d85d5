"""Progress bars: drawn on a terminal, never in pipes, with ``--quiet`` or with ``--json``."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from dataset_devkit.cli import progress as cli_progress
from dataset_devkit.integrity import write_manifest
from dataset_devkit.integrity.progress import ProgressUpdate
from tests.cli_run import run_devkit
from tests.tty_run import BAR, assert_full, last_frames, run_on_tty


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("progress") / "ds"
    for i in range(40):
        (root / f"part-{i % 4}").mkdir(parents=True, exist_ok=True)
        (root / f"part-{i % 4}" / f"{i:03d}.bin").write_bytes(bytes([i]) * (64 << 10))
    write_manifest(root)
    return root


@pytest.fixture(scope="module")
def release(tree: Path) -> Path:
    from dataset_devkit.release import PackOptions, pack_release

    out = tree.parent / "ds-packages"
    pack_release(tree, out, PackOptions(package_limit=1 << 20))
    return out


def test_verify_manifest_and_publish_show_bytes_and_files_done_rate_and_time(
    tree: Path, tmp_path: Path, package_env: dict[str, str]
) -> None:
    code, shown = run_on_tty(package_env, "verify", str(tree))
    assert code == 0 and "OK " in shown, shown
    assert_full(last_frames(shown)["verify"], 40)  # the manifest itself is not hashed
    code, shown = run_on_tty(package_env, "manifest", str(tree), "--print")
    assert code == 0, shown
    assert_full(last_frames(shown)["hash"], 40)
    staging = tmp_path / "staging"
    shutil.copytree(tree, staging, ignore=shutil.ignore_patterns("content_manifest.json"))
    code, shown = run_on_tty(package_env, "publish", str(staging), "--out", str(tmp_path / "p"))
    assert code == 0, shown
    frames = last_frames(shown)
    assert_full(frames["hash"], 40)  # the manifest written, then the sealed tree checked
    assert_full(frames["verify"], 40)
    code, shown = run_on_tty(package_env, "validate", str(tmp_path / "p"))
    assert code == 0, shown
    assert_full(last_frames(shown)["verify"], 40)


def test_release_pack_verify_and_unpack_show_files_or_packages_done(
    tree: Path, release: Path, tmp_path: Path, package_env: dict[str, str]
) -> None:
    packages = len(json.loads((release / "manifest.json").read_text())["packages"])
    code, shown = run_on_tty(
        package_env, "release", "pack", str(tree), "--out", str(tmp_path / "r")
    )
    assert code == 0, shown
    assert_full(last_frames(shown)["pack"], 41)  # the tree's manifest ships too
    code, shown = run_on_tty(package_env, "release", "verify", str(release))
    assert code == 0, shown
    assert_full(last_frames(shown)["verify"], packages, "packages")
    code, shown = run_on_tty(
        package_env, "release", "unpack", str(release), "--all", "--out", str(tmp_path / "d")
    )
    assert code == 0, shown
    frames = last_frames(shown)
    # On Linux each package is hashed in the read that restores it: one restore bar. The
    # separate check bar is drawn only where the check is a pass of its own (no syncfs).
    assert list(frames) == ["restore"]
    assert_full(frames["restore"], 41)


def test_no_bar_with_quiet_or_json_even_on_a_terminal(
    tree: Path, package_env: dict[str, str]
) -> None:
    code, shown = run_on_tty(package_env, "verify", str(tree), "--quiet")
    assert code == 0 and BAR not in shown and "OK " in shown
    code, shown = run_on_tty(
        package_env, "--quiet", "release", "verify", str(tree.parent / "ds-packages")
    )
    assert code == 0 and BAR not in shown
    code, shown = run_on_tty(package_env, "verify", str(tree), "--json")
    assert code == 0 and BAR not in shown
    report = json.loads(shown.replace("\r\n", "\n"))  # the terminal holds the report alone
    assert report["ok"] is True


def test_no_bar_and_nothing_on_stderr_when_output_is_not_a_terminal(
    tree: Path, release: Path, package_env: dict[str, str]
) -> None:
    for argv in (("verify", str(tree)), ("release", "verify", str(release))):
        done = run_devkit(package_env, *argv)
        assert done.returncode == 0
        assert BAR not in done.stdout and done.stderr == ""


def test_a_stage_done_in_one_update_still_shows_its_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rich's windowed speed needs two updates apart in time; a quick stage (three small
    # packages hashed in a millisecond) showed no rate at all. It falls back to the average.
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    monkeypatch.setattr(cli_progress, "bars_enabled", lambda: True)
    monkeypatch.setattr(cli_progress, "stderr_console", lambda: console)
    with cli_progress.progress_bar() as advance:
        assert advance is not None
        advance(ProgressUpdate("check packages", nbytes=3000, total_bytes=3000))
        advance(ProgressUpdate("read back", items=3, total_items=3, unit="pairs"))
    shown = last_frames(console.file.getvalue())  # type: ignore[attr-defined]
    assert re.search(r"2\.9 KiB/2\.9 KiB +\d[\d.]* (?:B|[KMGT]iB)/s", shown["check packages"])
    assert re.search(r"3/3 pairs +\d[\d.]* pairs/s", shown["read back"])
