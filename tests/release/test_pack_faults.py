"""A full disk or a kill at any moment: the re-run of the same ``release pack`` finishes.

Faults are real (``RLIMIT_FSIZE`` fails writes with ``EFBIG`` like a full disk; SIGKILL),
and the re-run is the same command with nothing removed by hand.
"""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dataset_devkit.cli.app import main
from dataset_devkit.release import verify_release
from tests.release.helpers import make_tree
from tests.scale_tree import run_limited

FILES = {f"ue5-pro/map0001/scene{n:04d}/cams00/meta.json": b"{}\n" * n for n in range(80)}


def test_a_full_disk_while_a_package_is_written_names_it_and_the_rerun_packs(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    tree = make_tree(tmp_path / "ds", FILES)
    release = tmp_path / "release"
    args = ["release", "pack", str(tree), "--out", str(release)]
    failed = run_limited(package_env, args, fsize=16384)
    assert failed.returncode == 1
    line = failed.stderr.strip()
    assert line.startswith("error: File too large: ")
    assert line.endswith("/base/base-0001.tar")
    assert [p.name for p in tmp_path.iterdir() if p.name != "ds"] == []
    done = run_limited(package_env, args)
    assert done.returncode == 0, done.stderr
    assert verify_release(release, []).packages == 1


@pytest.mark.parametrize("where", ["package", "metadata"])
def test_enospc_names_the_file_on_the_command_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    tree = make_tree(tmp_path / "ds", FILES)
    real_write = os.write
    target = "base-0001.tar" if where == "package" else "files.jsonl"

    def full_disk(fd: int, data: bytes | memoryview) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(target):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(SystemExit) as exit_code:
        main(["release", "pack", str(tree), "--out", str(tmp_path / "release")])
    assert exit_code.value.code == 1
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: No space left on device: ")
    assert line.endswith(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


_KILLED_IN_RESTORE_TEST = (
    "import os, signal, sys\n"
    "from dataset_devkit.release import unpack, validate\n"
    "def killed(*args, **kwargs):\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n"
    "unpack.unpack_release = killed\n"
    "from dataset_devkit.cli.app import main\n"
    "main(['release', 'pack', sys.argv[1], '--out', sys.argv[2]])\n"
)


def test_pack_killed_during_its_restore_test_is_cleaned_by_the_rerun(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    tree = make_tree(tmp_path / "ds", FILES)
    release = tmp_path / "release"
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_IN_RESTORE_TEST, str(tree), str(release)],
        env=package_env,
        capture_output=True,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert [name.rsplit("-", 1)[0] for name in left] == [
        ".release.restore-test.staging",
        ".release.staging",
    ]
    done = run_limited(package_env, ["release", "pack", str(tree), "--out", str(release)])
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "release"]


@pytest.mark.parametrize(
    ("files", "options", "packages"),
    [
        (400, [], 1),
        # many packages written by two worker processes
        (900, ["--package-limit", "65536", "--workers", "2"], 18),
    ],
    ids=["one-package", "two-workers"],
)
def test_pack_killed_at_random_moments_is_finished_by_the_same_command(
    tmp_path: Path, package_env: dict[str, str], files: int, options: list[str], packages: int
) -> None:
    chance = random.Random(7)
    tree = make_tree(tmp_path / "ds", {f"d{n % 9}/{n:04d}.bin": b"x" * n for n in range(files)})
    for trial in range(2):
        release = tmp_path / f"release{trial}"
        args = ["release", "pack", str(tree), "--out", str(release), *options]
        child = subprocess.Popen(
            [sys.executable, "-m", "dataset_devkit", *args],
            env=package_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(chance.uniform(0.4, 1.6))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        rerun = run_limited(package_env, args)
        if rerun.returncode != 0:  # only when the kill came after the rename
            assert "already exists" in rerun.stderr, rerun.stderr
        assert verify_release(release, []).packages == packages
        leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
        assert leftovers == []


def test_a_restore_test_failure_is_reported_even_when_its_scratch_cannot_be_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.release import PackOptions, ReleaseVerificationError, pack_release, validate
    from dataset_devkit.release import unpack as unpack_mod

    tree = make_tree(tmp_path / "ds", FILES)

    def out_of_descriptors(*_args: object, **_kwargs: object) -> None:
        raise unpack_mod.UnpackError("scene0247: cannot open (Too many open files)")

    def removal_fails_too(_path: Path) -> None:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(unpack_mod, "unpack_release", out_of_descriptors)
    monkeypatch.setattr(validate, "remove_staging", removal_fails_too)
    with pytest.raises(ReleaseVerificationError, match="restore test of the new release failed"):
        pack_release(tree, tmp_path / "release", PackOptions())
    monkeypatch.undo()
    pack_release(tree, tmp_path / "release")  # the leftover scratch is removed by the re-run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "release"]
