"""Resuming real DataLoaders: plain ones with ``advance``, and torchdata's StatefulDataLoader.

A mix of two stores, block shuffled: what the loaders yield before a stop and after the
resume (on another number of ranks, or of workers) is exactly the epoch, each sample once.
"""

from __future__ import annotations

import dataclasses
import importlib
import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from tests.optional import need

torch = need("torch")
stateful = importlib.import_module(
    "torchdata.stateful_dataloader"
)  # torchdata comes with torch here

from dataset_devkit.vin_store import (  # noqa: E402
    VinOfflineBatchedTorchDataset,
    VinOfflineDistributedSampler,
    VinOfflineMix,
    VinOfflineStream,
    VinOfflineTorchDataset,
    build_vin_offline_store,
    loader_sampler_state,
)
from tests.vin_store.conftest import make_samples  # noqa: E402

FORK = multiprocessing.get_context("fork")


@pytest.fixture(scope="module")
def mix(tmp_path_factory: pytest.TempPathFactory) -> VinOfflineMix:
    """Stores of 13 and 7 samples; ``vin.lengths`` says which sample (100+ in the second)."""
    root = tmp_path_factory.mktemp("mix")
    stores = []
    for name, n, base in (("a", 13, 0), ("b", 7, 100)):
        samples = [
            dataclasses.replace(
                s, arrays={**s.arrays, "vin.lengths": np.array([base + i], np.int64)}
            )
            for i, s in enumerate(make_samples(n, sparse=False))
        ]
        with ThreadPoolExecutor(2) as pool:
            build_vin_offline_store(samples, root / name, rows_per_shard=3, executor=pool)
        stores.append(root / name)
    return VinOfflineMix(
        [VinOfflineStream(stores[0], repeat=1.5), VinOfflineStream(stores[1], choose=5)]
    )


def _sampler(mix: VinOfflineMix, rank: int = 0, world: int = 1) -> VinOfflineDistributedSampler:
    return VinOfflineDistributedSampler(
        mix, rank=rank, world_size=world, seed=21, shuffle="block", window=2
    )


def _epoch(mix: VinOfflineMix, epoch: int) -> list[int]:
    order = _sampler(mix).sequence(epoch)
    return [int(v) for v in mix.read_positions(order, ["vin.lengths"])["vin.lengths"].ravel()]


def _values(batch: dict[str, Any]) -> list[int]:
    return [int(v) for v in batch["vin.lengths"].reshape(-1)]


def test_plain_dataloaders_stopped_on_two_ranks_resume_on_three(mix: VinOfflineMix) -> None:
    dataset = VinOfflineTorchDataset(mix, blocks=["vin.lengths"])
    seen: list[int] = []
    states = []
    for rank in range(2):
        sampler = _sampler(mix, rank, 2)
        sampler.set_epoch(3)
        workers = 2 if rank == 0 else 0
        loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=2,
            sampler=sampler,
            num_workers=workers,
            multiprocessing_context=FORK if workers else None,
        )
        for step, batch in enumerate(loader):
            seen += _values(batch)
            sampler.advance(len(batch["vin.lengths"]))
            if step == 2:  # the checkpoint: both ranks after three steps
                break
        states.append(sampler.state_dict())
    for rank in range(3):
        sampler = _sampler(mix, rank, 3)
        sampler.load_state_dict(states)
        sampler.set_epoch(3)
        loader = torch.utils.data.DataLoader(dataset, batch_size=2, sampler=sampler)
        seen += [v for batch in loader for v in _values(batch)]
    assert sorted(seen) == sorted(_epoch(mix, 3))
    assert len(seen) == 13 + 6 + 5  # 1.5 passes of 13, 5 of 7


def _stateful(mix: VinOfflineMix, sampler: VinOfflineDistributedSampler, workers: int) -> Any:
    dataset = VinOfflineTorchDataset(mix, blocks=["vin.lengths"])
    return stateful.StatefulDataLoader(
        dataset,
        batch_size=3,
        sampler=sampler,
        num_workers=workers,
        prefetch_factor=2 if workers else None,
        multiprocessing_context=FORK if workers else None,
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_a_stateful_dataloader_state_carries_the_sampler_past_its_prefetch(
    mix: VinOfflineMix, workers: int
) -> None:
    sampler = _sampler(mix)
    sampler.set_epoch(1)
    loader = _stateful(mix, sampler, workers)
    before: list[int] = []
    for step, batch in enumerate(loader):
        before += _values(batch)
        if step == 3:
            state = loader.state_dict()  # the workers have prefetched batches beyond this
            break
    inner = loader_sampler_state(state)
    assert inner["position"] == 12 and inner["epoch"] == 1
    again = _sampler(mix)
    resumed = _stateful(mix, again, workers)
    resumed.load_state_dict(state)
    again.set_epoch(1)
    after = [v for batch in resumed for v in _values(batch)]
    assert before + after == _epoch(mix, 1)  # one rank: the very order, nothing lost or twice


def test_a_stateful_dataloader_state_resumes_on_two_ranks_and_on_fewer_workers(
    mix: VinOfflineMix,
) -> None:
    sampler = _sampler(mix)
    sampler.set_epoch(2)
    loader = _stateful(mix, sampler, 2)
    before: list[int] = []
    for step, batch in enumerate(loader):
        before += _values(batch)
        if step == 2:
            state = loader.state_dict()
            break
    after: list[int] = []
    for rank in range(2):  # the loader's own state, on two ranks (same workers each)
        again = _sampler(mix, rank, 2)
        resumed = _stateful(mix, again, 2 if rank == 0 else 0)
        if rank == 0:
            resumed.load_state_dict(state)
        else:  # other worker counts: the sampler's state out of the loader's
            again.load_state_dict(loader_sampler_state(state))
        again.set_epoch(2)
        after += [v for batch in resumed for v in _values(batch)]
    assert sorted(before + after) == sorted(_epoch(mix, 2))


def test_the_batched_dataset_builds_a_stateful_loader_that_resumes(mix: VinOfflineMix) -> None:
    dataset = VinOfflineBatchedTorchDataset(mix, blocks=["vin.lengths"])
    sampler = _sampler(mix)
    loader = dataset.loader(batch_size=4, sampler=sampler, stateful=True)
    assert isinstance(loader, stateful.StatefulDataLoader)
    sampler.set_epoch(4)
    iterator = iter(loader)
    before = _values(next(iterator)) + _values(next(iterator))
    state = loader.state_dict()
    again = _sampler(mix)
    resumed = dataset.loader(batch_size=4, sampler=again, stateful=True)
    resumed.load_state_dict(state)
    again.set_epoch(4)
    assert before + [v for batch in resumed for v in _values(batch)] == _epoch(mix, 4)
