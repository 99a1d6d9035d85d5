"""TransformTree lookups against the geometry they cannot avoid, measured side by side.

For chains of 1-6 edges shaped like a REP-105 robot (``map -> odom`` and ``odom -> base_link``
dynamic at 100 Hz, then a static camera chain) and 1k-1M samples an edge, prints the cost of
one ``lookup`` and of one entry of ``lookup_many`` at camera-like query times (sorted, random
within the samples), and their ratio to the bound: the same ``interpolate_transform`` and
``compose`` calls on samples already found (no bisection, no tree), i.e. the scalar maths a
lookup must do to give the same bits. Rounds are interleaved and the medians reported; times
are the process's CPU time (``time.process_time``), so waiting for a core on a shared machine
does not count, though its caches and clock still do. An all-dynamic chain (every edge
interpolated) is measured too, up to ``--dynamic-max`` samples.

Then the memory a dynamic edge holds per sample (tracemalloc, in-order and shuffled inserts)
against the 64-byte floor of one int64 time and seven float64 values, and the cost of ``add``.

Usage::

    PYTHONPATH=src python benchmarks/tf_tree_lookup.py
    PYTHONPATH=src python benchmarks/tf_tree_lookup.py --samples 1000 100000 --lookups 5000
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable

from dataset_devkit.nuscenes.common.geometry import (
    Transform,
    compose,
    interpolate_transform,
    rvec_to_quat,
)
from dataset_devkit.nuscenes.common.tf_tree import TransformTree

PERIOD_NS = 10_000_000  # 100 Hz
FRAMES = ["map", "odom", "base_link", "oakd_link", "oakd_rgb_frame", "oakd_lens", "optical"]


def _value(k: int, edge: int) -> Transform:
    return ((0.01 * k + edge, 0.5 * edge, 0.1), rvec_to_quat((0.001 * edge, 0.0, 0.002 * k)))


def build(samples: int, dynamic_edges: int) -> tuple[TransformTree, dict[int, list[Transform]]]:
    """A 6-edge chain, its first *dynamic_edges* edges timed; returns the tree and samples."""
    tree = TransformTree(max_gap_ns=PERIOD_NS * 2)
    kept: dict[int, list[Transform]] = {}
    for edge in range(6):
        parent, child = FRAMES[edge], FRAMES[edge + 1]
        if edge < dynamic_edges:
            values = [_value(k, edge) for k in range(samples)]
            kept[edge] = values
            for k, value in enumerate(values):
                tree.add(parent, child, k * PERIOD_NS, value, static=False)
        else:
            tree.add(parent, child, 0, _value(1, edge), static=True)
    tree.freeze()
    return tree, kept


def bound_for(
    tree: TransformTree, kept: dict[int, list[Transform]], length: int, times: list[int]
) -> Callable[[], None]:
    """The scalar maths of the lookups on pre-found samples: interpolations and compositions."""
    dynamic = [e for e in range(length) if e in kept]
    static_run = None
    if length > len(dynamic):  # the static tail, composed once, as the tree's path plan does
        static_run = tree.lookup(FRAMES[len(dynamic)], FRAMES[length], 0)
    work = []
    for t in times:
        k = t // PERIOD_NS
        frac = (t - k * PERIOD_NS) / PERIOD_NS
        work.append((frac, [(kept[e][k], kept[e][min(k + 1, len(kept[e]) - 1)]) for e in dynamic]))

    def run() -> None:
        for frac, pairs in work:
            acc = static_run
            for a, b in reversed(pairs):  # walked from the source up
                value = interpolate_transform(a, b, frac)
                acc = value if acc is None else compose(value, acc)

    return run


def median_us(rounds: list[float], count: int) -> float:
    return statistics.median(rounds) / count * 1e6


def measure(samples: int, dynamic_edges: int, lookups: int, repeats: int) -> None:
    tree, kept = build(samples, dynamic_edges)
    rng = random.Random(samples)
    span = (samples - 1) * PERIOD_NS
    times = sorted(rng.randrange(0, span) for _ in range(lookups))
    for length in range(1, 7):
        target, source = FRAMES[0], FRAMES[length]
        bound = bound_for(tree, kept, length, times)

        def single(target: str = target, source: str = source) -> None:
            for t in times:
                tree.lookup(target, source, t)

        def many(target: str = target, source: str = source) -> None:
            tree.lookup_many(target, source, times)

        took: dict[str, list[float]] = {"lookup": [], "many": [], "bound": []}
        for _ in range(repeats):  # interleaved rounds
            for name, run in (("lookup", single), ("many", many), ("bound", bound)):
                start = time.process_time()
                run()
                took[name].append(time.process_time() - start)
        one, batch, floor = (median_us(took[n], lookups) for n in ("lookup", "many", "bound"))
        dyn = min(length, dynamic_edges)
        print(
            f"{samples:>9,} {length:>5} {dyn:>4}   lookup {one:6.2f} us  many {batch:6.2f} us"
            f"   bound {floor:6.2f} us   lookup/bound {one / floor:5.2f}x"
            f"  many/bound {batch / floor:5.2f}x"
        )


def memory(count: int) -> None:
    value = _value(3, 1)
    for order in ("in order", "shuffled"):
        stamps = list(range(0, count * PERIOD_NS, PERIOD_NS))
        if order == "shuffled":
            random.Random(0).shuffle(stamps)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        start = time.process_time()
        tree = TransformTree(max_gap_ns=PERIOD_NS)
        for t in stamps:
            tree.add("odom", "base_link", t, value, static=False)
        added = time.process_time() - start
        tree.freeze()  # sorts the shuffled samples
        held = tracemalloc.get_traced_memory()[0] - base
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        print(
            f"{count:,} samples {order}: {held / count:5.1f} bytes/sample held "
            f"({held / count / 64:4.2f}x the 64-byte floor), peak {peak / count:5.1f}; "
            f"add {added / count * 1e6:5.2f} us/sample (under tracemalloc)"
        )
        del tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--samples", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000]
    )
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dynamic-max", type=int, default=100_000)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    print("  samples edges dyn")
    for samples in args.samples:
        measure(samples, 2, args.lookups, args.repeats)
    print("all edges dynamic:")
    for samples in args.samples:
        if samples <= args.dynamic_max:
            measure(samples, 6, args.lookups, args.repeats)
    memory(100_000)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")


if __name__ == "__main__":
    main()
