"""What progress reporting costs a long operation, side by side in one run.

Times ``verify_tree`` and ``build_manifest`` over the same tree (many small files and a few
large ones):

* without a callback (the library alone; also what piped, ``--quiet`` and ``--json`` CLI
  runs get: the CLI passes no callback when it draws no bar);
* with a no-op :class:`ProgressUpdate` listener (bytes and files done, as every caller of
  the library's ``progress=`` gets them);
* with the CLI's own bar drawn (to an in-memory terminal console).

``verify_tree`` takes its totals from the manifest; ``build_manifest`` pays a stat walk for
them, only when there is a listener. The goal: a drawn bar costs < 5% of the operation, no
listener ~0%. Usage::

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
from dataset_devkit.integrity import build_manifest, verify_tree, write_manifest
from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.integrity.tree_size import tree_totals


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
        with cli_progress.progress_bar() as advance:
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
    seen = [0, 0]

    def listener(update: ProgressUpdate) -> None:
        seen[0] += update.nbytes
        seen[1] += update.items

    cases: dict[str, Callable[[], AbstractContextManager[Any]]] = {
        "no callback": lambda: nullcontext(None),
        "ProgressUpdate listener": lambda: nullcontext(listener),
        "CLI bar, drawn": _drawn_bar,
    }
    verify_tree(root)  # warm the page cache and the thread pool: the first case pays no more
    results = {}
    for operation in ("verify_tree", "build_manifest"):
        for name, make in cases.items():

            def run(
                make: Callable[[], AbstractContextManager[Any]] = make, operation: str = operation
            ) -> None:
                with make() as advance:
                    if operation == "verify_tree":
                        assert verify_tree(root, progress=advance).ok
                    else:
                        build_manifest(root, progress=advance)

            results[operation, name] = _time(run, args.repeat)
    walk = _time(lambda: tree_totals(root), args.repeat)
    totals = tree_totals(root)
    print(f"tree: {totals[1] if totals else '?'} files, {totals[0] if totals else '?'} bytes")
    for (operation, name), seconds in results.items():
        base = results[operation, "no callback"]
        print(f"{operation:<15} {name:<26} {seconds:8.3f} s   {seconds / base:5.2f}x")
    base = results["build_manifest", "no callback"]
    print(f"{'':<15} {'stat walk for totals':<26} {walk:8.3f} s   {walk / base:5.2f}x")


if __name__ == "__main__":
    main()
