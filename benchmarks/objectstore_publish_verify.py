"""Publish to and verify on an S3 server, next to s3fs ``put``/``get`` of the same bytes.

Starts the test S3 server (moto's server mode, on 127.0.0.1, in a child process so the
server's Python does not share a GIL with the clients), builds a tree of a few large files
and one of many small files, and times, in one run and per tree:

* ``publish_remote`` (ours: verify the local tree, upload every file with its digest,
  commit the manifest) against ``s3fs.S3FileSystem.put(recursive=True)`` of the tree;
* ``verify_remote`` (ours: read and hash every object in place) against
  ``S3FileSystem.get(recursive=True)`` of the same objects to a local folder.

Goal: ours >= 0.8x s3fs for both, in every run. Each run goes into fresh prefixes; the
line shows the medians' speeds and ratio, then every run's own ratio (ours and s3fs timed
back to back in that run, so the load they shared cancels out), and every run's ratio of
CPU seconds spent by client and server together (s3fs's over ours: above 1, ours costs
less), which does not swing with the load of a shared machine. Usage::

    python benchmarks/objectstore_publish_verify.py [--large-mib 256] [--large-files 4]
        [--small-files 2000] [--repeat 3] [--workdir DIR] [--trees large,small]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.s3_server: the same server the test suite uses

from dataset_devkit.integrity import write_manifest  # noqa: E402
from dataset_devkit.integrity.bucket import publish_remote, verify_remote  # noqa: E402

_SERVER = """
import sys, time
from tests.s3_server import running_s3_server
with running_s3_server() as server:
    print(server.endpoint, flush=True)
    sys.stdin.read()
"""


def make_trees(workdir: Path, large_mib: int, large_files: int, small_files: int) -> list[Path]:
    """``large/``: a few big files; ``small/``: many 1-8 KiB files in 50 folders."""
    large, small = workdir / "large", workdir / "small"
    for tree in (large, small):
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
    seed = os.urandom(16 << 20)
    per_file = (large_mib << 20) // large_files
    for index in range(large_files):
        with (large / f"part-{index:02d}.bin").open("wb") as out:
            left = per_file
            while left:
                chunk = seed[: min(left, len(seed))]
                out.write(bytes([index]) + chunk[1:])
                left -= len(chunk)
    blob = os.urandom(8192)
    for index in range(small_files):
        folder = small / f"{index % 50:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"{index:06d}.bin").write_bytes(blob[: 1024 + (index * 7919) % 7168])
    for tree in (large, small):
        write_manifest(tree)
    return [large, small]


def tree_bytes(tree: Path) -> int:
    return sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the server process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(server: int, action: Callable[..., object], *args: Any, **kwargs: Any) -> Sample:
    """Wall and CPU seconds (this client's and the server's) *action* takes; it must
    succeed (a verify must pass).

    The disk is synced first: moto keeps large objects in temporary files, and the
    writeback of the previous operation's hundreds of megabytes would otherwise land on
    whichever side runs second."""
    os.sync()
    cpu, serving, start = time.process_time(), server_cpu(server), time.perf_counter()
    result = action(*args, **kwargs)
    elapsed = time.perf_counter() - start
    spent = time.process_time() - cpu + server_cpu(server) - serving
    ok = getattr(result, "ok", True)
    assert ok, f"{action.__name__} did not succeed"
    return Sample(elapsed, spent)


@dataclass(frozen=True)
class Sample:
    """One timed operation: wall seconds, and CPU seconds of client plus server."""

    wall: float
    cpu: float


def bench_tree(fs: Any, tree: Path, repeat: int, workdir: Path, server: int) -> None:
    """Time ours and s3fs on *tree*, each run into fresh prefixes; print every run's ratio.

    Within a run the two sides go back to back (alternating which goes first), so each
    run's ratio compares them under the same load; the medians are printed beside. The
    CPU seconds (client and server: everything the two sides make the machine do) are
    printed too: they do not swing with the other work on a shared machine."""
    mb = tree_bytes(tree) / 1e6
    ours_up: list[Sample] = []
    theirs_up: list[Sample] = []
    ours_check: list[Sample] = []
    theirs_get: list[Sample] = []
    for run in range(repeat):
        url = f"s3://bench/{tree.name}-ours-{run}"
        theirs = f"bench/{tree.name}-s3fs-{run}"
        target = workdir / f"get-{tree.name}-{run}"
        if run % 2:
            theirs_up.append(timed(server, fs.put, str(tree), theirs, recursive=True))
            ours_up.append(timed(server, publish_remote, tree, url))
            theirs_get.append(timed(server, fs.get, theirs, str(target), recursive=True))
            ours_check.append(timed(server, verify_remote, url))  # the copy must verify
        else:
            ours_up.append(timed(server, publish_remote, tree, url))
            theirs_up.append(timed(server, fs.put, str(tree), theirs, recursive=True))
            ours_check.append(timed(server, verify_remote, url))
            theirs_get.append(timed(server, fs.get, theirs, str(target), recursive=True))
        shutil.rmtree(target, ignore_errors=True)
    for name, ours, others in (
        ("publish vs put", ours_up, theirs_up),
        ("verify vs get", ours_check, theirs_get),
    ):
        runs = " ".join(f"{b.wall / a.wall:.2f}" for a, b in zip(ours, others, strict=True))
        cpus = " ".join(f"{b.cpu / a.cpu:.2f}" for a, b in zip(ours, others, strict=True))
        a = mb / statistics.median(x.wall for x in ours)
        b = mb / statistics.median(x.wall for x in others)
        print(
            f"{tree.name:<6} {mb:>7.1f} {name:<16} {a:>10.1f} {b:>10.1f} {a / b:>6.2f}  "
            f"per run: {runs}  (CPU s, theirs/ours: {cpus})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large-mib", type=int, default=256, help="bytes of the large tree")
    parser.add_argument("--large-files", type=int, default=4, help="files of the large tree")
    parser.add_argument("--small-files", type=int, default=2000, help="files of the small tree")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the trees are made")
    parser.add_argument(
        "--trees", default="large,small", help="which trees to time (large, small or both)"
    )
    args = parser.parse_args()

    import s3fs

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddk-bench-s3-"))
    trees = make_trees(workdir, args.large_mib, args.large_files, args.small_files)
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        endpoint = server.stdout.readline().strip()
        os.environ.update(
            {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1",
            }
        )
        fs = s3fs.S3FileSystem(
            key="testing", secret="testing", client_kwargs={"endpoint_url": endpoint}
        )
        fs.mkdir("bench")
        print(f"S3 server (moto) at {endpoint}; {os.cpu_count()} cores visible")
        print(
            f"{'tree':<6} {'MB':>7} {'operation':<16} {'ours MB/s':>10} {'s3fs MB/s':>10} "
            f"{'ratio':>6}  (median; then each run's ratio)"
        )
        for tree in trees:
            if tree.name not in args.trees.split(","):
                continue
            bench_tree(fs, tree, args.repeat, workdir, server.pid)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
