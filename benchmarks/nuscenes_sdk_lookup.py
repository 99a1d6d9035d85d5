"""SDK ``camera(sample, channel)`` against the official ``sample['data']`` + ``get``.

Writes one published dataroot (default 6 scenes x 40 samples x 6 cameras, 16x8 JPEGs: the
lookup cost does not depend on the image size) and measures, for every (sample, channel)
pair of the dataroot:

* ``Dataset.camera(sample, channel)``: the index hit and the defensive copy of the row;
* ``nusc.get("sample_data", nusc.get("sample", sample)["data"][channel])`` on
  nuscenes-devkit 1.2.0's ``NuScenes`` (no copy: a caller's mutation reaches its tables).

Two measures, side by side:

* wall time per lookup, paired rounds alternating which side runs first (median per-round
  ratio, minimum seconds of each side);
* with ``--callgrind``: instructions per lookup under ``valgrind --tool=callgrind``, which do
  not depend on the machine's load. Each side runs in its own interpreter twice, with 0 and
  with ``--lookups`` lookups (``PYTHONHASHSEED=0``); the difference divided by the lookups is
  the cost of one lookup, loading and imports cancelled out.

Usage (from the repository root)::

    PYTHONPATH=src python benchmarks/nuscenes_sdk_lookup.py [--rounds 15] [--callgrind]
        [--lookups 20000] [--workdir /tmp/ddk-bench-sdk-lookup]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' fixture writer

CAMERAS = (
    "CAM_FRONT",
    "CAM_FRONT_LEFT",
    "CAM_FRONT_RIGHT",
    "CAM_BACK",
    "CAM_BACK_LEFT",
    "CAM_BACK_RIGHT",
)


def dataroot(workdir: Path, scenes: int, samples: int) -> Path:
    """The published benchmark dataroot, written once per parameters and reused."""
    from tests.nuscenes.dataroot_fixture import publish_fixture

    final = workdir / f"s{scenes}x{samples}" / "v1.0-trainval"
    if not final.exists():
        if final.parent.exists():
            for dirpath, _dirs, _files in os.walk(final.parent):
                os.chmod(dirpath, 0o755)
            shutil.rmtree(final.parent)
        publish_fixture(final.parent, scenes=scenes, samples=samples, cameras=CAMERAS)
    return final


def lookups_of(final: Path, side: str) -> Callable[[int], None]:
    """A function running *n* lookups of *side* round-robin over every (sample, channel).

    *side* is ``ours``, ``official`` or ``loop`` (the same loop without a lookup: its cost is
    subtracted from both sides).
    """
    from dataset_devkit.nuscenes.sdk import Dataset

    ds = Dataset(final)
    pairs = [(s["token"], c) for s in ds.table("sample") for c in ds.channels]
    if side == "loop":

        def run_loop(n: int) -> None:
            k = len(pairs)
            for i in range(n):
                _sample, _channel = pairs[i % k]

        return run_loop
    if side == "ours":
        camera = ds.camera

        def run(n: int) -> None:
            k = len(pairs)
            for i in range(n):
                sample, channel = pairs[i % k]
                camera(sample, channel)

        return run
    from nuscenes.nuscenes import NuScenes

    with contextlib.redirect_stdout(io.StringIO()):
        nusc: Any = NuScenes(version="v1.0-trainval", dataroot=str(final), verbose=False)
    get = nusc.get

    def run_official(n: int) -> None:
        k = len(pairs)
        for i in range(n):
            sample, channel = pairs[i % k]
            get("sample_data", get("sample", sample)["data"][channel])

    return run_official


def timed(final: Path, rounds: int, per_round: int) -> None:
    ours, official = lookups_of(final, "ours"), lookups_of(final, "official")
    bare = lookups_of(final, "loop")

    def seconds(fn: Callable[[int], None]) -> float:
        start = time.perf_counter()
        fn(per_round)
        return (time.perf_counter() - start) / per_round

    t_ours: list[float] = []
    t_official: list[float] = []
    t_loop: list[float] = []
    ratios = []
    for i in range(rounds):
        loop = seconds(bare)
        pair = [(t_ours, ours), (t_official, official)]
        for times, fn in pair if i % 2 == 0 else pair[::-1]:
            times.append(seconds(fn) - loop)
        t_loop.append(loop)
        ratios.append(t_ours[-1] / t_official[-1])
    print(
        f"wall time per lookup ({rounds} paired rounds of {per_round}, loop overhead "
        f"{min(t_loop) * 1e6:.3f} us removed):\n"
        f"  camera(sample, channel)            {min(t_ours) * 1e6:6.3f} us\n"
        f"  official sample['data'] + get      {min(t_official) * 1e6:6.3f} us\n"
        f"  ratio ours / official: median {statistics.median(ratios):.2f} "
        f"(range {min(ratios):.2f}-{max(ratios):.2f}), of minima "
        f"{min(t_ours) / min(t_official):.2f}"
    )


_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from benchmarks.nuscenes_sdk_lookup import lookups_of
from pathlib import Path
run = lookups_of(Path(sys.argv[2]), sys.argv[3])
run(int(sys.argv[4]))
"""


def instructions(final: Path, side: str, n: int) -> int:
    """Instructions (callgrind ``Ir``) of one interpreter running *n* lookups of *side*."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT / "src")}
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                _CHILD,
                str(ROOT),
                str(final),
                side,
                str(n),
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        summary = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
        if summary is None:
            raise RuntimeError(f"no summary line in {out}")
        return int(summary.group(1))


def callgrind(final: Path, n: int) -> None:
    sides = ("loop", "ours", "official")
    runs = [(side, count) for side in sides for count in (n, 0)]
    # Instruction counts do not depend on the load; two interpreters at a time keep the
    # machine usable meanwhile.
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(zip(runs, pool.map(lambda run: instructions(final, *run), runs), strict=True))
    per = {side: (counts[side, n] - counts[side, 0]) / n for side in sides}
    for side in ("ours", "official"):
        per[side] -= per["loop"]
    print(
        f"instructions per lookup (valgrind --tool=callgrind, {n} lookups minus 0, loop "
        f"{per['loop']:.0f} removed):\n"
        f"  camera(sample, channel)            {per['ours']:8.0f}\n"
        f"  official sample['data'] + get      {per['official']:8.0f}\n"
        f"  ratio ours / official              {per['ours'] / per['official']:8.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenes", type=int, default=6)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=20000)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--lookups", type=int, default=20000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ddk-bench-sdk-lookup"))
    args = parser.parse_args()
    final = dataroot(args.workdir, args.scenes, args.samples)
    print(f"dataroot: {args.scenes * args.samples * len(CAMERAS)} key-frame sample_data")
    timed(final, args.rounds, args.per_round)
    if args.callgrind:
        callgrind(final, args.lookups)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
