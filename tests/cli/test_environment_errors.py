"""A full disk, a closed pipe, a missing permission or Ctrl-C: one line, never a traceback."""

from __future__ import annotations

import errno
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from dataset_devkit.integrity import write_manifest

# The module, not the Typer object ``dataset_devkit.cli.app`` also names.
app_module = importlib.import_module("dataset_devkit.cli.app")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for i in range(200):
        (root / f"file-{i:03d}.txt").write_text(f"{i}\n")
    write_manifest(root)
    return root


def test_json_to_a_full_disk_is_one_error_line(tree: Path, package_env: dict[str, str]) -> None:
    with Path("/dev/full").open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "dataset_devkit", "verify", str(tree), "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=package_env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr.strip() == "error: No space left on device"


def test_a_reader_that_goes_away_ends_the_command_without_a_traceback(
    tree: Path, package_env: dict[str, str]
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "dataset_devkit", "verify", str(tree), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=package_env,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # like `| head` exiting before the command writes (Click's EPIPE path)
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 1
    assert "Traceback" not in stderr
    assert stderr == ""


class _Raising:
    """Stands for the Click command tree: running it raises *exc*."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def main(self, **_: object) -> None:
        raise self.exc


def _main_raising(
    monkeypatch: pytest.MonkeyPatch, exc: BaseException, *argv: str
) -> pytest.ExceptionInfo[SystemExit]:
    monkeypatch.setattr(app_module, "command_for", lambda args: _Raising(exc))
    with pytest.raises(SystemExit) as stopped:
        app_module.main(list(argv))
    return stopped


def test_an_environment_error_names_its_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    denied = PermissionError(errno.EACCES, "Permission denied", "/data/out/part-0")
    assert _main_raising(monkeypatch, denied, "verify", "x").value.code == 1
    assert capsys.readouterr().err.strip() == "error: Permission denied: /data/out/part-0"


def test_debug_adds_the_traceback_to_an_environment_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    assert _main_raising(monkeypatch, full, "--debug", "verify", "x").value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.rstrip().endswith("error: No space left on device")


def test_an_os_error_that_is_not_about_the_environment_stays_a_bug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raising = _Raising(OSError(errno.EBADF, "Bad file descriptor"))
    monkeypatch.setattr(app_module, "command_for", lambda args: raising)
    with pytest.raises(OSError, match="Bad file descriptor"):
        app_module.main(["verify", "x"])


def test_ctrl_c_exits_130_saying_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main_raising(monkeypatch, KeyboardInterrupt(), "demo").value.code == 130
    assert capsys.readouterr().err.strip() == "interrupted"
