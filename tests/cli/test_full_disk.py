"""A full disk, wherever it runs out, is one line naming the file; a folder that may not be
written is one line naming that folder, never a hidden staging entry.

Every command that writes is run on a disk that fills at several points of its work (a
real small filesystem; see ``tests.full_disk``), and with its output in a folder of
another user.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.integrity import write_manifest
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap
from dataset_devkit.release import PackOptions, pack_release
from dataset_devkit.stereo import make_sample_source
from tests.full_disk import (
    FULL_DISK_LINES,
    can_mount,
    not_writable,
    run_denied,
    run_on_a_full_disk,
    small_disk,
)
from tests.scale_tree import run_limited

_SAMPLES = """
import numpy as np
from dataset_devkit.vin_store import VinOfflineSample

def render(start, stop):
    for i in range(start, stop):
        yield VinOfflineSample(
            sample_key=f"s-{i:05d}", scene_id=f"scene-{i // 10}", snippet_id=str(i),
            arrays={"vin.points_world": np.full((256, 3), i, np.float32)},
            records={"oracle.note": {"i": i}},
        )

def first():
    return render(0, 60)
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("inputs")
    tree = root / "tree"
    for n in range(40):
        (tree / f"d{n % 4}").mkdir(parents=True, exist_ok=True)
        (tree / f"d{n % 4}" / f"f{n:03d}.bin").write_bytes(bytes([n]) * (300 * n))
    write_manifest(tree)
    bare = root / "bare"
    shutil.copytree(tree, bare)
    (bare / "content_manifest.json").unlink()
    write_sample_mcap(root / "drive.mcap", SampleDrive(duration_s=4.0, fps=4.0))
    make_sample_source(root / "export", pairs=2, frames=8, width=32, height=24)
    (root / "samples.py").write_text(_SAMPLES)
    release = root / "release"
    pack_release(tree, release, PackOptions(package_limit=16384, restore_test="none"))
    return {"root": root, "tree": tree, "bare": bare, "release": release}


def _build_toml(inputs: dict[str, Path], disk: Path) -> list[str]:
    config = disk.parent / "build.toml"
    config.write_text(
        f'namespace = "disk"\n[sources]\ntype = "mcap_hf"\n'
        f'paths = ["{inputs["root"]}/drive.mcap"]\n'
        "[scenario]\nscene_duration_s = 2.0\nmin_scene_duration_s = 1.0\n"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        f'[paths]\noutput_dir = "{disk}/out"\n[executor]\nworkers = 1\n'
    )
    return ["build", str(config)]


#: Each writing command: its command line, given the inputs and the disk folder, and what
#: must be on the disk before it runs (a tree that is written in place).
Command = Callable[[dict[str, Path], Path], list[str]]
COMMANDS: dict[str, Command] = {
    "manifest": lambda i, d: ["manifest", str(d / "bare")],
    "publish": lambda i, d: ["publish", str(d / "bare"), "--out", str(d / "final")],
    "release pack": lambda i, d: ["release", "pack", str(i["tree"]), "--out", str(d / "rel")],
    "release unpack": lambda i, d: [
        "release", "unpack", str(i["release"]), "--all", "--out", str(d / "data")
    ],
    "store build": lambda i, d: [
        "store", "build", f"{i['root']}/samples.py:first", "--out", str(d / "store"),
        "--rows-per-shard", "20",
    ],
    "store build --items": lambda i, d: [
        "store", "build", f"{i['root']}/samples.py:render", "--items", "60", "--out",
        str(d / "store"), "--rows-per-shard", "20", "--workers", "2",
    ],
    "stereo build": lambda i, d: [
        "stereo", "build", str(i["root"] / "export"), "--out", str(d / "ds")
    ],
    "stereo build --workers": lambda i, d: [
        "stereo", "build", str(i["root"] / "export"), "--out", str(d / "ds"), "--workers", "2"
    ],
    "build": _build_toml,
    "preview": lambda i, d: ["preview", str(i["tree"]), "--out", str(d / "page")],
}  # fmt: skip
#: Commands that write into a tree on the disk (copied there first).
IN_PLACE = {"manifest", "publish"}


def _used(folder: Path) -> int:
    st = os.statvfs(folder)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _sizes(name: str, inputs: dict[str, Path], work: Path, env: dict[str, str]) -> list[int]:
    """Disk sizes at which the command runs out of room at different points of its work:
    shares of what it takes on an ample tmpfs (plus the tree it works in, if in place);
    where no tmpfs can be mounted, per-file limits across the sizes of the files."""
    if not can_mount():
        sizes = sorted({p.stat().st_size for p in inputs["tree"].rglob("*") if p.is_file()})
        return [max(1, sizes[int(len(sizes) * share)] - 1) for share in _SHARES]
    disk = work / "ample"
    with small_disk(disk, 256 << 20):
        if name in IN_PLACE:
            shutil.copytree(inputs["bare"], disk / "bare")
        base = _used(disk)
        done = run_limited(env, COMMANDS[name](inputs, disk))
        assert done.returncode == 0, done.stderr
        whole = _used(disk) - base
    page = 4096
    return sorted({base + max(page, int(whole * share) // page * page) for share in _SHARES})


#: Where the disk runs out, as shares of what the command writes in all.
_SHARES = (0.15, 0.4, 0.65, 0.9)


def _case(name: str) -> Any:
    """A nuScenes build needs nuscenes-devkit (its publish gate is the official loader)."""
    return pytest.param(name, marks=pytest.mark.needs("nuscenes")) if name == "build" else name


@pytest.mark.parametrize("name", [_case(name) for name in sorted(COMMANDS)])
def test_a_full_disk_is_one_line_naming_the_file_wherever_it_fills(
    name: str, inputs: dict[str, Path], tmp_path: Path, package_env: dict[str, str]
) -> None:
    sizes = _sizes(name, inputs, tmp_path, package_env)
    failed = 0
    for n, room in enumerate(sizes):
        disk = tmp_path / f"disk-{n}"
        args = COMMANDS[name](inputs, disk)
        done = run_on_a_full_disk(
            package_env,
            args,
            disk,
            room,
            prepare=functools.partial(shutil.copytree, inputs["bare"], disk / "bare")
            if name in IN_PLACE
            else None,
        )
        if done.returncode == 0:
            continue
        failed += 1
        line = done.stderr
        assert done.returncode == 1 and line.count("\n") == 1, (name, room, line)
        assert line.startswith(FULL_DISK_LINES), (name, room, line)
        named = Path(line.split(": ", 2)[2].strip())
        assert named.is_absolute() and str(named).startswith(str(disk)), (name, line)
        assert "Traceback" not in line and "Exception ignored" not in line
    assert failed >= min(2, len(sizes)), f"{name}: the disk never filled ({sizes})"


@pytest.mark.parametrize("name", [_case(name) for name in sorted(COMMANDS)])
def test_a_folder_that_may_not_be_written_is_named_not_a_hidden_entry(
    name: str, inputs: dict[str, Path], tmp_path: Path, package_env: dict[str, str]
) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir()
    if name in IN_PLACE:
        shutil.copytree(inputs["bare"], folder / "bare")
        (folder / "bare").chmod(0o555)
        if os.geteuid() == 0:
            os.chown(folder / "bare", 65534, 65534)
    not_writable(folder)
    args = COMMANDS[name](inputs, folder)
    try:
        done = run_denied(package_env, args)
    finally:
        folder.chmod(0o755)
        if name in IN_PLACE:
            (folder / "bare").chmod(0o755)
    denied = folder / "bare" if name == "manifest" else folder
    if name == "build":
        denied = folder  # paths.output_dir's parent
    assert done.returncode == 1, (name, done.stderr)
    line = done.stderr
    assert line.count("\n") == 1 and "Traceback" not in line, (name, line)
    assert str(denied) in line and "Permission denied" in line, (name, line)
    assert ".staging-" not in line and ".partial-" not in line and "/." not in line, line
    assert sorted(os.listdir(folder)) == (["bare"] if name in IN_PLACE else []), name
