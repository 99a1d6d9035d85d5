"""unpack.py at the real release's size under a macOS-like descriptor limit (256)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dataset_devkit.release import unpack
from tests.release import unpack_script
from tests.release.genvr_tree import PAIRS, craft_genvr_release

LIMIT = 256

# fsync is swapped for fstat in the child: the same descriptor is used and checked (EBADF
# if it were wrong), only the disk flush is skipped, so the test measures descriptors, not
# the disk. Every other call is the shipped script's own.
_RUN = """
import os, resource, runpy, sys
resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit}))
os.fsync = os.fstat
sys.argv = [{script!r}, *{args!r}]
runpy.run_path({script!r}, run_name="__main__")
"""


def _run_limited(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = _RUN.format(limit=LIMIT, script=str(script), args=list(args))
    return subprocess.run(
        [unpack_script.PYTHON, "-I", "-c", code], capture_output=True, text=True, check=False
    )


@pytest.fixture
def roomy_tmp(tmp_path: Path) -> Iterator[Path]:
    """A memory-backed folder when the machine has one with room (58,000 file creations
    take ~5x longer on a shared VM disk), else the usual temporary folder."""
    shm = Path("/dev/shm")
    try:
        free = shutil.disk_usage(shm).free if shm.is_dir() and os.access(shm, os.W_OK) else 0
    except OSError:
        free = 0
    if free < 2 << 30:
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="ddk-unpack-scale-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.unpack_script
def test_a_genvr_sized_release_verifies_and_restores_under_256_descriptors(
    roomy_tmp: Path,
) -> None:
    tmp_path = roomy_tmp
    release = craft_genvr_release(tmp_path / "rel")
    rows = unpack.load_release(str(release)).rows
    assert len(rows) >= 50_000
    assert len({r.path.rsplit("/", 1)[0] for r in rows if "/" in r.path}) >= 10_000
    checked = _run_limited(release / "unpack.py", "--all", "--verify-only", "--quiet")
    assert checked.returncode == 0, checked.stderr[-2000:]
    out = tmp_path / "out"
    restored = _run_limited(release / "unpack.py", "--all", "--quiet", "--output", str(out))
    assert restored.returncode == 0, restored.stderr[-2000:]
    assert f"{len(rows)} files written" in restored.stdout
    found = sum(len(files) for _dir, _dirs, files in os.walk(out / "ds"))
    assert found == len(rows) >= PAIRS * 25


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_walking_a_wide_existing_tree_holds_descriptors_per_level_not_per_directory(
    tmp_path: Path,
) -> None:
    for index in range(300):
        (tmp_path / "wide" / f"d{index:03d}" / "inner").mkdir(parents=True)
        (tmp_path / "wide" / f"d{index:03d}" / "inner" / "f").write_bytes(b"x")
    root = unpack.PinnedDir.open_root(str(tmp_path), create=False)
    before = _open_descriptors()
    peak = 0
    seen = 0
    for _rel, _st, _folder in unpack._existing_tree(root):
        peak = max(peak, _open_descriptors() - before)
        seen += 1
    root.close()
    assert seen == 300
    assert peak <= 4, peak  # wide/, d###/, inner/ (+ a listing): the depth, not the width


@pytest.mark.parametrize("mode", ["syncfs", "per-file fsync"])
def test_restoring_into_many_directories_holds_a_bounded_number_of_descriptors(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process with real fsync: 700 directories, never all pinned at once."""
    if mode == "per-file fsync":  # the portable mode, used where syncfs does not exist
        monkeypatch.setattr(unpack, "_syncfs_cache", [None])
    release = craft_genvr_release(tmp_path / "rel", pairs=100, packages=2)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    peak = [0]
    real_open_new = unpack.PinnedDir.open_new

    def open_new(self: unpack.PinnedDir, name: str, mode: int = 0o644) -> int:
        peak[0] = max(peak[0], _open_descriptors())
        return real_open_new(self, name, mode)

    before = _open_descriptors()
    monkeypatch.setattr(unpack.PinnedDir, "open_new", open_new)
    unpack.unpack_release(str(release), str(tmp_path / "out"), everything=True)
    assert soft >= LIMIT and hard >= LIMIT
    # 2 workers x (a package, a file and the chain of folders to it)
    assert peak[0] - before < 30, (peak[0], before)
