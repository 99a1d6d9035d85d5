"""Pack, verify and publish a GenVR-shaped tree of small files: descriptors, time, memory.

The GenVR-duo release holds 2,008 stereo pairs in ~10,000 directories and ~50,000 files. This
script builds that shape with tiny files (``tests/scale_tree.py``, a few seconds), then runs
each command as a user would, in a child limited to 256 descriptors (macOS's default):

* ``verify``, ``release pack`` (default sample restore test, and ``--restore-test none``),
  ``release verify`` and ``publish``, with the peak number of open descriptors sampled from
  ``/proc/PID/fd``;
* the shell peer of ``release pack`` in the same run: ``tar -cf`` of the tree followed by
  ``sha256sum`` of every file and of the archive;
* ``release pack`` peak RSS on a tree a quarter the size, to show memory beyond the index
  does not grow with the number of files.

Usage::

    python benchmarks/release_scale_tree.py [--pairs 2008] [--workdir /tmp/ddk-bench-scale]

Figures swing on a shared machine: run it twice and compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dataset_devkit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tree generator lives with the tests that share it

from tests.scale_tree import make_genvr_tree  # noqa: E402

SRC = str(Path(dataset_devkit.__file__).resolve().parents[1])
NONE = ("--restore-test", "none")
LIMITED = (
    "import resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))\n"
    "from dataset_devkit.cli.app import main\n"
    "main(sys.argv[1:])\n"
)


def run_sampled(args: list[str], cwd: Path) -> tuple[float, int, int]:
    """Run ``dataset-devkit ARGS`` limited to 256 descriptors: seconds, exit code and the
    peak of open descriptors (sampled every millisecond)."""
    env = dict(os.environ, PYTHONPATH=SRC)
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", LIMITED, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    peak = 0
    fd_dir = f"/proc/{child.pid}/fd"
    while child.poll() is None:
        with contextlib.suppress(OSError):  # the child exited between poll and listdir
            peak = max(peak, len(os.listdir(fd_dir)))
        time.sleep(0.001)
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        err = child.stderr.read().decode() if child.stderr else ""
        print(f"  FAILED {' '.join(args[:2])}: {err.strip()[-300:]}")
    return seconds, child.returncode, peak


def pack_rss(tree: Path, out: Path) -> int:
    """Peak RSS in MiB of one ``release pack --restore-test none`` run, measured by itself.

    The child reports its own VmHWM: ``ru_maxrss`` would not do, Linux carries the
    parent's high-water mark (this script, which built the trees) across fork and exec.
    """
    env = dict(os.environ, PYTHONPATH=SRC)
    code = (
        "import resource, sys\n"
        "from dataset_devkit.cli.app import main\n"
        "try:\n    main(sys.argv[1:])\n"
        "finally:\n"
        "    hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM')][0]\n"
        "    print(hwm.split()[1], file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "release", "pack", str(tree), "--out", str(out), *NONE],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return int(done.stderr.strip().split("\n")[-1]) // 1024


def shell_peer(tree: Path, work: Path) -> float:
    """``tar -cf`` of the tree, then ``sha256sum`` of every file and of the archive."""
    start = time.perf_counter()
    archive = work / "peer.tar"
    subprocess.run(["tar", "-cf", str(archive), "-C", str(tree.parent), tree.name], check=True)
    subprocess.run(
        f"cd {tree} && find . -type f -print0 | xargs -0 sha256sum > {work}/peer.sums",
        shell=True,
        check=True,
    )
    subprocess.run(["sha256sum", str(archive)], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=2008)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ddk-bench-scale"))
    opts = parser.parse_args()
    work = opts.workdir
    if work.exists():
        subprocess.run(["chmod", "-R", "u+w", str(work)], check=True)
        shutil.rmtree(work)
    work.mkdir(parents=True)
    start = time.perf_counter()
    shape = make_genvr_tree(work / "GenVR-duo-20261023", opts.pairs)
    made = time.perf_counter() - start
    print(
        f"tree: {shape.pairs} pairs, {shape.directories} directories, {shape.files} files, "
        f"depth {shape.depth}, made in {made:.1f} s"
    )
    tree = shape.root
    rows: list[tuple[str, float, int, int]] = []

    def step(label: str, args: list[str]) -> float:
        seconds, code, peak = run_sampled(args, work)
        rows.append((label, seconds, code, peak))
        return seconds

    step("manifest", ["manifest", str(tree)])
    step("verify", ["verify", str(tree)])
    pack = step(
        "release pack --restore-test none",
        ["release", "pack", str(tree), "--out", str(work / "rel-none"), *NONE],
    )
    step(
        "release pack (sample restore test)",
        ["release", "pack", str(tree), "--out", str(work / "rel")],
    )
    step("release verify", ["release", "verify", str(work / "rel-none")])
    shutil.copytree(tree, work / "staging")
    os.unlink(work / "staging" / "content_manifest.json")
    step("publish", ["publish", str(work / "staging"), "--to", str(work / "published")])
    peer = shell_peer(tree, work)
    print(f"\n{'command (ulimit -n 256)':40} {'exit':>4} {'seconds':>8} {'peak fds':>9}")
    for label, seconds, code, peak in rows:
        print(f"{label:40} {code:>4} {seconds:8.1f} {peak:>9}")
    print(f"{'tar -cf + sha256sum (peer of pack)':40} {0:>4} {peer:8.1f}")
    print(f"\nrelease pack --restore-test none / peer: {pack / peer:.2f}x")
    quarter = make_genvr_tree(work / "quarter" / "GenVR-duo-20261023", max(1, opts.pairs // 4))
    small_rss = pack_rss(quarter.root, work / "quarter" / "rel")
    full_rss = pack_rss(tree, work / "rel-rss")
    print(
        f"release pack peak RSS: {small_rss} MiB for {quarter.files} files, "
        f"{full_rss} MiB for {shape.files} files "
        f"({(full_rss - small_rss) * 1024 * 1024 / max(1, shape.files - quarter.files):.0f} "
        "bytes per extra file: the index)"
    )


if __name__ == "__main__":
    main()
