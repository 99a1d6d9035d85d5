"""Weighted mixes of stores: how many samples each gives, which, and reading them."""

from __future__ import annotations

import dataclasses
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tests.optional import need

need("torch")  # the torch datasets over mixes and prefetching stores
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dataset_devkit.errors import ConfigError, NotFoundError  # noqa: E402
from dataset_devkit.vin_store import (  # noqa: E402
    VinOfflineBatchedTorchDataset,
    VinOfflineDistributedSampler,
    VinOfflineMix,
    VinOfflineStoreReader,
    VinOfflineStream,
    build_vin_offline_store,
)
from dataset_devkit.vin_store.mixing import stream_choose  # noqa: E402
from tests.vin_store.conftest import make_samples  # noqa: E402


def _streams(*weights: dict[str, float | int]) -> list[VinOfflineStream]:
    return [VinOfflineStream("unused", **w) for w in weights]  # type: ignore[arg-type]


def test_samples_per_stream_follow_the_weights() -> None:
    sizes = [100, 50, 10]
    assert stream_choose(_streams({}, {}, {}), sizes) == (100, 50, 10)
    assert stream_choose(_streams({"repeat": 0.5}, {"repeat": 2.5}, {}), sizes) == (50, 125, 10)
    assert stream_choose(_streams({"choose": 7}, {}, {"choose": 30}), sizes) == (7, 50, 30)
    props = _streams({"proportion": 1}, {"proportion": 1}, {"proportion": 2})
    assert stream_choose(props, sizes) == (40, 40, 80)  # 160 samples, as the stores hold
    assert stream_choose(props, sizes, epoch_size=10) == (3, 2, 5)  # largest remainders
    assert stream_choose(_streams({}, {}, {}), sizes, epoch_size=16) == (10, 5, 1)


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 1000), min_size=1, max_size=6),
    epoch_size=st.integers(0, 5000),
    data=st.data(),
)
def test_proportions_always_fill_the_epoch_exactly(
    sizes: list[int], epoch_size: int, data: st.DataObject
) -> None:
    weights = [data.draw(st.floats(0.01, 10.0)) for _ in sizes]
    chosen = stream_choose(_streams(*({"proportion": w} for w in weights)), sizes, epoch_size)
    assert sum(chosen) == epoch_size
    exact = np.array(weights) * epoch_size / sum(weights)
    assert all(abs(c - e) < 1 for c, e in zip(chosen, exact, strict=True))


def test_weights_that_contradict_each_other_are_refused() -> None:
    with pytest.raises(ConfigError, match="at most one of proportion, repeat and choose"):
        VinOfflineStream("s", proportion=1, repeat=2)
    for bad in ({"repeat": -1}, {"proportion": float("nan")}, {"choose": 1.5}, {"choose": True}):
        with pytest.raises(ConfigError, match="must be"):
            VinOfflineStream("s", **bad)
    with pytest.raises(ConfigError, match="proportion is relative: give it for every stream"):
        stream_choose(_streams({"proportion": 1}, {"repeat": 1}), [5, 5])
    with pytest.raises(ConfigError, match="epoch_size goes with proportions"):
        stream_choose(_streams({"repeat": 1}, {}), [5, 5], epoch_size=4)
    with pytest.raises(ConfigError, match="add up to 0"):
        stream_choose(_streams({"proportion": 0}, {"proportion": 0}), [5, 5])


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two stores; ``vin.lengths`` tells their samples apart (100+ in the second)."""
    root = tmp_path_factory.mktemp("mixing")
    out = []
    for name, n, base in (("a", 10, 0), ("b", 6, 100)):
        samples = [
            dataclasses.replace(s, arrays={**s.arrays, "vin.lengths": np.array([base + i])})
            for i, s in enumerate(make_samples(n, sparse=False))
        ]
        with ThreadPoolExecutor(2) as pool:
            build_vin_offline_store(samples, root / name, rows_per_shard=4, executor=pool)
        out.append(root / name)
    return out


def _lengths(mix: VinOfflineMix, positions: npt.NDArray[np.int64]) -> list[int]:
    return [int(v) for v in mix.read_positions(positions, ["vin.lengths"])["vin.lengths"].ravel()]


def test_an_epoch_holds_whole_passes_and_a_fresh_subset_each_epoch(stores: list[Path]) -> None:
    mix = VinOfflineMix(
        [VinOfflineStream(stores[0], repeat=1.5), VinOfflineStream(stores[1], choose=4)]
    )
    space = mix.sample_space()
    assert space.choose == (15, 4) and space.epoch_length == 19 and len(mix) == 16
    picks = []
    for epoch in range(4):
        counts = Counter(_lengths(mix, space.epoch_positions(9, epoch)))
        assert (
            all(counts[i] in (1, 2) for i in range(10)) and sum(counts[i] for i in range(10)) == 15
        )
        assert sum(counts[100 + i] for i in range(6)) == 4 and max(counts.values()) <= 2
        picks.append(sorted(k for k, v in counts.items() if k < 100 and v == 2))
        assert np.array_equal(space.epoch_positions(9, epoch), space.epoch_positions(9, epoch))
    assert len({tuple(p) for p in picks}) > 1  # the extra half-pass changes with the epoch


def test_a_mix_reads_what_each_store_holds(stores: list[Path], tmp_path: Path) -> None:
    url = stores[1].resolve().as_uri()  # one local store, one by URL
    mix = VinOfflineMix(
        [VinOfflineStream(stores[0]), VinOfflineStream(url, cache_dir=tmp_path / "cache")]
    )
    first, second = VinOfflineStoreReader(stores[0]), VinOfflineStoreReader(stores[1])
    positions = np.array([15, 0, 10, 3, 11], dtype=np.int64)
    batch = mix.read_positions(positions)
    expected = [first[p] if p < 10 else second[p - 10] for p in positions.tolist()]
    for name, values in batch.items():
        for k, value in enumerate(values):
            want = expected[k][name]
            assert np.array_equal(value, want) if isinstance(value, np.ndarray) else value == want
    assert set(mix.block_specs) == set(first.block_specs)
    assert mix.read_position(12, ["vin.lengths"])["vin.lengths"].tolist() == [102]
    with pytest.raises(NotFoundError, match="not held alike by every stream"):
        mix.read_positions([0], ["no.such.block"])
    with pytest.raises(IndexError, match="outside the mix"):
        mix.read_positions([16])


def test_one_sampler_over_a_mix_gives_the_weighted_epoch_on_every_rank(stores: list[Path]) -> None:
    mix = VinOfflineMix(
        [VinOfflineStream(stores[0], proportion=3), VinOfflineStream(stores[1], proportion=1)],
        epoch_size=24,
    )
    dataset = VinOfflineBatchedTorchDataset(mix, blocks=["vin.lengths"])
    seen = []
    for rank in range(3):
        sampler = VinOfflineDistributedSampler(
            dataset, rank=rank, world_size=3, shuffle="block", window=2
        )
        sampler.set_epoch(1)
        loader = dataset.loader(batch_size=4, sampler=sampler)
        seen += [int(v) for batch in loader for v in batch["vin.lengths"].reshape(-1)]
    assert len(seen) == 24
    assert sum(v >= 100 for v in seen) == 6  # a quarter from the second store
