"""Re-runs heal: a restore killed at any moment is finished by running the same command;
two runs into one output take turns on an advisory lock."""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dataset_devkit.release import unpack
from tests.release import unpack_script
from tests.release.genvr_tree import craft_genvr_release
from tests.release.test_unpack_scale import roomy_tmp  # noqa: F401 - a fixture

SEED = 20261130
TRIALS = 5
#: Under a loaded machine a random kill can land after a fast restore already finished:
#: trials go on (up to this many) until at least one kill hit a restore mid-way.
MAX_TRIALS = 15


def _start(release: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [unpack_script.PYTHON, "-I", str(release / "unpack.py"), "--all", "--output", str(out)]
    return subprocess.Popen(
        [*argv, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _mid_restore(out: Path) -> bool:
    """A restore is under way: its journal names the packages being written (files at
    their final names may be partial until it is gone)."""
    return (out / "ds.unpack-journal.json").exists()


def _restored_root(tree: Path) -> str:
    entries = []
    for dirpath, _dirs, files in os.walk(tree):
        for name in files:
            path = Path(dirpath) / name
            data = path.read_bytes()
            rel = path.relative_to(tree).as_posix()
            entries.append((rel, len(data), hashlib.sha256(data).hexdigest()))
    return unpack.root_sha256(entries)


@pytest.mark.unpack_script
def test_a_restore_killed_at_random_moments_is_finished_by_running_it_again(
    roomy_tmp: Path,  # noqa: F811
) -> None:
    release = craft_genvr_release(roomy_tmp / "rel", pairs=50, packages=6)
    expected = unpack.load_release(str(release)).snapshot_root
    timing = _start(release, roomy_tmp / "timing", "--quiet")
    started = time.monotonic()
    assert timing.wait(120) == 0, timing.communicate()[1]
    full = time.monotonic() - started
    rng = random.Random(SEED)
    killed_mid_restore = 0
    for trial in range(MAX_TRIALS):
        if trial >= TRIALS and killed_mid_restore:
            break
        out = roomy_tmp / f"out{trial}"
        for kill in range(2):  # two kills in a row, then the re-run that must finish
            proc = _start(release, out, "--quiet")
            if kill == 0:  # at a random moment
                time.sleep(rng.uniform(0.02, full))
            else:  # right after a random number of files is mid-write (load varies)
                time.sleep(rng.uniform(0.0, 0.2))
                deadline = time.monotonic() + 2 * full + 5
                while time.monotonic() < deadline and not _mid_restore(out):
                    time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            killed_mid_restore += bool(_mid_restore(out))
        rerun = _start(release, out)
        stdout, stderr = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, f"trial {trial}: {stderr}"
        assert stdout.startswith("OK: base, depth restored"), stdout
        assert "delete" not in stderr
        assert _restored_root(out / "ds") == expected, f"trial {trial}"
        assert sorted(os.listdir(out)) == ["ds", "ds.unpack-index.jsonl", "ds.unpack-state.json"]
    # The kills must have hit mid-restore (the journal present) at least once.
    assert killed_mid_restore >= 1


@pytest.fixture
def small_release(tmp_path: Path) -> Path:
    return craft_genvr_release(tmp_path / "rel", pairs=4, packages=2)


def _hold_lock(out: Path, pid: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / "ds.unpack.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{pid}\n".encode())
    return fd


@pytest.mark.unpack_script
def test_a_second_run_into_a_busy_output_names_the_first_and_never_its_files(
    small_release: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    fd = _hold_lock(out, 4242)
    try:
        busy = _start(small_release, out, "--no-wait")
        _stdout, stderr = busy.communicate(timeout=60)
        assert busy.returncode == 1
        assert f"another restore is running into {out} (pid 4242)" in stderr
        assert "delete" not in stderr
        assert not (out / "ds").exists()
        waiting = _start(small_release, out, "--quiet")
        time.sleep(1.0)
        assert waiting.poll() is None, "did not wait for the lock"
    finally:
        os.close(fd)  # the first run ends
    stdout, stderr = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, stderr
    assert "(pid 4242); waiting for it to finish" in stderr
    assert stdout.startswith("OK: base, depth restored")


@pytest.mark.unpack_script
def test_two_runs_started_together_both_end_ok_with_the_tree_complete(
    small_release: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    runs = [_start(small_release, out, "--quiet") for _ in range(3)]
    results = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [r[1] for r in results]
    written = sorted(int(r[0].split(": ")[-1].split(" files written")[0]) for r in results)
    total = len(unpack.load_release(str(small_release)).rows)
    assert written == [0, 0, total]
    expected = unpack.load_release(str(small_release)).snapshot_root
    assert _restored_root(out / "ds") == expected


@pytest.mark.unpack_script
def test_leftovers_of_a_killed_run_are_removed_by_the_next(
    small_release: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    folder = out / "ds" / "ue5-pro" / "map0000"
    folder.mkdir(parents=True)
    (folder / ".unpack-0123456789ab.tmp").write_bytes(b"half a fi")
    (out / ".ds.unpack-state.json.999.tmp").write_bytes(b'{"na')
    notes: list[str] = []
    unpack_script.unpack_release(str(small_release), str(out), everything=True, log=notes.append)
    assert "removed 1 temporary files left by an interrupted run" in notes
    assert not (folder / ".unpack-0123456789ab.tmp").exists()
    assert sorted(os.listdir(out)) == ["ds", "ds.unpack-index.jsonl", "ds.unpack-state.json"]
