"""A restore into a tree the user already has, and a restore that fails: the user's files
and folders stay exactly as they were (bytes, mode, mtime), and a failure that wrote
nothing leaves nothing behind (no folder, no journal)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dataset_devkit.release import ReleaseVerificationError, restore_release, unpack
from tests.release.helpers import SAMPLE, make_tree, pack, read_tree

SRC = str(Path(unpack.__file__).resolve().parents[2])
DEPTH_FILE = "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/group.zarr/left/0.0.0"
BASE_FILE = "ue5-pro/map0001/scene0001/cams01/videos/left.mp4"


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="none")


def _state(tree: Path) -> dict[str, tuple[str, int, int, bytes]]:
    """Every entry below and including *tree*: kind, mode, mtime (ns) and file bytes."""
    out = {}
    for path in [tree, *sorted(tree.rglob("*"))]:
        st = path.lstat()
        kind = "dir" if stat.S_ISDIR(st.st_mode) else "file"
        data = path.read_bytes() if kind == "file" else b""
        out[path.relative_to(tree).as_posix()] = (
            kind,
            stat.S_IMODE(st.st_mode),
            st.st_mtime_ns,
            data,
        )
    return out


def _native_tar(release: Path, out: Path, families: tuple[str, ...]) -> None:
    """What a user without unpack.py does: GNU tar, modes from the archive and the umask."""
    out.mkdir(parents=True, exist_ok=True)
    for family in families:
        for package in sorted((release / family).glob("*.tar")):
            subprocess.run(["tar", "-xf", str(package), "-C", str(out)], check=True)


def _user_modes(tree: Path) -> None:
    """Modes a user may well have: none of them the ones a restore sets."""
    (tree / "README.md").chmod(0o600)
    (tree / BASE_FILE).chmod(0o664)
    (tree / "ue5-pro").chmod(0o750)
    (tree / "ue5-pro/map0001").chmod(0o555)  # read-only: the restore must open it, then not
    os.utime(tree / "genvr_i2s.jsonl", ns=(10**18, 10**18))


def _run(release: Path, out: Path, *args: str) -> int:
    return unpack.main(["--quiet", "--release-dir", str(release), "--output", str(out), *args])


@pytest.mark.parametrize("readable_by", ["owner", "group", "all"])
def test_identical_files_the_user_has_are_verified_and_left_untouched(
    release: Path, tmp_path: Path, readable_by: str
) -> None:
    out = tmp_path / "out"
    _native_tar(release, out, ("base", "depth"))
    _user_modes(out / "ds")
    before = _state(out / "ds")
    assert _run(release, out, "--all", "--readable-by", readable_by) == 0
    assert _state(out / "ds") == before  # bytes, modes and mtimes, files and folders
    # and it is a restored tree now: verify and re-runs know it
    assert (out / "ds.unpack-state.json").is_file()
    assert not (out / "ds.unpack-journal.json").exists()
    assert _run(release, out, "--all") == 0
    assert _state(out / "ds") == before


def test_a_family_added_to_the_users_tree_is_sealed_and_the_users_part_is_not(
    release: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    _native_tar(release, out, ("base",))
    _user_modes(out / "ds")
    before = _state(out / "ds")
    assert _run(release, out, "--all") == 0
    after = _state(out / "ds")
    assert read_tree(out / "ds") == SAMPLE
    for rel, (kind, mode, mtime, data) in before.items():
        assert after[rel][1] == mode, rel  # every mode of theirs, files and folders
        if kind == "file":
            assert after[rel][2:] == (mtime, data), rel
    new = {rel: entry for rel, entry in after.items() if rel not in before}
    assert DEPTH_FILE in new
    assert {(kind, mode) for kind, mode, _, _ in new.values()} == {("dir", 0o500), ("file", 0o400)}


def test_a_run_killed_in_the_users_tree_heals_and_still_leaves_their_files(
    release: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    _native_tar(release, out, ("base",))
    (out / "ds" / "ue5-pro").chmod(0o750)
    (out / "ds" / "README.md").chmod(0o600)
    before = _state(out / "ds")
    # SIGKILLed halfway through a depth file: the journal names what was the user's
    killer = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {SRC!r})\n"
        "from dataset_devkit.release import unpack\n"
        "real = unpack._write_all\n"
        "def write(fd, data, where):\n"
        "    if where.endswith(sys.argv[1]):\n"
        "        real(fd, data[: len(data) // 2], where)\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    real(fd, data, where)\n"
        "unpack._write_all = write\n"
        "unpack.main(sys.argv[2:])\n"
    )
    argv = ["--all", "--quiet", "--release-dir", str(release), "--output", str(out)]
    killed = subprocess.run(
        [sys.executable, "-I", "-c", killer, DEPTH_FILE, *argv], capture_output=True, check=False
    )
    assert killed.returncode == -9
    assert (out / "ds.unpack-journal.json").is_file()
    assert _run(release, out, "--all") == 0
    after = _state(out / "ds")
    assert read_tree(out / "ds") == SAMPLE
    for rel, entry in before.items():
        assert after[rel][1] == entry[1], rel
    assert after[DEPTH_FILE][1] == 0o400
    assert after[str(Path(DEPTH_FILE).parent.as_posix())][1] == 0o500
    assert not (out / "ds.unpack-journal.json").exists()


def _damage_last_member(release: Path, family: str) -> None:
    """Same size, other bytes: only the package's SHA-256 (or a member's) can tell."""
    package = sorted((release / family).glob("*.tar"))[-1]
    package.chmod(0o644)
    data = bytearray(package.read_bytes())
    end = len(data) - 1024  # before the end-of-archive blocks
    at = max(i for i in range(end) if data[i] not in (0,))
    data[at] ^= 0xFF
    package.write_bytes(bytes(data))


@pytest.mark.parametrize("output", ["absent/and/deep", "empty"])
def test_a_damaged_package_that_writes_nothing_leaves_nothing(
    release: Path, tmp_path: Path, output: str
) -> None:
    for package in (release / "depth").glob("*.tar"):
        package.chmod(0o644)
        data = bytearray(package.read_bytes())
        data[600] ^= 0xFF  # the first member's data: the run fails on its first file
        package.write_bytes(bytes(data))
    out = tmp_path / output
    if output == "empty":
        out.mkdir()
    assert _run(release, out, "--depth") == 1
    if output == "empty":
        assert list(out.iterdir()) == []
    else:
        assert not (tmp_path / "absent").exists()
    with pytest.raises(ReleaseVerificationError, match="do not verify"):
        restore_release(release, out, ["depth"], fsync=False)
    assert not out.exists() or list(out.iterdir()) == []


def test_a_package_damaged_after_files_were_written_keeps_the_journal_and_heals(
    release: Path, tmp_path: Path
) -> None:
    _damage_last_member(release, "base")
    out = tmp_path / "out"
    assert _run(release, out, "--base") == 1
    written = [p for p in (out / "ds").rglob("*") if p.is_file()]
    assert written  # the packages before the damaged one were restored
    assert (out / "ds.unpack-journal.json").is_file()
    pack(make_tree(tmp_path / "again" / "ds"), tmp_path / "clean", restore_test="none")
    assert _run(tmp_path / "clean", out, "--all") == 0
    assert read_tree(out / "ds") == SAMPLE
    assert not (out / "ds.unpack-journal.json").exists()


@pytest.mark.parametrize("same_size", [True, False])
def test_a_conflicting_file_that_stops_the_restore_leaves_nothing_of_it(
    release: Path, tmp_path: Path, same_size: bool
) -> None:
    out = tmp_path / "out"
    _native_tar(release, out, ("base",))
    (out / "ds" / "ue5-pro").chmod(0o550)
    conflict = out / "ds" / "README.md"
    conflict.write_bytes(b"# sample?" if same_size else b"# my notes\n")
    before = _state(out / "ds")
    assert _run(release, out, "--base") == 1  # every other base file is there: none written
    assert _state(out / "ds") == before
    assert sorted(p.name for p in out.iterdir()) == ["ds"]  # no journal, no lock, no state
    # with the depth family to write it is not "nothing": those files stay, with a journal
    assert _run(release, out, "--all") == 1
    if same_size:  # found while restoring: depth was written, the journal stays to heal
        assert (out / "ds" / DEPTH_FILE).is_file()
        assert (out / "ds.unpack-journal.json").is_file()
    else:  # refused before anything is written
        assert not (out / "ds" / DEPTH_FILE).exists()
        assert sorted(p.name for p in out.iterdir()) == ["ds"]
    assert _state(out / "ds")["README.md"] == before["README.md"]
    assert _state(out / "ds")["ue5-pro"][1] == 0o550
