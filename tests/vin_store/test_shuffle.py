"""The epoch orders: full and shard-aware block shuffles, deterministic and cache-friendly."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import ConfigError
from dataset_devkit.vin_store.shuffle import block_order, full_order, lru_loads


def _shards(sizes: Sequence[int]) -> npt.NDArray[np.int64]:
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=30),
    seed=st.integers(0, 2**63),
    epoch=st.integers(0, 1000),
    window=st.integers(1, 12),
)
def test_block_order_is_a_permutation_fixed_by_seed_and_epoch(
    sizes: list[int], seed: int, epoch: int, window: int
) -> None:
    shards = _shards(sizes)
    order = block_order(shards, seed, epoch, window)
    assert sorted(order.tolist()) == list(range(shards.shape[0]))
    assert np.array_equal(order, block_order(shards, seed, epoch, window))


def test_block_order_changes_with_the_epoch_and_is_pinned() -> None:
    shards = _shards([50] * 20)
    a = block_order(shards, 7, 3, 4)
    assert not np.array_equal(a, block_order(shards, 7, 4, 4))
    assert not np.array_equal(a, block_order(shards, 8, 3, 4))
    # Pinned: a job resumed under another numpy must continue the very same order.
    assert block_order(_shards([3, 3, 3]), 0, 0, 2).tolist() == BLOCK_PINNED
    assert full_order(10, 0, 0).tolist() == [1, 4, 5, 7, 6, 9, 0, 3, 2, 8]


BLOCK_PINNED = [2, 1, 5, 4, 0, 8, 3, 7, 6]


@pytest.mark.parametrize("window", [1, 2, 4, 8])
def test_a_cache_of_window_plus_two_shards_loads_each_shard_once(window: int) -> None:
    shards = _shards([400] * 40)
    for epoch in range(3):
        order = shards[block_order(shards, 11, epoch, window)]
        assert lru_loads(order.tolist(), window + 2) == 40
    full = shards[full_order(shards.shape[0], 11, 0)]
    assert lru_loads(full.tolist(), window + 2) > 40 * 50  # a full shuffle thrashes


@pytest.mark.parametrize("window", [2, 4, 8, 16])
def test_neighbours_come_from_about_window_shards(window: int) -> None:
    shards = _shards([500] * 64)
    order = shards[block_order(shards, 3, 0, window)]
    same = float(np.mean(order[1:] == order[:-1]))
    assert 0.6 / window < same < 1.6 / window
    stretch = [len(set(order[i : i + 500].tolist())) for i in range(0, order.size - 500, 250)]
    assert max(stretch) <= window + 3  # any shard's worth of the order touches ~window shards


def test_unequal_shards_and_repeats_are_spread_too() -> None:
    sizes = [400, 10, 250, 1, 400, 399, 30]
    shards = np.concatenate([_shards(sizes), _shards(sizes)])  # a stream read twice
    order = block_order(shards, 5, 1, 2)
    assert sorted(order.tolist()) == list(range(shards.shape[0]))
    assert lru_loads(shards[order].tolist(), 4) <= 2 * len(sizes)


def test_a_bad_window_is_refused() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="window must be an int >= 1"):
            block_order(_shards([3]), 0, 0, bad)  # type: ignore[arg-type]
