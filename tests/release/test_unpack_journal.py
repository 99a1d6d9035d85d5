"""The restore journal: files are written at their final names, and a run killed at any
moment leaves a journal naming the packages it was writing, so the next run rewrites their
partial files and never touches anyone else's."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from dataset_devkit.release import unpack
from tests.release import unpack_script
from tests.release.helpers import (
    SAMPLE,
    craft_release,
    file_info,
    make_tree,
    pack,
    read_tree,
    row,
    tar_bytes,
)

BIG = "ue5-pro/map0001/scene0001/cams01/videos/left.mp4"

# Runs unpack.py's main (loaded from its file, as any Python runs the shipped script) and
# SIGKILLs itself halfway through writing the file sys.argv[2].
_KILLED_MID_FILE = (
    "import os, runpy, signal, sys\n"
    "unpack = runpy.run_path(sys.argv[1])\n"
    "real = unpack['_write_all']\n"
    "def write(fd, data, where):\n"
    "    if where.endswith(sys.argv[2]):\n"
    "        real(fd, data[: len(data) // 2], where)\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    real(fd, data, where)\n"
    "unpack['main'].__globals__['_write_all'] = write\n"
    "unpack['main'](sys.argv[3:])\n"
)


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="none")


def _argv(release: Path, out: Path) -> list[str]:
    return ["--all", "--quiet", "--release-dir", str(release), "--output", str(out)]


def _journal(out: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((out / "ds.unpack-journal.json").read_text())
    return loaded


@pytest.mark.unpack_script
def test_a_run_killed_mid_file_leaves_the_journal_and_the_rerun_rewrites_the_file(
    release: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    script = str(unpack_script.SCRIPT)
    killed = subprocess.run(
        [unpack_script.PYTHON, "-I", "-c", _KILLED_MID_FILE, script, BIG, *_argv(release, out)],
        capture_output=True,
        check=False,
    )
    assert killed.returncode == -9
    partial = out / "ds" / BIG
    assert 0 < partial.stat().st_size < len(SAMPLE[BIG]), "killed with the file half written"
    journal = _journal(out)
    assert journal["writing"] == sorted(
        p.name and f"{p.parent.name}/{p.name}" for p in release.glob("*/*.tar")
    )
    notes: list[str] = []
    summary = unpack_script.unpack_release(
        str(release), str(out), everything=True, log=notes.append
    )
    assert read_tree(out / "ds") == SAMPLE
    # Packages restore concurrently: the kill may catch another package's file mid-write too.
    pattern = r"removed (\d+) partly written files? left by an interrupted run"
    counts = [int(m.group(1)) for m in (re.fullmatch(pattern, note) for note in notes) if m]
    assert len(counts) == 1 and counts[0] >= 1, notes
    assert summary.written + summary.skipped == len(SAMPLE)
    assert sorted(os.listdir(out)) == ["ds", "ds.unpack-index.jsonl", "ds.unpack-state.json"]


@pytest.mark.unpack_script
def test_a_partial_file_of_the_right_size_is_rewritten(release: Path, tmp_path: Path) -> None:
    """Killed after the last write but before the data reached the disk: the name is there
    with the right size and wrong bytes (a power cut can leave zeros)."""
    out = tmp_path / "out"
    assert unpack_script.main([*_argv(release, out), "--readable-by", "owner"]) == 0
    journal = {
        "kept": [],
        "snapshot_root_sha256": unpack.load_release(str(release)).snapshot_root,
        "writing": sorted(f"{p.parent.name}/{p.name}" for p in release.glob("*/*.tar")),
    }
    (out / "ds.unpack-journal.json").write_text(json.dumps(journal))
    (out / "ds.unpack-state.json").unlink()
    target = out / "ds" / BIG
    target.chmod(0o600)
    target.write_bytes(bytes(len(SAMPLE[BIG])))
    summary = unpack_script.unpack_release(str(release), str(out), everything=True)
    assert read_tree(out / "ds") == SAMPLE
    assert summary.written == 1
    assert not (out / "ds.unpack-journal.json").exists()


@pytest.mark.unpack_script
def test_without_a_journal_a_differing_file_is_kept(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "ds").mkdir(parents=True)
    (out / "ds" / "README.md").write_bytes(b"# mine!!\n")  # same size, other bytes
    with pytest.raises(unpack.UnpackError, match=r"README.md: existing file differs.*kept"):
        unpack_script.unpack_release(str(release), str(out), everything=True)
    assert (out / "ds" / "README.md").read_bytes() == b"# mine!!\n"
    # A second run (the journal now lists the packages) still knows the file is not its own.
    with pytest.raises(unpack.UnpackError, match=r"README.md: .*kept"):
        unpack_script.unpack_release(str(release), str(out), everything=True)
    assert (out / "ds" / "README.md").read_bytes() == b"# mine!!\n"


@pytest.mark.unpack_script
def test_a_finished_family_is_not_journaled_again(release: Path, tmp_path: Path) -> None:
    """A file restored by an earlier, finished run and then edited is the user's now: a
    later run (even one killed and re-run) reports it and keeps it."""
    out = tmp_path / "out"
    assert unpack_script.main([*_argv(release, out)[1:], "--base"]) == 0
    readme = out / "ds" / "README.md"
    readme.chmod(0o600)
    readme.write_bytes(b"# edited\n")
    with pytest.raises(unpack.UnpackError, match=r"README.md: existing file differs.*kept"):
        unpack_script.unpack_release(str(release), str(out), everything=True)
    assert readme.read_bytes() == b"# edited\n"


@pytest.mark.parametrize(
    "text",
    ['{"writing": ["base/base-0001.tar"], "kept": [], "snapshot_ro', "", "[]", '{"writing": 1}'],
)
@pytest.mark.unpack_script
def test_a_damaged_journal_is_refused_in_one_line_naming_it(
    release: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    out = tmp_path / "out"
    (out / "ds").mkdir(parents=True)
    (out / "ds" / "README.md").write_bytes(b"half")
    (out / "ds.unpack-journal.json").write_text(text)
    assert unpack_script.main(_argv(release, out)) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith(f"FAILED: {out / 'ds.unpack-journal.json'}: damaged restore journal")
    assert (out / "ds" / "README.md").read_bytes() == b"half"


@pytest.mark.unpack_script
def test_a_journal_of_another_snapshot_is_refused(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "ds").mkdir(parents=True)
    journal = {"kept": [], "snapshot_root_sha256": "0" * 64, "writing": ["base/base-0001.tar"]}
    (out / "ds.unpack-journal.json").write_text(json.dumps(journal))
    with pytest.raises(unpack.UnpackError, match="interrupted restore of snapshot 0000"):
        unpack_script.unpack_release(str(release), str(out), everything=True)


def test_a_failed_package_whose_files_cannot_be_removed_keeps_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package fails after a member was written and removing it fails too: the journal
    stays, so the next run knows that file as its own."""
    package = tar_bytes([file_info("ds/a.txt", b"a\n"), file_info("ds/b.txt", b"evil\n")])
    rows = [row("a.txt", b"a\n"), {"path": "b.txt", "size": 5, "sha256": "ab" * 32}]
    release = craft_release(tmp_path / "release", package, rows)
    out = tmp_path / "out"

    real_unlink = unpack.PinnedDir.unlink

    def cannot_unlink(self: unpack.PinnedDir, name: str) -> None:
        if name.endswith(".txt"):
            raise PermissionError(13, "Permission denied", name)
        real_unlink(self, name)

    monkeypatch.setattr(unpack.PinnedDir, "unlink", cannot_unlink)
    with pytest.raises(unpack.UnpackError, match=r"differs from files\.jsonl"):
        unpack.unpack_release(str(release), str(out), ["base"])
    assert (out / "ds" / "a.txt").exists()
    assert _journal(out)["writing"] == ["base/base-0001.tar"]
