"""Deterministic per-epoch shuffling across ranks, and resuming mid-epoch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import ConfigError
from dataset_devkit.vin_store import (
    SampleSpace,
    VinOfflineDistributedSampler,
    VinOfflineStoreReader,
)
from dataset_devkit.vin_store.sampler import epoch_order
from tests.optional import need

sizes = st.integers(min_value=0, max_value=300)
worlds = st.integers(min_value=1, max_value=9)
seeds = st.integers(min_value=0, max_value=2**63)
epochs = st.integers(min_value=0, max_value=10_000)


@settings(max_examples=150, deadline=None)
@given(n=sizes, world=worlds, seed=seeds, epoch=epochs)
def test_ranks_together_hold_every_sample_exactly_once(
    n: int, world: int, seed: int, epoch: int
) -> None:
    shares = []
    for rank in range(world):
        sampler = VinOfflineDistributedSampler(n, rank=rank, world_size=world, seed=seed)
        sampler.set_epoch(epoch)
        shares.append(list(sampler))
        assert len(shares[-1]) == sampler.share()
    union = sorted(i for share in shares for i in share)
    assert union == list(range(n))
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


@settings(max_examples=150, deadline=None)
@given(
    n=sizes,
    world=worlds,
    seed=seeds,
    epoch=epochs,
    data=st.data(),
)
def test_resuming_from_a_state_neither_repeats_nor_skips(
    n: int, world: int, seed: int, epoch: int, data: st.DataObject
) -> None:
    rank = data.draw(st.integers(0, world - 1))
    first = VinOfflineDistributedSampler(n, rank=rank, world_size=world, seed=seed)
    first.set_epoch(epoch)
    whole = first.indices()
    # Consume in batches; the loader runs ahead of training, which must not matter.
    batch = data.draw(st.integers(1, 8))
    stop = data.draw(st.integers(0, len(whole)))
    seen: list[int] = []
    iterator = iter(first)
    for _ in range(min(len(whole), stop + 2 * batch)):  # prefetched beyond what was trained
        next(iterator)
    while len(seen) < stop:
        step = min(batch, stop - len(seen))
        seen.extend(whole[len(seen) : len(seen) + step].tolist())
        first.advance(step)
    state = first.state_dict()
    # A new process: the same arguments, the saved state, the same epoch set again.
    second = VinOfflineDistributedSampler(n, rank=rank, world_size=world, seed=seed)
    second.load_state_dict(state)
    second.set_epoch(epoch)
    rest = list(second)
    assert len(second) == len(whole)  # the next pass over the epoch is whole again
    assert seen + rest == whole.tolist()
    second.set_epoch(epoch + 1)
    assert sorted(second) == sorted(first.indices(epoch + 1).tolist())


def test_order_is_fixed_by_seed_and_epoch_and_differs_between_epochs() -> None:
    a = epoch_order(1000, seed=7, epoch=3)
    assert np.array_equal(a, epoch_order(1000, seed=7, epoch=3))
    assert not np.array_equal(a, epoch_order(1000, seed=7, epoch=4))
    assert not np.array_equal(a, epoch_order(1000, seed=8, epoch=3))
    # Pinned: a job resumed under another numpy must continue the very same order.
    assert epoch_order(10, seed=0, epoch=0).tolist() == PINNED


PINNED = [1, 4, 5, 7, 6, 9, 0, 3, 2, 8]


def test_a_state_of_another_dataset_seed_or_shuffle_is_refused() -> None:
    sampler = VinOfflineDistributedSampler(100, rank=1, world_size=4, seed=3)
    state = sampler.state_dict()
    for other, key in (
        (VinOfflineDistributedSampler(101, seed=3), "num_samples=100"),
        (VinOfflineDistributedSampler(100, seed=4), "seed=3"),
        (VinOfflineDistributedSampler(100, seed=3, shuffle=False), "shuffle='full'"),
    ):
        with pytest.raises(ConfigError, match=key):
            other.load_state_dict(state)
    space = SampleSpace.single(np.repeat(np.arange(10), 10))
    block = VinOfflineDistributedSampler(space, seed=3, shuffle="block", window=4)
    with pytest.raises(ConfigError, match="window=4"):
        VinOfflineDistributedSampler(space, seed=3, shuffle="block", window=5).load_state_dict(
            block.state_dict()
        )
    moved = SampleSpace.single(np.repeat(np.arange(20), 5))  # same length, other shards
    with pytest.raises(ConfigError, match="space="):
        VinOfflineDistributedSampler(moved, seed=3, shuffle="block", window=4).load_state_dict(
            block.state_dict()
        )
    with pytest.raises(ConfigError, match="rank must be < world_size"):
        VinOfflineDistributedSampler(10, rank=2, world_size=2)
    with pytest.raises(ConfigError, match="goes past"):
        sampler.advance(26)
    with pytest.raises(ConfigError, match="needs the dataset"):
        VinOfflineDistributedSampler(10, shuffle="block")
    with pytest.raises(ConfigError, match="shuffle must be True, False or one of"):
        VinOfflineDistributedSampler(10, shuffle="random")
    with pytest.raises(ConfigError, match=r"expected the states of ranks 0\.\.3"):
        sampler.load_state_dict([state, state])


def test_a_state_written_before_states_had_a_format_still_resumes() -> None:
    old = {"num_samples": 50, "world_size": 2, "rank": 0, "seed": 9, "shuffle": 1}
    sampler = VinOfflineDistributedSampler(50, rank=0, world_size=2, seed=9)
    sampler.load_state_dict({**old, "epoch": 4, "position": 10})
    sampler.set_epoch(4)
    assert list(sampler) == epoch_order(50, 9, 4)[0::2][10:].tolist()


def test_dataloader_with_workers_resumes_mid_epoch(store: Path) -> None:
    torch = need("torch")
    from dataset_devkit.vin_store import VinOfflineTorchDataset

    reader = VinOfflineStoreReader(store)
    dataset = VinOfflineTorchDataset(reader, blocks=["vin.lengths"])
    n = len(reader)

    def loader(sampler: VinOfflineDistributedSampler) -> Any:
        workers = 2 if sampler.rank == 0 else 0  # rank 1 in-process: half the start-up cost
        return torch.utils.data.DataLoader(
            dataset, batch_size=2, sampler=sampler, num_workers=workers
        )

    trained: dict[int, list[int]] = {0: [], 1: []}
    states = {}
    for rank in (0, 1):
        sampler = VinOfflineDistributedSampler(n, rank=rank, world_size=2, seed=11)
        sampler.set_epoch(5)
        for k, batch in enumerate(loader(sampler)):
            trained[rank].extend(batch["vin.lengths"].reshape(-1).tolist())
            sampler.advance(len(batch["vin.lengths"]))
            if k == 1:
                states[rank] = sampler.state_dict()  # checkpoint, then the job dies
                break
    for rank in (0, 1):
        sampler = VinOfflineDistributedSampler(n, rank=rank, world_size=2, seed=11)
        sampler.load_state_dict(states[rank])
        sampler.set_epoch(5)
        for batch in loader(sampler):
            trained[rank].extend(batch["vin.lengths"].reshape(-1).tolist())
    # vin.lengths holds each sample's build number: every sample once, over both ranks.
    assert sorted(trained[0] + trained[1]) == list(range(n))
