"""Peak memory of ``release pack`` and ``unpack.py`` against the number of files.

Packs and restores two GenVR-shaped small-file trees (the same layout as
``release_pack_unpack.py --shape small``) of different sizes, each in a child process that
reports its own peak RSS (VmHWM), and prints the growth per file between the two sizes next
to the size of one ``files.jsonl`` row: memory should grow with the index only (bytes of
member data stream through fixed buffers).

Usage::

    python benchmarks/release_memory.py [--pairs 500 2008] [--workdir /tmp/ddk-bench-memory]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_SPEC = importlib.util.spec_from_file_location("release_bench", _HERE / "release_pack_unpack.py")
assert _SPEC is not None and _SPEC.loader is not None
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


def measure(work: Path, pairs: int, env: dict[str, str]) -> dict[str, float]:
    """Pack and restore a tree of *pairs* stereo pairs; return files, row bytes and RSS."""
    tree = work / f"tree-{pairs}" / "ds"
    bench.make_small_tree(tree, pairs)
    files = sum(1 for p in tree.rglob("*") if p.is_file())
    release, out = work / f"release-{pairs}", work / f"out-{pairs}"
    shutil.rmtree(release, ignore_errors=True)
    bench.remove(out)
    code = (
        "from pathlib import Path; from dataset_devkit.release import PackOptions, pack_release; "
        f"pack_release(Path({str(tree)!r}), Path({str(release)!r}), "
        "PackOptions(package_limit=1 << 21, restore_test='none'))" + bench._HWM
    )
    _, pack_rss = bench.timed([sys.executable, "-c", code], env=env)
    script = bench.python_script(release / "unpack.py", "--all", "--quiet", "--output", str(out))
    _, unpack_rss = bench.timed(
        [sys.executable, "-I", "-c", script], cwd=release, stdout=bench.subprocess.DEVNULL
    )
    index = (release / "files.jsonl").stat().st_size
    bench.remove(out)
    shutil.rmtree(release)
    return {"files": files, "row": index / files, "pack": pack_rss, "unpack": unpack_rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, nargs=2, default=[500, 2008])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ddk-bench-memory"))
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=bench.SRC)
    small, large = (measure(args.workdir, n, env) for n in sorted(args.pairs))
    print(f"{'files':>7} {'pack peak':>10} {'unpack peak':>12}")
    for m in (small, large):
        print(f"{m['files']:7.0f} {m['pack']:8.0f} MiB {m['unpack']:10.0f} MiB")
    extra = large["files"] - small["files"]
    for label in ("pack", "unpack"):
        per_file = (large[label] - small[label]) * 2**20 / extra
        print(
            f"{label}: {per_file:,.0f} bytes per extra file "
            f"(one files.jsonl row is {large['row']:.0f} bytes)"
        )


if __name__ == "__main__":
    main()
