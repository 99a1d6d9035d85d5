"""``manifest``, ``verify`` and ``publish`` hold descriptors bounded by the tree's depth.

Each command runs in a child limited to 256 descriptors (macOS's default) on a GenVR-shaped
tree with more sibling directories in one folder than that, and thousands in all.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

from dataset_devkit.integrity import read_manifest, scan_tree
from dataset_devkit.integrity.progress import ProgressUpdate
from tests.scale_tree import TreeShape, make_genvr_tree, run_limited


def test_scale_tree_has_more_directories_than_descriptors(genvr_tree: TreeShape) -> None:
    widest = max(
        len(os.listdir(genvr_tree.root / "ue5-pro" / name))
        for name in os.listdir(genvr_tree.root / "ue5-pro")
    )
    assert widest > 256
    assert genvr_tree.directories > 3500
    assert genvr_tree.files > 13000


def test_verify_runs_under_256_descriptors(
    genvr_tree: TreeShape, package_env: dict[str, str]
) -> None:
    root = read_manifest(genvr_tree.root).root_sha256
    done = run_limited(package_env, ["verify", str(genvr_tree.root), "--expect-root", root])
    assert done.returncode == 0, done.stderr
    assert f"{genvr_tree.files} files" in done.stdout


def test_publish_runs_under_256_descriptors_and_seals_every_file(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    staging = make_genvr_tree(tmp_path / "staging", 200).root
    final = tmp_path / "GenVR-duo"
    done = run_limited(package_env, ["publish", str(staging), "--out", str(final)])
    assert done.returncode == 0, done.stderr
    modes = {
        stat.S_IMODE(os.lstat(Path(folder) / name).st_mode)
        for folder, dirs, files in os.walk(final)
        for name in [*dirs, *files]
    }
    assert modes == {0o400, 0o500}
    verified = run_limited(package_env, ["verify", str(final)])
    assert verified.returncode == 0, verified.stderr


def test_hashing_window_does_not_grow_with_the_number_of_threads(tmp_path: Path) -> None:
    # Files of 1 MiB and more go to the thread pool; one per directory, so every file in
    # flight also keeps its directory open. 64 threads once meant 256 files in flight.
    root = tmp_path / "large"
    for number in range(300):
        folder = root / f"{number:03d}"
        folder.mkdir(parents=True)
        with (folder / "clip.mp4").open("wb") as handle:
            handle.truncate((1 << 20) + number)  # sparse: no disk, still hashed whole
    before = len(os.listdir("/proc/self/fd"))
    peak = [0]
    # One probe at a time: listing /proc/self/fd opens a descriptor, and progress comes from
    # every hashing thread at once, so unserialized probes would count each other.
    probing = threading.Lock()

    def slow_disk(_update: ProgressUpdate) -> None:  # hashing waits on I/O while the walk goes on
        with probing:
            peak[0] = max(peak[0], len(os.listdir("/proc/self/fd")) - before)
        time.sleep(0.002)

    result = scan_tree(root, workers=64, progress=slow_disk)
    assert len(result.files) == 300
    assert not result.issues
    assert peak[0] <= 2 * 32 + 16, peak
