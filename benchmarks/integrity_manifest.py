"""Content-manifest throughput against the limits of hashing the same bytes, side by side.

Builds a tree of a few large files and many small ones, then times, in one run:

* ``build_manifest`` on the large files and on the small files (ours);
* a single stream of OpenSSL SHA-256 over the large files (hashlib in one thread, 1 MiB
  reads) and ``openssl dgst -sha256``;
* a bare single-thread ``open/read/sha256`` loop over the small files (no no-follow or
  identity checks: the cost floor of per-file work in Python);
* ``sha256sum`` over both (Debian's build lacks SHA-NI: the floor, not the bar);
* peak RSS of a manifest build in a fresh process, for large and for small files.

Goals (issue 2): large files >= 1.6x the single stream; small files >= 0.5x the bare loop;
peak memory flat in file size. Usage::

    python benchmarks/integrity_manifest.py [--large-gib 2] [--large-files 4]
        [--small-files 20000] [--repeat 3] [--workdir /tmp/ddk-bench-integrity]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dataset_devkit.integrity import build_manifest

BLOCK = 1 << 20


def make_tree(root: Path, large_bytes: int, large_files: int, small_files: int) -> None:
    """Large files of pseudo-random bytes and small files of 1-8 KiB in 100 folders."""
    marker = root / ".complete"
    if marker.exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    (root / "large").mkdir(parents=True)
    (root / "small").mkdir()
    seed = os.urandom(64 << 20)
    per_file = large_bytes // large_files
    for index in range(large_files):
        with (root / "large" / f"part-{index:02d}.bin").open("wb") as out:
            left = per_file
            while left:
                chunk = seed[: min(left, len(seed))]
                out.write(bytes([index]) + chunk[1:])
                left -= len(chunk)
    blob = os.urandom(8192)
    for index in range(small_files):
        folder = root / "small" / f"{index % 100:03d}"
        folder.mkdir(exist_ok=True)
        size = 1024 + (index * 7919) % 7168
        (folder / f"{index:06d}.bin").write_bytes(blob[:size])
    marker.touch()


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def single_stream(paths: list[Path]) -> None:
    buffer = bytearray(BLOCK)
    view = memoryview(buffer)
    for path in paths:
        digest = hashlib.sha256()
        with path.open("rb", buffering=0) as handle:
            while count := handle.readinto(buffer):
                digest.update(view[:count])


def bare_loop(paths: list[Path]) -> None:
    for path in paths:
        with path.open("rb") as handle:
            hashlib.sha256(handle.read()).hexdigest()


def run_tool(argv: list[str], paths: list[Path]) -> None:
    # xargs-style batches keep argv below the kernel's limit.
    for start in range(0, len(paths), 2000):
        subprocess.run(
            [*argv, *map(str, paths[start : start + 2000])], check=True, stdout=subprocess.DEVNULL
        )


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mib(root: Path) -> float:
    """Peak RSS of a manifest build in a fresh process.

    Read from ``VmHWM`` (reset by exec), not ``ru_maxrss``, which Linux carries over from
    the forking parent and would report this benchmark's own memory.
    """
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from dataset_devkit.integrity import build_manifest\n"
        "build_manifest(Path(sys.argv[1]))\n"
        "status = Path('/proc/self/status').read_text()\n"
        "print([l.split()[1] for l in status.splitlines() if l.startswith('VmHWM')][0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], check=True, capture_output=True, text=True
    )
    return int(out.stdout.strip()) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large-gib", type=float, default=2.0)
    parser.add_argument("--large-files", type=int, default=4)
    parser.add_argument("--small-files", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ddk-bench-integrity"))
    args = parser.parse_args()
    large_bytes = int(args.large_gib * (1 << 30))
    root = args.workdir / f"tree-{large_bytes}-{args.large_files}-{args.small_files}"
    make_tree(root, large_bytes, args.large_files, args.small_files)
    large, small = root / "large", root / "small"
    large_paths, small_paths = files_under(large), files_under(small)
    large_total = sum(p.stat().st_size for p in large_paths)
    small_total = sum(p.stat().st_size for p in small_paths)
    single_stream(large_paths)  # warm the page cache: every figure below reads from memory
    bare_loop(small_paths)
    repeat = args.repeat
    t = {
        "ours large": median_seconds(lambda: build_manifest(large), repeat),
        "hashlib 1-stream large": median_seconds(lambda: single_stream(large_paths), repeat),
        "openssl dgst large": median_seconds(
            lambda: run_tool(["openssl", "dgst", "-sha256"], large_paths), repeat
        ),
        "sha256sum large": median_seconds(lambda: run_tool(["sha256sum"], large_paths), repeat),
        "ours small": median_seconds(lambda: build_manifest(small), repeat),
        "bare loop small": median_seconds(lambda: bare_loop(small_paths), repeat),
        "sha256sum small": median_seconds(lambda: run_tool(["sha256sum"], small_paths), repeat),
    }
    mib = 1 << 20
    print(
        f"tree: {len(large_paths)} large files, {large_total / mib:.0f} MiB; "
        f"{len(small_paths)} small files, {small_total / mib:.1f} MiB; "
        f"{os.cpu_count()} cores; median of {repeat}; page cache warm"
    )
    print(f"{'method':<26}{'seconds':>10}{'MiB/s':>10}{'files/s':>11}")
    for name, seconds in t.items():
        is_large = "large" in name
        nbytes = large_total if is_large else small_total
        nfiles = len(large_paths) if is_large else len(small_paths)
        print(f"{name:<26}{seconds:>10.3f}{nbytes / mib / seconds:>10.0f}{nfiles / seconds:>11.0f}")
    large_ratio = t["hashlib 1-stream large"] / t["ours large"]
    small_ratio = t["bare loop small"] / t["ours small"]
    print(f"large files: ours / single-stream OpenSSL = {large_ratio:.2f}x (goal >= 1.6x)")
    print(
        f"large files: ours / openssl dgst          = "
        f"{t['openssl dgst large'] / t['ours large']:.2f}x"
    )
    print(
        f"large files: ours / sha256sum             = "
        f"{t['sha256sum large'] / t['ours large']:.2f}x (the floor)"
    )
    print(f"small files: ours / bare loop             = {small_ratio:.2f}x (goal >= 0.5x)")
    print(
        f"small files: ours / sha256sum             = {t['sha256sum small'] / t['ours small']:.2f}x"
    )
    print(
        f"peak RSS of a manifest build: large files {peak_rss_mib(large):.0f} MiB, "
        f"small files {peak_rss_mib(small):.0f} MiB (flat in file size)"
    )


if __name__ == "__main__":
    main()
