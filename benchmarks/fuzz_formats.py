"""Mutation-fuzz every on-disk format and count the outcomes per class.

Each format's valid tree is built once; every seed damages one metadata file of a copy
(byte flips, truncation, insertion, JSON type swaps, huge numbers, NaN/Infinity, deep
nesting, invalid UTF-8, same-size digit edits), runs the format's reader and validator and
puts the file back. Work runs in a child process per format that reports after every
mutation, so a hang even inside C code is detected (the child is killed and restarted at
the next seed). The goal is 0 raw exceptions, 0 hangs and 0 undetected changes.

    PYTHONPATH=src python benchmarks/fuzz_formats.py --count 10000
    PYTHONPATH=src python benchmarks/fuzz_formats.py --format vin_store --seed 137 -v
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.formats import FORMATS
from tests.fuzz.harness import CLASSES, FAILURES, HANG, Outcome, prepare, run_mutation


def _worker(name: str, seeds: list[int], timeout: float, out: Connection) -> None:
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as tmp:
        tree = prepare(FORMATS[name], Path(tmp))
        out.send(("ready", None))
        for seed in seeds:
            out.send(("done", run_mutation(tree, seed, timeout=timeout)))
    out.send(("end", None))


def fuzz_format(
    name: str, seeds: list[int], timeout: float, verbose: bool
) -> tuple[Counter[str], list[Outcome]]:
    """All outcomes of *seeds* on one format, restarting the child after a hard hang."""
    counts: Counter[str] = Counter()
    failures: list[Outcome] = []
    pending = list(seeds)
    ctx = mp.get_context("fork")
    while pending:
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, args=(name, pending, timeout, child), daemon=True)
        proc.start()
        child.close()
        started = False
        while pending:
            # the build may take a while; each mutation gets the in-process deadline plus slack
            if not parent.poll(600 if not started else timeout * 3 + 30):
                seed = pending.pop(0)
                outcome = Outcome(name, seed, "?", "?", HANG, "child process stopped answering")
                counts[HANG] += 1
                failures.append(outcome)
                print(outcome.describe(), flush=True)
                proc.kill()
                break
            try:
                kind, outcome = parent.recv()
            except EOFError:
                seed = pending.pop(0)
                crashed = Outcome(
                    name, seed, "?", "?", "raw exception", f"child died ({proc.exitcode})"
                )
                counts[crashed.cls] += 1
                failures.append(crashed)
                print(crashed.describe(), flush=True)
                break
            if kind == "ready":
                started = True
                continue
            if kind == "end":
                break
            pending.pop(0)
            counts[outcome.cls] += 1
            if outcome.cls in FAILURES:
                failures.append(outcome)
                print(outcome.describe(), flush=True)
            elif verbose:
                print(outcome.describe(), flush=True)
        proc.join(5)
        if proc.is_alive():
            proc.kill()
        parent.close()
    return counts, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=1000, help="mutations per format")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--seed", type=int, help="run exactly this one seed")
    parser.add_argument("--format", action="append", choices=sorted(FORMATS), help="repeatable")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per mutation")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every outcome")
    args = parser.parse_args()
    seeds = (
        [args.seed] if args.seed is not None else list(range(args.start, args.start + args.count))
    )
    names = args.format or sorted(FORMATS)
    header = f"{'format':<18}" + "".join(f"{c:>30}" for c in CLASSES) + f"{'seconds':>10}"
    rows = []
    for name in names:
        began = time.perf_counter()
        counts, _ = fuzz_format(name, seeds, args.timeout, args.verbose)
        rows.append(
            f"{name:<18}"
            + "".join(f"{counts[c]:>30}" for c in CLASSES)
            + f"{time.perf_counter() - began:>10.1f}"
        )
        print(rows[-1], flush=True)
    print(f"\n{len(seeds)} mutations per format, seeds {seeds[0]}..{seeds[-1]}")
    print(header)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
