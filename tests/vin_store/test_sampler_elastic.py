"""Exact elastic resume: states of N ranks continue the epoch on M ranks, every sample once.

The property is tested on the index arithmetic (samplers only, thousands of examples):
datasets of one store or a weighted mix of stores, every shuffle, world sizes, stops that
are the same on every rank (one state) or anything at all (every rank's state), chains of
resumes. ``test_sampler_loaders.py`` runs the same through real DataLoaders.

CI runs 500 examples of the main property (a few seconds); ``HYPOTHESIS_PROFILE=thorough``
runs 5,000 (about a minute), as after any change to the sampler, the shuffles or mixing.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.vin_store import SampleSpace, VinOfflineDistributedSampler, VinOfflineStream
from dataset_devkit.vin_store.mixing import stream_choose
from tests.conftest import property_examples


def _stream_shards(size: int, rows: int, offset: int) -> npt.NDArray[np.int64]:
    return (np.arange(size, dtype=np.int64) // rows) + offset


@st.composite
def spaces(draw: st.DrawFn) -> SampleSpace:
    """One store (shards of some rows each), a bare length, or a mix with weights."""
    kind = draw(st.sampled_from(["length", "store", "mix"]))
    if kind == "length":
        return SampleSpace.uniform(draw(st.integers(0, 200)))
    count = 1 if kind == "store" else draw(st.integers(2, 4))
    sizes = draw(st.lists(st.integers(1, 60), min_size=count, max_size=count))
    shards, offset = [], 0
    for size in sizes:
        rows = draw(st.integers(1, 16))
        shards.append(_stream_shards(size, rows, offset))
        offset += -(-size // rows)
    starts = tuple(int(s) for s in np.concatenate(([0], np.cumsum(sizes))))
    weighting = draw(st.sampled_from(["none", "proportion", "repeat", "choose", "epoch"]))
    streams = []
    for _ in sizes:
        if weighting == "proportion":
            streams.append(VinOfflineStream("x", proportion=draw(st.floats(0.1, 5.0))))
        elif weighting == "repeat":
            streams.append(VinOfflineStream("x", repeat=draw(st.floats(0.0, 3.0))))
        elif weighting == "choose":
            streams.append(VinOfflineStream("x", choose=draw(st.integers(0, 90))))
        else:
            streams.append(VinOfflineStream("x"))
    epoch_size = draw(st.integers(0, 150)) if weighting in ("proportion", "epoch") else None
    choose = stream_choose(streams, sizes, epoch_size)
    return SampleSpace(np.concatenate(shards), starts, choose)


def _sampler(
    space: SampleSpace, rank: int, world: int, setup: dict[str, int | str]
) -> VinOfflineDistributedSampler:
    return VinOfflineDistributedSampler(
        space,
        rank=rank,
        world_size=world,
        seed=int(setup["seed"]),
        shuffle=str(setup["shuffle"]),
        window=int(setup["window"]),
    )


@settings(max_examples=property_examples(500), deadline=None)
@given(space=spaces(), data=st.data())
def test_states_of_n_ranks_continue_on_m_ranks_with_every_sample_once(
    space: SampleSpace, data: st.DataObject
) -> None:
    shuffles = ["full", "none"] if space.num_positions and not space.shard_of.any() else []
    shuffle = data.draw(st.sampled_from(shuffles or ["full", "block", "none"]))
    setup: dict[str, int | str] = {
        "seed": data.draw(st.integers(0, 2**63)),
        "shuffle": shuffle,
        "window": data.draw(st.integers(1, 8)),
    }
    epoch = data.draw(st.integers(0, 50))
    expected = _sampler(space, 0, 1, setup).sequence(epoch)
    seen: list[int] = []
    state: object = None
    for _hop in range(data.draw(st.integers(1, 3))):
        world = data.draw(st.integers(1, 8))
        samplers = [_sampler(space, rank, world, setup) for rank in range(world)]
        shares = []
        for sampler in samplers:
            if state is not None:
                sampler.load_state_dict(state)  # type: ignore[arg-type]
            sampler.set_epoch(epoch)
            shares.append(list(sampler))
        gathered = data.draw(st.booleans())
        if gathered:  # any stop on each rank; every rank's state saved
            stops = [data.draw(st.integers(0, len(share))) for share in shares]
        else:  # one step count for all ranks (a synchronous loop); one rank's state saved
            common = data.draw(st.integers(0, max(map(len, shares))))
            stops = [min(common, len(share)) for share in shares]
        for sampler, share, stop in zip(samplers, shares, stops, strict=True):
            seen.extend(share[:stop])
            sampler.advance(stop)
        if gathered:
            state = [sampler.state_dict() for sampler in samplers]
        else:
            # A rank that has not finished its share, or the one with the longest share,
            # knows how far every rank went.
            rank = next(
                (r for r, (sh, st_) in enumerate(zip(shares, stops, strict=True)) if st_ < len(sh)),
                int(np.argmax([len(share) for share in shares])),
            )
            state = samplers[rank].state_dict()
    world = data.draw(st.integers(1, 8))
    for rank in range(world):
        last = _sampler(space, rank, world, setup)
        last.load_state_dict(state)  # type: ignore[arg-type]
        last.set_epoch(epoch)
        seen.extend(last)
    assert sorted(seen) == sorted(expected.tolist())
    assert len(expected) == space.epoch_length


@settings(max_examples=property_examples(300), deadline=None)
@given(space=spaces(), data=st.data())
def test_on_the_same_ranks_each_rank_continues_its_own_share(
    space: SampleSpace, data: st.DataObject
) -> None:
    world = data.draw(st.integers(1, 6))
    setup: dict[str, int | str] = {"seed": 5, "shuffle": "full", "window": 4}
    epoch = data.draw(st.integers(0, 9))
    samplers = [_sampler(space, r, world, setup) for r in range(world)]
    shares = []
    for sampler in samplers:
        sampler.set_epoch(epoch)
        shares.append(list(sampler))
    stop = data.draw(st.integers(0, max(map(len, shares), default=0)))
    for rank, (sampler, share) in enumerate(zip(samplers, shares, strict=True)):
        sampler.advance(min(stop, len(share)))
        again = _sampler(space, rank, world, setup)
        again.load_state_dict(sampler.state_dict())
        again.set_epoch(epoch)
        assert share[: min(stop, len(share))] + list(again) == share
