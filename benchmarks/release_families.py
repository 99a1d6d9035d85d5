"""Family assignment with pathspec (gitignore rules) against the hand-written regex it replaced.

``release pack`` assigns every file of a tree to a family before packing. The rules moved
from a glob-to-regex translation to ``pathspec``'s gitignore patterns; this measures the
cost per file for a GenVR-duo-like tree (about 30 files per stereo pair, a third under
``depth-zstd-5-mm/``), both ways in one run, and checks they assign the same families.

Usage::

    python benchmarks/release_families.py [--pairs 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

from dataset_devkit.release import FamilyRules


def _tree(pairs: int) -> list[str]:
    paths = []
    for i in range(pairs):
        pair = f"ue5-pro/map{i // 100:04d}/scene{i % 100:04d}/cams00"
        paths += [f"{pair}/{name}" for name in ("meta.json", "prompt.txt")]
        paths += [f"{pair}/videos/{eye}.mp4" for eye in ("left", "right")]
        paths += [f"{pair}/cameras/{eye}.json" for eye in ("left", "right")]
        depth = f"{pair}/depth-zstd-5-mm/group.zarr"
        paths += [f"{depth}/{eye}/{c}.0.0" for eye in ("left", "right") for c in range(12)]
    return paths


_OLD = re.compile(r"(?:[^/]+/)*depth-[^/]*/.*\Z")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=2000, help="stereo pairs in the tree")
    parser.add_argument("--repeat", type=int, default=5, help="rounds, both ways alternating")
    args = parser.parse_args()
    paths = _tree(args.pairs)
    rules = FamilyRules()
    ours, old = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        families = rules.assign(paths)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        reference = {p: "depth" if _OLD.match(p) else "base" for p in paths}
        old.append(time.perf_counter() - start)
        assert families == reference
    a, b = statistics.median(ours), statistics.median(old)
    print(f"{len(paths):,} files, median of {args.repeat}")
    print(f"pathspec (gitignore): {a * 1e6 / len(paths):.2f} us/file, {a:.3f} s")
    print(f"hand-written regex:   {b * 1e6 / len(paths):.2f} us/file, {b:.3f} s")
    print(f"ratio pathspec/regex: {a / b:.1f}x (same families: yes)")


if __name__ == "__main__":
    main()
