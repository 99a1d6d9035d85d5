"""Deterministic per-epoch order across ranks, with a state that resumes on any number of ranks.

Every rank computes the same epoch for ``(seed, epoch)`` alone (no communication): the
epoch's samples (:class:`~dataset_devkit.vin_store.sample_space.SampleSpace`), in a full or
shard-aware block order (:mod:`~dataset_devkit.vin_store.shuffle`). Rank ``r`` of ``N``
takes every ``N``-th slot of that order starting at ``r``, so the ranks' shares are
disjoint and together hold every slot exactly once; shares differ by at most one sample
when the length does not divide (no sample is repeated to even them out). Interleaving
keeps every rank in the same stretch of the order at the same time, so ranks that share a
cache share the shards it holds.

**Resuming, also elsewhere.** The order does not depend on the number of ranks, so what
was trained on can be said in terms of the order alone: the slots before ``start``, plus a
few ``extras`` beyond it. A rank's state holds that, the partition it was reading and its
position in its share; :meth:`VinOfflineDistributedSampler.load_state_dict` turns it back
into "slots consumed" and splits what is left over the ranks it runs on now, however many.
From one rank's state it assumes every rank stopped after the same number of samples (or
its whole share, when shorter), as a synchronous data-parallel loop does; given the states
of all ranks it is exact whatever each consumed.

A DataLoader's sampler runs ahead of training (workers prefetch batches). With
``torchdata``'s ``StatefulDataLoader`` nothing else is needed: the iterator this sampler
returns is stateful, and the loader snapshots it when each batch's indices are drawn, so
its state is exactly the batches yielded. With a plain DataLoader the loop says what it
trained on with :meth:`~VinOfflineDistributedSampler.advance`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError
from dataset_devkit.vin_store.prefetch import ShardFiles, ShardPrefetcher, prefetch_depth
from dataset_devkit.vin_store.sample_space import SampleSpace
from dataset_devkit.vin_store.shuffle import DEFAULT_WINDOW, SHUFFLES, full_order, order_of

__all__ = ["HasSampleSpace", "VinOfflineDistributedSampler", "epoch_order", "loader_sampler_state"]

#: ``format`` of a state this sampler writes (older states, without it, still load).
STATE_FORMAT: Final = "vin-offline-sampler/2"


def epoch_order(num_samples: int, seed: int, epoch: int) -> npt.NDArray[np.int64]:
    """The full shuffle of positions ``0..num_samples-1`` in *epoch* (same on every rank)."""
    return full_order(num_samples, seed, epoch)


class HasSampleSpace(Protocol):
    """A dataset that can say what it reads: readers, torch datasets, mixes of stores."""

    def sample_space(self) -> SampleSpace: ...


def _int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < low:
        raise ConfigError(f"{name} must be an int >= {low}, found {value!r}", key=name)
    return int(value)


def _shuffle_name(shuffle: object) -> str:
    if shuffle is True:
        return "full"
    if shuffle is False:
        return "none"
    if isinstance(shuffle, str) and shuffle in SHUFFLES:
        return shuffle
    raise ConfigError(
        f"shuffle must be True, False or one of {', '.join(SHUFFLES)}, found {shuffle!r}",
        key="shuffle",
    )


def _space_of(source: int | SampleSpace | HasSampleSpace) -> SampleSpace:
    if isinstance(source, SampleSpace):
        return source
    if isinstance(source, int | np.integer) and not isinstance(source, bool):
        return SampleSpace.uniform(_int(source, "num_samples", 0))
    make = getattr(source, "sample_space", None)
    if callable(make):
        space = make()
        if isinstance(space, SampleSpace):
            return space
    raise ConfigError(
        f"expected a dataset (reader, torch dataset, mix of stores) or a length, found {source!r}",
        key="dataset",
    )


class _Progress:
    """Slots of an epoch's order consumed: all before *start*, and the sorted *extras*."""

    __slots__ = ("extras", "start")

    def __init__(self, start: int = 0, extras: npt.NDArray[np.int64] | None = None) -> None:
        self.start = start
        self.extras = np.empty(0, dtype=np.int64) if extras is None else extras

    def remaining(self, length: int) -> npt.NDArray[np.int64]:
        """The slots not consumed, in order."""
        rest = np.arange(self.start, length, dtype=np.int64)
        if self.extras.size:
            rest = rest[~np.isin(rest, self.extras, assume_unique=True)]
        return rest

    def after(
        self, consumed: npt.NDArray[np.bool_], rest: npt.NDArray[np.int64], length: int
    ) -> _Progress:
        """The progress once the slots *rest[consumed]* are consumed too."""
        open_ = np.flatnonzero(~consumed)
        if not open_.size:
            return _Progress(length)
        start = int(rest[open_[0]])
        taken = np.concatenate([self.extras, rest[consumed]])
        return _Progress(start, np.sort(taken[taken >= start]))


class _Parsed:
    """One checked sampler state: its epoch, partition, rank and position."""

    __slots__ = ("epoch", "position", "progress", "rank", "world")

    def __init__(
        self, epoch: int, world: int, progress: _Progress, rank: int, position: int
    ) -> None:
        self.epoch, self.world, self.progress = epoch, world, progress
        self.rank, self.position = rank, position

    def same_partition(self, other: _Parsed) -> bool:
        return (self.epoch, self.world, self.progress.start) == (
            other.epoch,
            other.world,
            other.progress.start,
        ) and np.array_equal(self.progress.extras, other.progress.extras)


class _ShareIterator:
    """This rank's share of the epoch, from a position; stateful for ``StatefulDataLoader``."""

    def __init__(self, sampler: VinOfflineDistributedSampler) -> None:
        self._sampler = sampler
        if sampler._finished:  # the pass before ran to its end: this one is the whole epoch
            sampler._progress, sampler._finished = _Progress(), False
        share = sampler.indices()
        self._items: list[int] = share.tolist()
        self.yielded = sampler._position
        sampler._position = 0  # a later pass over the same epoch starts from the beginning
        sampler._consumed = self.yielded
        sampler._stop_prefetch()
        self._share: npt.NDArray[np.int64] | None = share  # prefetched from the first draw

    def __iter__(self) -> _ShareIterator:
        return self

    def __next__(self) -> int:
        if self._share is not None:  # the loader draws: its workers exist by now
            share, self._share = self._share, None
            self._sampler._prefetch_for(self, share)
        if self.yielded >= len(self._items):
            self._sampler._finished = True  # the state still says where this pass stands
            self._sampler._stop_prefetch()
            raise StopIteration
        value = self._items[self.yielded]
        self.yielded += 1
        return value

    def state_dict(self) -> dict[str, Any]:
        """The sampler's state with this iterator's position (what the loader drew)."""
        return self._sampler._state(self.yielded)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from *state* (the loader restores it after :meth:`__iter__`)."""
        self._sampler.load_state_dict(state)
        self.__init__(self._sampler)  # type: ignore[misc]


class VinOfflineDistributedSampler:
    """One rank's share of each epoch, in a deterministic order, resumable on any world size.

    Parameters
    ----------
    dataset
        What is read: a reader, a torch dataset or a mix of stores (they know their
        shards), or a plain length (then only ``shuffle="full"`` or ``"none"``).
    rank, world_size
        This process's rank and the number of ranks.
    seed
        The same on every rank; the order of every epoch follows from it.
    shuffle
        ``"full"`` (or True): a uniform shuffle; ``"block"``: shards permuted and samples
        shuffled among about ``window`` shards at a time, so a cache of a few shards
        fetches each shard about once an epoch; ``"none"`` (or False): in order.
    window
        Shards shuffled together by ``"block"``.
    prefetch
        For a dataset read from object storage: fetch the shards this rank reads next
        into the cache while the workers read the current ones (see
        :mod:`~dataset_devkit.vin_store.prefetch`), as far ahead as the cache has room.

    Use it as a torch DataLoader's ``sampler``; call :meth:`set_epoch` before each epoch
    and, with a plain DataLoader, :meth:`advance` with the size of each batch trained on.
    """

    def __init__(
        self,
        dataset: int | SampleSpace | HasSampleSpace,
        *,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        shuffle: bool | str = True,
        window: int = DEFAULT_WINDOW,
        prefetch: bool = True,
    ) -> None:
        self.space = _space_of(dataset)
        self.prefetch = bool(prefetch)
        self._files_of: Callable[[], ShardFiles] | None = getattr(dataset, "shard_files", None)
        self._files: ShardFiles | None = None
        self._prefetcher: ShardPrefetcher | None = None
        self.world_size = _int(world_size, "world_size", 1)
        self.rank = _int(rank, "rank", 0)
        if self.rank >= self.world_size:
            raise ConfigError(
                f"rank must be < world_size ({self.world_size}), found {rank}", key="rank"
            )
        self.seed = _int(seed, "seed", 0)
        self.shuffle = _shuffle_name(shuffle)
        self.window = _int(window, "window", 1)
        if self.shuffle == "block" and isinstance(dataset, int | np.integer):
            raise ConfigError(
                "shuffle='block' needs the dataset (its shards), not only its length",
                key="shuffle",
            )
        self.num_samples = self.space.epoch_length
        self.epoch = 0
        self._progress = _Progress()  # what the current partition starts from
        self._position = 0  # where the next iteration begins in this rank's share
        self._consumed = 0  # how much of this rank's share the loop has trained on
        self._finished = False  # a pass ran to its end: the next one starts the epoch afresh
        self._memo: tuple[int, npt.NDArray[np.int64]] | None = None
        self._share_memo: tuple[int, _Progress, npt.NDArray[np.int64]] | None = None

    # ---- the order -----------------------------------------------------------------------
    def sequence(self, epoch: int | None = None) -> npt.NDArray[np.int64]:
        """The whole epoch, every rank's samples, as positions of the dataset, in order."""
        epoch = self.epoch if epoch is None else _int(epoch, "epoch", 0)
        if self._memo is not None and self._memo[0] == epoch:
            return self._memo[1]
        positions = self.space.epoch_positions(self.seed, epoch)
        slots = order_of(
            self.shuffle, self.space.shard_of[positions], self.seed, epoch, self.window
        )
        ordered = positions[slots]
        ordered.flags.writeable = False
        self._memo = (epoch, ordered)
        return ordered

    def _share_slots(self) -> npt.NDArray[np.int64]:
        memo = self._share_memo
        if memo is None or memo[0] != self.epoch or memo[1] is not self._progress:
            slots = self._progress.remaining(self.num_samples)[self.rank :: self.world_size]
            memo = self._share_memo = (self.epoch, self._progress, slots)
        return memo[2]

    def indices(self, epoch: int | None = None) -> npt.NDArray[np.int64]:
        """This rank's share of *epoch* (default: the current one, as loaded), in order."""
        if epoch is None or _int(epoch, "epoch", 0) == self.epoch:
            return self.sequence()[self._share_slots()]
        return self.sequence(epoch)[self.rank :: self.world_size]

    def share(self) -> int:
        """Samples in this rank's share of the current epoch (what is left of it, after a
        resume on another number of ranks)."""
        return int(self._share_slots().shape[0])

    def set_epoch(self, epoch: int) -> None:
        """Start *epoch* from its beginning, unless a loaded state resumes this very epoch."""
        epoch = _int(epoch, "epoch", 0)
        if epoch != self.epoch:
            self.epoch, self._position, self._consumed = epoch, 0, 0
            self._progress, self._finished = _Progress(), False

    def __len__(self) -> int:
        """Samples the next iteration yields."""
        if self._finished:
            return len(range(self.rank, self.num_samples, self.world_size))
        return self.share() - self._position

    def __iter__(self) -> Iterator[int]:
        return _ShareIterator(self)

    # ---- prefetching ---------------------------------------------------------------------
    def _prefetch_for(self, iterator: _ShareIterator, share: npt.NDArray[np.int64]) -> None:
        """Start fetching ahead of *iterator* (a new pass stops the previous one's)."""
        self._stop_prefetch()
        if not self.prefetch or self._files_of is None:
            return
        if self._files is None:
            self._files = self._files_of()
        if not self._files.remote:
            return
        ahead = prefetch_depth(self._files, self.shuffle, self.window)
        start = iterator.yielded
        if ahead <= 0 or start >= share.shape[0]:
            return
        shards = self.space.shard_of[share[start:]]
        self._prefetcher = ShardPrefetcher(
            self._files, shards, lambda: iterator.yielded - start, ahead
        ).start()

    def _stop_prefetch(self) -> None:
        if self._prefetcher is not None:
            self._prefetcher.stop()
            self._prefetcher.join()  # the next pass's workers may be forked right after
            self._prefetcher = None

    def advance(self, count: int) -> None:
        """Record that the loop has trained on *count* more samples of this epoch."""
        count = _int(count, "count", 0)
        if self._consumed + count > self.share():
            raise ConfigError(
                f"advance({count}) goes past this rank's {self.share()} samples of epoch "
                f"{self.epoch} ({self._consumed} already consumed)",
                key="count",
            )
        self._consumed += count

    # ---- state ---------------------------------------------------------------------------
    def _state(self, position: int) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "num_samples": self.num_samples,
            "space": self.space.fingerprint(),
            "seed": self.seed,
            "shuffle": self.shuffle,
            "window": self.window,
            "epoch": self.epoch,
            "world_size": self.world_size,
            "rank": self.rank,
            "start": self._progress.start,
            "extras": self._progress.extras.tolist(),
            "position": position,
        }

    def state_dict(self) -> dict[str, Any]:
        """Where training stands: the epoch, what the partition started from, and how many
        samples of this rank's share were consumed (plain JSON values)."""
        return self._state(self._consumed)

    def load_state_dict(self, state: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
        """Resume after what *state* says was consumed, on this sampler's ranks.

        *state* is one rank's :meth:`state_dict` (every rank is taken to have stopped after
        the same number of samples), or the list of every rank's states (exact). It must
        come from a sampler of the same dataset, seed and shuffle; the number of ranks and
        this rank may differ.
        """
        states = [state] if isinstance(state, Mapping) else list(state)
        if not states or not all(isinstance(s, Mapping) for s in states):
            raise ConfigError(f"expected a sampler state mapping, found {state!r}", key="state")
        parsed = [self._parsed(s) for s in states]
        first = parsed[0]
        if not all(first.same_partition(other) for other in parsed[1:]):
            raise ConfigError(
                "sampler states of different epochs or partitions cannot be combined",
                key="state",
            )
        world = first.world
        rest = first.progress.remaining(self.num_samples)
        consumed = np.zeros(rest.shape[0], dtype=bool)
        if len(parsed) == 1:
            share = len(range(first.rank, rest.shape[0], world))
            if first.position > share:
                raise ConfigError(
                    f"sampler state position {first.position} is past rank {first.rank}'s "
                    f"{share} samples",
                    key="position",
                )
            # Every rank stopped after as many samples (each at most its share).
            consumed[: world * first.position] = True
        else:
            ranks = sorted(p.rank for p in parsed)
            if ranks != list(range(world)):
                raise ConfigError(
                    f"expected the states of ranks 0..{world - 1}, found ranks {ranks}",
                    key="state",
                )
            for one in parsed:
                mine = np.arange(one.rank, rest.shape[0], world)
                if one.position > mine.shape[0]:
                    raise ConfigError(
                        f"sampler state position {one.position} is past rank {one.rank}'s "
                        f"{mine.shape[0]} samples",
                        key="position",
                    )
                consumed[mine[: one.position]] = True
        self.epoch = first.epoch
        self._progress = first.progress.after(consumed, rest, self.num_samples)
        self._position = self._consumed = 0
        self._finished = False

    def _parsed(self, state: Mapping[str, Any]) -> _Parsed:
        """One state, checked against this sampler's dataset, seed and shuffle."""
        legacy = "format" not in state  # written before states said where they came from
        if not legacy and state.get("format") != STATE_FORMAT:
            raise ConfigError(
                f"not a sampler state of this version: format {state.get('format')!r}",
                key="state",
            )
        mine = self._state(0)
        if legacy:
            given = dict(state, shuffle=_shuffle_name(bool(state.get("shuffle"))))
            keys: tuple[str, ...] = ("num_samples", "seed", "shuffle")
        else:
            given = dict(state)
            keys = ("num_samples", "space", "seed", "shuffle")
            keys += ("window",) if self.shuffle == "block" else ()
        for key in keys:
            if given.get(key) != mine[key]:
                raise ConfigError(
                    f"sampler state has {key}={state.get(key)!r}, this sampler has "
                    f"{mine[key]!r}: resuming would repeat or skip samples",
                    key=key,
                )
        world = _int(state.get("world_size"), "world_size", 1)
        rank = _int(state.get("rank"), "rank", 0)
        if rank >= world:
            raise ConfigError(f"sampler state has rank {rank} of {world} ranks", key="rank")
        start = _int(state.get("start", 0), "start", 0)
        extras = np.unique(np.asarray(state.get("extras", []), dtype=np.int64))
        outside = extras.size and (int(extras[0]) < start or int(extras[-1]) >= self.num_samples)
        if start > self.num_samples or outside:
            raise ConfigError("sampler state names slots outside the epoch", key="start")
        return _Parsed(
            _int(state.get("epoch"), "epoch", 0),
            world,
            _Progress(start, extras),
            rank,
            _int(state.get("position"), "position", 0),
        )


def loader_sampler_state(loader_state: Mapping[str, Any]) -> dict[str, Any]:
    """This sampler's state inside a ``StatefulDataLoader.state_dict()``.

    Load it with :meth:`VinOfflineDistributedSampler.load_state_dict` to resume with a
    different number of DataLoader workers, which the loader's own ``load_state_dict``
    does not allow.
    """
    main = loader_state.get("_snapshot", {}).get("_main_snapshot", loader_state)
    batches = main.get("_sampler_iter_state") if isinstance(main, Mapping) else None
    inner = batches.get("sampler_iter_state") if isinstance(batches, Mapping) else None
    if not isinstance(inner, Mapping) or inner.get("format") != STATE_FORMAT:
        raise ConfigError(
            "no VinOfflineDistributedSampler state in this loader state (was the loader "
            "built with this sampler, and has it drawn a batch?)",
            key="state",
        )
    return dict(inner)
