"""Release packing and unpacking against the two-pass shell way, side by side in one run.

Builds a tree (a few large files, many small ones, a depth family), then times:

* ``pack_release`` (one read per file, hashed while archived; read-back of every package
  and, separately, without read-back) against ``tar -cf`` of the tree followed by
  ``sha256sum`` over every file and over the package (the two-pass way);
* the shipped ``unpack.py --all`` (package SHA-256 in the restoring read, strict parse,
  every member hashed as it is written at its final name under the restore journal, every
  file and directory durable before ``OK``: one ``syncfs``) and ``unpack.py --all
  --no-fsync`` (like ``tar``, no fsync) against ``tar -xf`` of every package followed by
  ``sha256sum -c SHA256SUMS``;
* ``tar -xf`` of every package alone, with no verification at all and no fsync: the floor
  of writing these files, to say how close a restore that verifies every byte gets;
* peak RSS of the pack and unpack processes, next to the largest file size.

``unpack.py --all`` makes every file durable (one ``syncfs``) and ``tar`` does not: the
``--no-fsync`` row is the like-for-like comparison, both are printed.

Two shapes, each measured in its own rounds: ``large`` (the tree above) and ``small``,
the GenVR-duo layout at the real release's size with tiny files (2,008 stereo pairs:
58,233 files in 14,580 directories, ~35 packages), where per-file costs (create, write,
sync) dominate instead of bytes.

Goals: pack <= 0.6x of the peer; unpack <= 0.6x of ``tar -xf`` + ``sha256sum -c`` on
large files and <= 1.0x on the small-file tree (ratios: our time / the peer's time);
memory flat in file size and in file count. The page cache is warm for every contender
(nothing is dropped: the machine is shared).
Usage::

    python benchmarks/release_pack_unpack.py [--size-mib 512] [--full]  # --full: 2 GiB tree
        [--shape large|small|both] [--pairs 2008]
        [--package-mib N] [--workdir /tmp/ddk-bench-release] [--repeat 3]

The shared machine is noisy: ``--repeat N`` runs every contender N times, interleaved, and
reports the median time and the range of each ratio (always to the peer of the same round).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dataset_devkit

SRC = str(Path(dataset_devkit.__file__).resolve().parents[1])


def make_tree(root: Path, total: int) -> int:
    """Large files (80%), 64 KiB files (15%) and a depth family of 256 KiB chunks (5%)."""
    if (root.parent / ".complete").exists():
        return max(p.stat().st_size for p in root.rglob("*") if p.is_file())
    shutil.rmtree(root.parent, ignore_errors=True)
    (root / "videos").mkdir(parents=True)
    seed = os.urandom(32 << 20)
    per = min(64 << 20, int(total * 0.8) // 8)
    large = int(total * 0.8) // per
    for index in range(large):
        with (root / "videos" / f"clip-{index:03d}.mp4").open("wb") as out:
            left = per
            while left:
                chunk = seed[: min(left, len(seed))]
                out.write(bytes([index % 256]) + chunk[1:])
                left -= len(chunk)
    small = int(total * 0.15) // (64 << 10)
    for index in range(small):
        folder = root / "meta" / f"{index % 64:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        start = (index * 4099) % (len(seed) - (64 << 10))
        (folder / f"{index:06d}.json").write_bytes(seed[start : start + (64 << 10)])
    depth = root / "cams" / "depth-zstd-5-mm" / "group.zarr"
    depth.mkdir(parents=True)
    (depth / ".zgroup").write_bytes(b'{"zarr_format": 2}')
    for index in range(int(total * 0.05) // (256 << 10)):
        start = (index * 7919) % (len(seed) - (256 << 10))
        (depth / f"{index}.0.0").write_bytes(seed[start : start + (256 << 10)])
    (root.parent / ".complete").write_bytes(b"")
    return per


def make_small_tree(root: Path, pairs: int) -> int:
    """The GenVR-duo layout with tiny files: 29 files in 7 directories per stereo pair."""
    if (root.parent / ".complete").exists():
        return 96
    shutil.rmtree(root.parent, ignore_errors=True)
    root.mkdir(parents=True)
    (root / "genvr_i2s.jsonl").write_bytes(b'{"id": 0}\n')
    for index in range(pairs):
        cams = root / f"ue5-pro/map{index // 100:04d}/scene{index // 4:04d}/cams{index % 4:02d}"
        blob = (index.to_bytes(4, "little") * 64)[:96]
        files = {
            "prompt.txt": f"scene {index}\n".encode(),
            "meta.json": b'{"fps": 24}\n',
            "videos/left.mp4": blob,
            "videos/right.mp4": blob[::-1],
            "cameras/left.json": b'{"K": [1]}\n',
            "cameras/right.json": b'{"K": [2]}\n',
            "depth-zstd-5-mm/meta.json": b'{"scale": 1000}\n',
            "depth-zstd-5-mm/group.zarr/.zgroup": b'{"zarr_format": 2}',
            "depth-zstd-5-mm/group.zarr/.zattrs": b"{}",
        }
        for eye in ("left", "right"):
            files[f"depth-zstd-5-mm/group.zarr/{eye}/.zarray"] = b'{"chunks": [4]}'
            files[f"depth-zstd-5-mm/group.zarr/{eye}/.zattrs"] = b"{}"
            for chunk in range(8):
                files[f"depth-zstd-5-mm/group.zarr/{eye}/{chunk}.0.0"] = blob[chunk:][:40]
        for rel, data in files.items():
            (cams / rel).parent.mkdir(parents=True, exist_ok=True)
            (cams / rel).write_bytes(data)
    (root.parent / ".complete").write_bytes(b"")
    return 96


_HWM = (
    "\nimport sys as _s\n"
    "_s.stderr.write('VmHWM ' + [x for x in open('/proc/self/status') if x.startswith('VmHWM')]"
    "[0].split()[1] + '\\n')\n"
)


def children_cpu() -> float:
    """User + system CPU seconds of every finished child process so far (and of the children
    those waited for: ``tar`` and ``sha256sum`` under ``bash``, the pack's threads)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], **kw: object) -> tuple[float, int, float]:
    """Run *argv*; return wall seconds, the peak RSS in MiB the child reported (VmHWM) and
    the CPU seconds it used.

    ``ru_maxrss`` would be wrong here: Linux carries the parent's high-water mark across
    ``fork`` + ``exec``, so the child reports its own ``/proc/self/status`` VmHWM instead.
    """
    settle()
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, stderr=subprocess.PIPE, text=True, check=False, **kw)  # type: ignore[call-overload]
    elapsed = time.perf_counter() - start
    cpu = children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"failed: {argv}\n{proc.stderr}")
    marks = [int(x.split()[1]) for x in proc.stderr.splitlines() if x.startswith("VmHWM ")]
    return elapsed, (marks[-1] // 1024 if marks else 0), cpu


PERF = shutil.which("perf")


def timed_every_process(argv: list[str], **kw: object) -> tuple[float, int, float]:
    """:func:`timed`, with the CPU seconds of every process *argv* starts, its worker
    processes included (``perf stat``'s task-clock counts them; the resource usage of
    children does not, as the workers are not children the pack waits for). Without
    ``perf`` the CPU figure is :func:`timed`'s, and the report says which it is."""
    if PERF is None:
        return timed(argv, **kw)
    counts = Path(tempfile.mkstemp(prefix="perf-stat-")[1])
    try:
        elapsed, rss, _ = timed(
            [PERF, "stat", "-x", ",", "-e", "task-clock", "-o", str(counts), "--", *argv], **kw
        )
        for line in counts.read_text().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2] == "task-clock":  # milliseconds
                return elapsed, rss, float(fields[0]) / 1000
    finally:
        counts.unlink()
    raise SystemExit(f"perf stat gave no task-clock for {argv}")


def python_script(script: Path, *args: str) -> str:
    """Code that runs *script* as ``__main__`` with *args*, then reports VmHWM."""
    return (
        f"import runpy, sys\nsys.argv = [{str(script)!r}, *{list(args)!r}]\n"
        f"try:\n    runpy.run_path({str(script)!r}, run_name='__main__')\n"
        "except SystemExit as exc:\n    if exc.code:\n        raise\n" + _HWM
    )


def remove(folder: Path) -> None:
    """Delete a restored tree: unpack.py seals it read-only (0500 folders), so lift that."""
    if folder.exists():
        subprocess.run(["chmod", "-R", "u+w", str(folder)], check=True)
        shutil.rmtree(folder)


def settle() -> None:
    """Write back what earlier contenders left dirty, outside the clock.

    ``tar`` never syncs, and our durable commands end with a ``syncfs`` of the whole file
    system: without this, that ``syncfs`` would also write the peer's output (a 512 MiB tar)
    and charge it to us.
    """
    os.sync()


def shell(script: str) -> tuple[float, int, float]:
    """Run *script* in bash; return wall seconds, 0 (no RSS figure) and its CPU seconds."""
    settle()
    cpu, start = children_cpu(), time.perf_counter()
    subprocess.run(["bash", "-c", f"set -e -o pipefail; {script}"], check=True)
    return time.perf_counter() - start, 0, children_cpu() - cpu


#: One round: seconds, peak RSS in MiB (0: not measured) and CPU seconds, by contender.
Round = tuple[dict[str, float], dict[str, int], dict[str, float]]


def one_round(work: Path, tree: Path, limit: int, env: dict[str, str]) -> Round:
    """Time every contender once, side by side; return seconds, peak RSS and CPU by label."""
    py = sys.executable
    results: dict[str, float] = {}
    rss: dict[str, int] = {}
    cpu: dict[str, float] = {}

    def record(label: str, run: tuple[float, int, float]) -> None:
        results[label], rss[label], cpu[label] = run

    cores = os.cpu_count() or 1
    packs = (("pack", True, 1), ("pack --no-read-back", False, 1), (PACK_WORKERS, True, cores))
    for label, read_back, workers in packs:
        out = work / f"release-{int(read_back)}-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        code = (
            "import sys; from pathlib import Path; "
            "from dataset_devkit.release import PackOptions, pack_release; "
            f"pack_release(Path({str(tree)!r}), Path({str(out)!r}), PackOptions("
            f"package_limit={limit}, read_back={read_back}, restore_test='none', "
            f"workers={workers}))" + _HWM
        )
        run = timed_every_process if workers > 1 else timed
        record(label, run([py, "-c", code], env=env))
    peer_tar = work / "peer.tar"
    peer_tar.unlink(missing_ok=True)
    record(
        "tar -cf + sha256sum files + package",
        shell(
            f"tar -cf {peer_tar} -C {tree.parent} ds && "
            f"(cd {tree.parent} && find ds -type f -print0 | xargs -0 sha256sum > /dev/null) && "
            f"sha256sum {peer_tar} > /dev/null"
        ),
    )

    release = work / "release-1-1"
    ours_out, peer_out = work / "out-ours", work / "out-peer"
    nosync_out = work / "out-nosync"
    for folder in (ours_out, peer_out, nosync_out):
        remove(folder)
    unpack_code = python_script(
        release / "unpack.py", "--all", "--quiet", "--output", str(ours_out)
    )
    record(
        "unpack.py --all",
        timed([py, "-I", "-c", unpack_code], cwd=release, stdout=subprocess.DEVNULL),
    )
    nosync_code = python_script(
        release / "unpack.py", "--all", "--quiet", "--no-fsync", "--output", str(nosync_out)
    )
    record(
        "unpack.py --all --no-fsync",
        timed([py, "-I", "-c", nosync_code], cwd=release, stdout=subprocess.DEVNULL),
    )
    record(
        "tar -xf + sha256sum -c",
        shell(
            f"mkdir -p {peer_out} && for a in {release}/*/*.tar; do tar -xf $a -C {peer_out}; "
            f"done && (cd {release} && grep '\\.tar$' SHA256SUMS | sha256sum -c --quiet -)"
        ),
    )
    floor_out = work / "out-floor"
    remove(floor_out)
    record(
        "tar -xf alone (floor: no check, no fsync)",
        shell(
            f"mkdir -p {floor_out} && for a in {release}/*/*.tar; do tar -xf $a -C {floor_out}; "
            "done"
        ),
    )
    remove(floor_out)
    record(
        "unpack.py re-run (verify + skip)",
        timed([py, "-I", "-c", unpack_code], cwd=release, stdout=subprocess.DEVNULL),
    )

    for folder in (ours_out, peer_out, nosync_out, *work.glob("release-*")):
        remove(folder)
    peer_tar.unlink(missing_ok=True)
    return results, rss, cpu


PACK_PEER = "tar -cf + sha256sum files + package"
PACK_WORKERS = "pack --workers (one per core)"
UNPACK_PEER = "tar -xf + sha256sum -c"


def report(rounds: list[Round], size: int) -> None:
    """Median seconds per contender; ratios to the peer of the same round (min-max); median
    CPU seconds; what the pack's CPU work takes at the least, spread over every core."""
    print(
        f"{'contender':40} {'median s':>8} {'MiB/s':>6} {'ratio (min-max)':>22} {'peak RSS':>9} "
        f"{'CPU s':>6}"
    )
    ratios: dict[str, list[float]] = {}
    for label in rounds[0][0]:
        peer = UNPACK_PEER if "unpack" in label or "-xf" in label else PACK_PEER
        seconds = statistics.median(r[0][label] for r in rounds)
        ratios[label] = sorted(r[0][label] / r[0][peer] for r in rounds)
        low, high = ratios[label][0], ratios[label][-1]
        spread = f"{statistics.median(ratios[label]):.2f}x ({low:.2f}-{high:.2f})"
        mem = max(r[1].get(label, 0) for r in rounds)
        cpu = statistics.median(r[2][label] for r in rounds)
        print(
            f"{label:40} {seconds:8.2f} {size / 2**20 / seconds:6.0f} {spread:>22} "
            f"{f'{mem} MiB' if mem else '':>9} {cpu:6.2f}"
        )

    def med(label: str) -> str:
        return f"{statistics.median(ratios[label]):.2f}x"

    print(
        f"pack {med('pack')} with read-back, {med('pack --no-read-back')} without, "
        f"{med(PACK_WORKERS)} with read-back on one worker process per core; "
        f"unpack {med('unpack.py --all')} with fsync, {med('unpack.py --all --no-fsync')} "
        f"without (goals: pack <= 0.60x, unpack <= 0.60x large / 1.00x small files); "
        f"medians of {len(rounds)} rounds"
    )
    # No scheduling of a command's work beats its CPU time divided over the cores: with the
    # pack's CPU time of a round, that is the least its ratio to the peer could be.
    cores = os.cpu_count() or 1
    floor = statistics.median(r[2]["pack"] / cores / r[0][PACK_PEER] for r in rounds)
    print(
        f"pack's CPU over {cores} cores = {floor:.2f}x the peer's time (the least any "
        f"parallel schedule of this work could take); the peer's CPU "
        f"{statistics.median(r[2][PACK_PEER] for r in rounds):.2f} s, its time "
        f"{statistics.median(r[0][PACK_PEER] for r in rounds):.2f} s; load "
        f"{os.getloadavg()[0]:.2f}"
    )
    on_workers = statistics.median(r[2][PACK_WORKERS] / cores / r[0][PACK_PEER] for r in rounds)
    whose = "every process's (perf stat)" if PERF else "the packing process's only (no perf)"
    print(
        f"pack on worker processes: CPU over {cores} cores = {on_workers:.2f}x the peer's time "
        f"({whose} CPU; the least this work could take on these cores)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--full", action="store_true", help="a 2 GiB tree (the issue's size)")
    parser.add_argument("--shape", choices=["large", "small", "both"], default="both")
    parser.add_argument("--pairs", type=int, default=2008, help="stereo pairs (small shape)")
    parser.add_argument("--package-mib", type=int, default=0, help="default: tree / 6")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ddk-bench-release"))
    parser.add_argument("--repeat", type=int, default=1, help="rounds; medians are reported")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=SRC)
    shapes = ["large", "small"] if args.shape == "both" else [args.shape]
    for shape in shapes:
        work = args.workdir / shape
        tree = work / "tree" / "ds"
        if shape == "large":
            total = (2048 if args.full else args.size_mib) << 20
            largest = make_tree(tree, total)
            limit = (args.package_mib << 20) or max(total // 6, 2 * largest)
        else:
            largest = make_small_tree(tree, args.pairs)
            limit = 0
        paths = [p for p in tree.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in paths)
        if not limit:  # about 35 packages, as the real release: headers count too
            limit = (size + 1024 * len(paths)) // 34
        print(
            f"[{shape}] tree: {size / 2**20:.1f} MiB in {len(paths)} files "
            f"(largest {largest / 2**20:.2f} MiB), package limit {limit / 2**20:.1f} MiB, "
            f"{os.cpu_count()} CPUs, warm page cache"
        )
        rounds = [one_round(work, tree, limit, env) for _ in range(max(1, args.repeat))]
        report(rounds, size)


if __name__ == "__main__":
    main()
