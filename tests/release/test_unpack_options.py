"""--expect-root, --readable-by, and machine errors (full disk, permission) naming the file."""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.release import unpack
from tests.cli_run import run_devkit
from tests.release import unpack_script
from tests.release.helpers import SAMPLE, make_tree, pack, read_tree
from tests.tty_run import run_program_on_tty

DEPTH = "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/"


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="none")


def _root(release: Path) -> str:
    return unpack.load_release(str(release)).snapshot_root


def _modes(tree: Path) -> set[tuple[str, int]]:
    found = {("dir", stat.S_IMODE(os.lstat(tree).st_mode))}
    for dirpath, dirs, files in os.walk(tree):
        for name in dirs:
            found.add(("dir", stat.S_IMODE(os.lstat(Path(dirpath) / name).st_mode)))
        for name in files:
            found.add(("file", stat.S_IMODE(os.lstat(Path(dirpath) / name).st_mode)))
    return found


# --------------------------------------------------------------------------- --expect-root


@pytest.mark.unpack_script
def test_expect_root_accepts_the_pinned_snapshot_in_any_case(release: Path, tmp_path: Path) -> None:
    root = _root(release)
    unpack_script.verify_release(str(release), everything=True, expect_root=root.upper())
    summary = unpack_script.unpack_release(
        str(release), str(tmp_path / "out"), everything=True, expect_root=root
    )
    assert summary.written == len(SAMPLE)


@pytest.mark.unpack_script
@pytest.mark.parametrize("pinned", ["0" * 64, "f" * 64])
def test_expect_root_refuses_another_snapshot_before_writing_anything(
    release: Path, tmp_path: Path, pinned: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["--all", "--release-dir", str(release), "--expect-root", pinned]
    assert unpack_script.main([*argv, "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"is snapshot root_sha256 {_root(release)}, not the expected {pinned}" in err
    assert not out.exists()
    assert unpack_script.main([*argv, "--verify-only"]) == 1
    assert "(--expect-root)" in capsys.readouterr().err


@pytest.mark.unpack_script
def test_expect_root_that_is_not_a_sha256_is_named(release: Path, tmp_path: Path) -> None:
    with pytest.raises(unpack.UnpackError, match="expected 64 hexadecimal digits"):
        unpack_script.unpack_release(
            str(release), str(tmp_path / "o"), everything=True, expect_root="abc"
        )


def test_release_commands_take_expect_root(
    release: Path, tmp_path: Path, package_env: dict[str, str]
) -> None:
    wrong = "1" * 64
    verified = run_devkit(package_env, "release", "verify", str(release), "--expect-root", wrong)
    assert verified.returncode == 1
    assert "not the expected " + wrong in verified.stderr
    out = tmp_path / "out"
    restored = run_devkit(
        package_env,
        "release",
        "unpack",
        str(release),
        "--all",
        "--output",
        str(out),
        "--expect-root",
        _root(release),
        "--readable-by",
        "group",
    )
    assert restored.returncode == 0, restored.stderr
    assert _modes(out / "ds") == {("dir", 0o550), ("file", 0o440)}


# --------------------------------------------------------------------------- --readable-by


@pytest.mark.parametrize(
    ("choice", "modes"),
    [
        ("owner", {("dir", 0o500), ("file", 0o400)}),
        ("group", {("dir", 0o550), ("file", 0o440)}),
        ("all", {("dir", 0o555), ("file", 0o444)}),
    ],
)
@pytest.mark.unpack_script
def test_readable_by_sets_every_restored_file_and_directory_mode(
    release: Path, tmp_path: Path, choice: str, modes: set[tuple[str, int]]
) -> None:
    out = tmp_path / "out"
    old = os.umask(0o077)  # a strict umask must not take away what the user asked for
    try:
        argv = ["--all", "--quiet", "--release-dir", str(release), "--output", str(out)]
        assert unpack_script.main([*argv, "--readable-by", choice]) == 0
    finally:
        os.umask(old)
    assert _modes(out / "ds") == modes
    assert read_tree(out / "ds") == SAMPLE


@pytest.mark.unpack_script
def test_a_rerun_with_another_choice_leaves_what_it_verifies_as_it_was(
    release: Path, tmp_path: Path
) -> None:
    """--readable-by sets the modes of what a run creates; skipping a file or passing
    through a folder that is there already leaves it untouched (``chmod`` changes those)."""
    out = tmp_path / "out"
    unpack_script.unpack_release(str(release), str(out), everything=True)
    again = unpack_script.unpack_release(str(release), str(out), everything=True, readable_by="all")
    assert again.skipped == len(SAMPLE)
    assert _modes(out / "ds") == {("dir", 0o500), ("file", 0o400)}


@pytest.fixture
def world_readable_tmp() -> Iterator[Path]:
    """A folder another user can enter (pytest's own are 0700 and root's)."""
    folder = Path(tempfile.mkdtemp(prefix="ddk-unpack-modes-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for dirpath, _dirs, _files in os.walk(folder):
            os.chmod(dirpath, 0o755)
        shutil.rmtree(folder)


def test_a_family_added_later_goes_into_a_sealed_tree_as_an_ordinary_user(
    world_readable_tmp: Path,
) -> None:
    """Root ignores modes; the owner of a sealed 0500 tree does not: run as that owner."""
    release = pack(
        make_tree(world_readable_tmp / "ds"), world_readable_tmp / "rel", restore_test="none"
    )
    out = world_readable_tmp / "out"
    out.mkdir()
    for dirpath, _dirs, files in os.walk(release):
        os.chmod(dirpath, 0o755)
        for name in files:
            os.chmod(Path(dirpath) / name, 0o644)
    user: dict[str, Any] = {}
    python = sys.executable
    system_python = shutil.which("python3", path=os.defpath)
    if os.geteuid() == 0 and system_python:  # the venv's interpreter may sit in root's home
        os.chown(out, 65534, 65534)
        user = {"user": 65534, "group": 65534, "extra_groups": []}
        python = system_python

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [python, "-I", str(release / "unpack.py"), *args, "--output", str(out)]
        return subprocess.run(argv, capture_output=True, text=True, check=False, **user)

    first = run("--base")
    assert first.returncode == 0, first.stderr
    assert ("dir", 0o500) in _modes(out / "ds")
    second = run("--depth")
    assert second.returncode == 0, second.stderr
    assert read_tree(out / "ds") == SAMPLE
    assert _modes(out / "ds") == {("dir", 0o500), ("file", 0o400)}


# --------------------------------------------------------------------------- machine errors


class _Machine:
    """``os`` as unpack.py sees it, with one call failing the way a full disk fails."""

    def __init__(self, call: str, code: int) -> None:
        self.call, self.code = call, code

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _fail(self) -> None:
        raise OSError(self.code, os.strerror(self.code))

    def write(self, fd: int, data: Any) -> int:
        if self.call == "write" and "/out/ds/" in os.readlink(f"/proc/self/fd/{fd}"):
            self._fail()
        return os.write(fd, data)

    def mkdir(self, *args: Any, **kw: Any) -> None:
        if self.call == "mkdir":
            self._fail()
        os.mkdir(*args, **kw)


@pytest.mark.parametrize(
    ("call", "code", "text"),
    [
        ("write", errno.ENOSPC, "No space left on device"),
        ("write", errno.EDQUOT, "Disk quota exceeded"),
        ("mkdir", errno.EACCES, "Permission denied"),
    ],
)
def test_machine_errors_name_the_file_and_leave_no_partial_file(
    release: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    call: str,
    code: int,
    text: str,
) -> None:
    out = tmp_path / "out"
    (out / "ds").mkdir(parents=True)
    monkeypatch.setattr(unpack, "os", _Machine(call, code))
    argv = ["--all", "--quiet", "--release-dir", str(release), "--output", str(out)]
    assert unpack.main(argv) == 1
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"FAILED: {text}: {out / 'ds'}/"), line
    assert "\n" not in line
    assert not [p for p in (out / "ds").rglob("*") if p.is_file()]
    assert not (out / "ds.unpack-state.json").exists()


@pytest.mark.unpack_script
def test_a_real_file_size_limit_is_named_too(release: Path, tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes the kernel refuse a write (EFBIG), as a full disk would."""
    code = (
        "import resource, runpy, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
        f"sys.argv = ['unpack.py', '--all', '--quiet', '--output', {str(tmp_path / 'o')!r}]\n"
        f"runpy.run_path({str(release / 'unpack.py')!r}, run_name='__main__')\n"
    )
    done = subprocess.run(
        [unpack_script.PYTHON, "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"FAILED: File too large: {tmp_path / 'o' / 'ds'}/")


# --------------------------------------------------------------------------- progress


class _Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("tty", "quiet", "shown"), [(True, False, True), (False, False, False), (True, True, False)]
)
def test_byte_progress_is_one_line_on_a_terminal_only(
    release: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tty: bool,
    quiet: bool,
    shown: bool,
) -> None:
    err = _Terminal(tty)
    monkeypatch.setattr(sys, "stderr", err)
    argv = ["--all", "--release-dir", str(release), "--output", str(tmp_path / "o")]
    assert unpack.main(argv + (["--quiet"] if quiet else [])) == 0
    text = err.getvalue()
    assert ("\rrestoring: " in text) is shown
    total = sum(len(b) for b in SAMPLE.values()) / 2**20
    if shown:
        assert f"of {total:.1f} MiB (100%)" in text
        assert "\n" not in text.split("\rrestoring: ", 1)[1].split("\r\x1b[K")[0]


@pytest.mark.unpack_script
def test_the_shipped_script_draws_one_self_overwriting_line_on_a_real_terminal(
    release: Path, tmp_path: Path
) -> None:
    # As a downloader runs it: `python unpack.py` from the release folder, stdlib only (-I:
    # no PYTHONPATH, no user site), stdout and stderr on one pseudo-terminal.
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    argv = ("-I", "unpack.py", "--all", "--no-fsync", "--output")
    python = unpack_script.PYTHON
    code, shown = run_program_on_tty(
        env, *argv, str(tmp_path / "o"), cwd=str(release), python=python
    )
    assert code == 0, shown
    total = sum(len(b) for b in SAMPLE.values()) / 2**20
    # On Linux each package is hashed in the read that restores it (no separate check
    # pass, so no `checking:` line): one restoring line, redrawn in place and cleared.
    assert "checking: " not in shown, shown
    assert f"\rrestoring: {total:.1f} of {total:.1f} MiB (100%)\r\x1b[K" in shown, shown
    lines = shown.split("\r\n")
    assert not [line for line in lines if "ing: " in line and "\x1b[K" not in line]
    assert lines[-2].startswith("OK: ") and "restored into" in lines[-2], shown
    code, shown = run_program_on_tty(
        env, *argv, str(tmp_path / "q"), "--quiet", cwd=str(release), python=python
    )
    assert code == 0 and "restoring:" not in shown and "OK: " in shown, shown
