"""What progress reporting costs a long operation, side by side in one run.

Times ``verify_tree`` over the same tree (many small files and a few large ones):

* without a callback (the library alone);
* with the CLI's callback when no bar is drawn (piped output, ``--quiet``, ``--json``);
* with the CLI's own bar drawn (to an in-memory terminal console), its stat walk included;
* through ``byte_reporter`` into a no-op :class:`ProgressUpdate` listener (what
  ``store verify`` passes the library).

Also times the stat walk that gives a bar its byte and file totals (run only when a bar is
drawn). The goal: a drawn bar costs < 5% of the operation, a hidden one ~0%. Usage::

    python benchmarks/cli_progress_overhead.py [--small-files 4000] [--large-mib 256]
        [--repeat 3] [--workdir /tmp/ddk-bench-progress]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from rich.console import Console

from dataset_devkit.cli import progress as cli_progress
from dataset_devkit.cli.output import state
from dataset_devkit.integrity import verify_tree, write_manifest
from dataset_devkit.integrity.progress import byte_reporter
from dataset_devkit.integrity.tree_size import tree_totals

ROOT: list[Path] = []


def _tree(root: Path, small: int, large_mib: int) -> Path:
    if (root / "content_manifest.json").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    for i in range(small):
        folder = root / f"d{i % 64:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:06d}.bin").write_bytes(os.urandom(2048))
    for i in range(4):
        (root / f"large-{i}.bin").write_bytes(os.urandom(large_mib << 18))
    write_manifest(root)
    return root


@contextmanager
def _drawn_bar() -> Iterator[Any]:
    """The CLI's own bar, drawn into a terminal-like in-memory console."""
    saved = cli_progress.bars_enabled, cli_progress.stderr_console
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    cli_progress.bars_enabled = lambda: True  # type: ignore[assignment]
    cli_progress.stderr_console = lambda: console  # type: ignore[assignment]
    try:
        with cli_progress.tree_bar("verify", ROOT[0]) as advance:
            yield advance
    finally:
        cli_progress.bars_enabled, cli_progress.stderr_console = saved


def _time(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small-files", type=int, default=4000)
    parser.add_argument("--large-mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ddk-bench-progress"))
    args = parser.parse_args()
    root = _tree(args.workdir / "tree", args.small_files, args.large_mib)
    ROOT.append(root)
    state.quiet = True  # the CLI's callback exactly as piped/--quiet/--json runs have it

    def hidden() -> AbstractContextManager[Any]:
        return cli_progress.progress_bar("verify")

    listener: list[int] = []

    def protocol() -> AbstractContextManager[Any]:
        return nullcontext(byte_reporter(lambda u: listener.append(u.nbytes), "verify"))

    cases: dict[str, Callable[[], AbstractContextManager[Any]]] = {
        "no callback": lambda: nullcontext(None),
        "CLI callback, no bar": hidden,
        "CLI bar, drawn": _drawn_bar,
        "ProgressUpdate listener": protocol,
    }
    verify_tree(root)  # warm the page cache and the thread pool: the first case pays no more
    results = {}
    for name, make in cases.items():

        def run(make: Callable[[], AbstractContextManager[Any]] = make) -> None:
            with make() as advance:
                assert verify_tree(root, progress=advance).ok

        results[name] = _time(run, args.repeat)
    walk = _time(lambda: tree_totals(root), args.repeat)
    base = results["no callback"]
    totals = tree_totals(root)
    print(f"tree: {totals[1] if totals else '?'} files, {totals[0] if totals else '?'} bytes")
    for name, seconds in results.items():
        print(f"{name:<26} {seconds:8.3f} s   {seconds / base:5.2f}x")
    print(f"{'stat walk for totals':<26} {walk:8.3f} s   {walk / base:5.2f}x")


if __name__ == "__main__":
    main()
