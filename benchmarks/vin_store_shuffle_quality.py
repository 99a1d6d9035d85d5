"""Shuffle quality beside bytes downloaded: full shuffle vs the shard-aware block shuffle.

For a store of ``--shards`` shards of ``--rows`` samples, every order the sampler offers
is measured on the same epochs (``--epochs`` of them, medians printed):

* ``|move|/n``: mean |new position - old position| over the epoch, divided by its length
  (a uniform shuffle gives 1/3);
* ``same shard``: the fraction of neighbours in the order that come from the same shard
  (a uniform shuffle gives 1/shards; reading shards in turn gives ~1);
* ``neighbour corr``: Pearson correlation of neighbours' source shard numbers;
* ``shards/batch``: distinct shards in a batch of ``--batch`` consecutive samples;
* ``downloads/epoch``: bytes fetched per epoch, as a multiple of the dataset, by one reader
  through a least-recently-used cache of whole shards holding 10 %, 50 % and 100 % of the
  dataset (simulated exactly: the cache keeps shards, the order says which it needs);
  ``benchmarks/objectstore_cache_epochs.py`` measures real downloads from an S3 server.

Usage::

    PYTHONPATH=src python benchmarks/vin_store_shuffle_quality.py --shards 200 --rows 1000
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import numpy.typing as npt

from dataset_devkit.vin_store import SampleSpace, VinOfflineDistributedSampler
from dataset_devkit.vin_store.shuffle import lru_loads


def measure(
    order: npt.NDArray[np.int64], shard_of: npt.NDArray[np.int64], batch: int, capacities: list[int]
) -> dict[str, float]:
    n = order.shape[0]
    source = shard_of[order]
    moved = float(np.abs(order - np.arange(n)).mean() / n)
    same = float(np.mean(source[1:] == source[:-1]))
    corr = float(np.corrcoef(source[1:], source[:-1])[0, 1]) if np.std(source) else 1.0
    per_batch = float(np.mean([len(np.unique(source[i : i + batch])) for i in range(0, n, batch)]))
    shards = int(shard_of.max()) + 1
    listed = source.tolist()
    row = {"|move|/n": moved, "same shard": same, "neighbour corr": corr, "shards/batch": per_batch}
    for capacity in capacities:
        row[f"dl {capacity}"] = lru_loads(listed, capacity) / shards
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", type=int, default=200)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--windows", default="1,2,4,8,16")
    args = parser.parse_args()
    shard_of = np.repeat(np.arange(args.shards, dtype=np.int64), args.rows)
    space = SampleSpace.single(shard_of)
    fractions = (0.1, 0.5, 1.0)
    capacities = [max(1, round(f * args.shards)) for f in fractions]
    modes = [("full", 8), *(("block", int(w)) for w in args.windows.split(","))]
    print(
        f"{args.shards} shards x {args.rows} samples, {args.epochs} epochs (medians); "
        f"cache of {capacities} shards = {', '.join(f'{f:.0%}' for f in fractions)}"
    )
    header = ["order", "|move|/n", "same shard", "neighbour corr", "shards/batch"]
    header += [f"downloads/epoch, cache {f:.0%}" for f in fractions]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for shuffle, window in modes:
        rows = []
        for epoch in range(args.epochs):
            sampler = VinOfflineDistributedSampler(space, seed=17, shuffle=shuffle, window=window)
            order = np.asarray(sampler.sequence(epoch))
            rows.append(measure(order, shard_of, args.batch, capacities))
        med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        name = "full" if shuffle == "full" else f"block, window {window}"
        cells = [name, *(f"{med[k]:.4f}" for k in header[1:5])]
        cells += [f"{med[f'dl {c}']:.2f}x" for c in capacities]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
