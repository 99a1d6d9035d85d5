"""torch ``Dataset`` adapters over :class:`VinOfflineStoreReader` (extra ``torch``).

The reader inside pickles as its config alone and reopens lazily per process, so the
datasets work with ``fork`` and ``spawn`` DataLoader workers alike.

A sample of :class:`VinOfflineTorchDataset` is a dict of a type of its own that torch's
default collate hands to :func:`collate_samples` (through ``default_collate_fn_map``, the
registry torch documents for this): a plain ``DataLoader(dataset, batch_size=8)`` stacks
the tensors and keeps records as lists, where torch's own rules would try to stack the
records too, and fail on the first ones of different lengths.

In a DataLoader worker, both datasets move the objects the worker inherited into the
garbage collector's permanent generation on their first fetch (``gc.freeze()``): otherwise
the worker's first full collection walks the whole inherited heap (torch alone is ~170,000
objects), ~0.2 s of CPU that also copies ~40 MB of the parent's pages into each worker.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dataset_devkit.errors import ConfigError, MissingDependencyError
from dataset_devkit.vin_store._shm_batch import (
    Layout,
    ShmBatch,
    install_cleanup,
    new_batch_buffer,
    shm_available,
)
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.mixing import VinOfflineMix
from dataset_devkit.vin_store.prefetch import ShardFiles
from dataset_devkit.vin_store.reader import VinOfflineStoreReader
from dataset_devkit.vin_store.sample_space import SampleSpace

try:
    import torch
    from torch.utils.data import DataLoader, Dataset, default_collate, get_worker_info
except ImportError as exc:  # pragma: no cover - the torch extra is installed in CI
    raise MissingDependencyError(
        "torch", extra="torch", purpose="the VIN offline torch Dataset"
    ) from exc

__all__ = [
    "PendingBatch",
    "VinOfflineBatchedTorchDataset",
    "VinOfflineTorchDataset",
    "VinOfflineTorchSample",
    "collate_samples",
    "passthrough_collate",
]


#: True until this process's first fetch; a forked child starts over (see _first_fetch_here).
_fetched_nothing_yet = True


def _starts_over_after_fork() -> None:
    global _fetched_nothing_yet
    _fetched_nothing_yet = True


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_starts_over_after_fork)


def _first_fetch_here() -> None:
    """Freeze what a DataLoader worker inherited (nothing is frozen in any other process).

    A full collection in a worker would visit every object of the parent's heap, writing
    each one's gc header and so copying its page; frozen, they are never visited. They are
    also never collected in the worker, where they are shared pages anyway: this is the
    child's half of what the ``gc.freeze`` documentation recommends before forking.
    """
    global _fetched_nothing_yet
    _fetched_nothing_yet = False
    if get_worker_info() is not None:
        gc.freeze()


#: A per-sample transform: a sample (dict of tensors and records) in, anything out.
Transform = Callable[[dict[str, Any]], Any]


def _to_torch(values: dict[str, Any]) -> dict[str, Any]:
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in values.items()}


class VinOfflineTorchSample(dict[str, Any]):
    """One sample as the per-item dataset returns it: a plain dict to use, of a type that
    torch's default collate batches with :func:`collate_samples`."""

    __slots__ = ()

    def __reduce__(self) -> Any:  # a worker sends it to the main process as this type
        return (VinOfflineTorchSample, (dict(self),))


def collate_samples(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Stack tensors on a new batch axis and keep records as lists.

    A block whose tensors differ in shape (a transform cropped them differently) cannot be
    stacked: the error names the block and the shapes.
    """
    first = samples[0]
    out: dict[str, Any] = {}
    for key in first:
        values = [s[key] for s in samples]
        if isinstance(first[key], torch.Tensor):
            shapes = sorted({tuple(v.shape) for v in values})
            if len(shapes) > 1:
                raise ConfigError(
                    f"collate_samples: block {key!r} has tensors of shapes {shapes} in one "
                    "batch; only equal shapes stack (make the transform give one shape, or "
                    "collate this block yourself)",
                    key="collate_fn",
                )
            out[key] = torch.stack(values)
        else:
            out[key] = values
    return out


def _collate_registered(batch: Sequence[dict[str, Any]], **_: Any) -> dict[str, Any]:
    return collate_samples(batch)


def _register_default_collate() -> None:
    """Let torch's default collate batch our samples as :func:`collate_samples` does."""
    try:
        from torch.utils.data._utils.collate import default_collate_fn_map
    except ImportError:  # pragma: no cover - torch < 1.13 has no registry: see the docs
        return
    default_collate_fn_map.setdefault(VinOfflineTorchSample, _collate_registered)


_register_default_collate()


def _as_sample(value: Any) -> Any:
    """A transform's plain dict stays collated by :func:`collate_samples` by default."""
    return VinOfflineTorchSample(value) if type(value) is dict else value


_COLLATE_HINT = (
    "VinOfflineBatchedTorchDataset fetches whole batches, which torch's default collate_fn "
    "cannot take apart: build the loader with dataset.loader(batch_size=..., "
    "num_workers=...), or pass collate_fn=passthrough_collate to DataLoader"
)


class PendingBatch:
    """What ``__getitems__`` hands to the collate function: a checked batch, not yet read.

    :func:`passthrough_collate` reads it (in a worker, straight into shared memory). Any
    other collate that indexes, iterates or sizes it gets a :class:`ConfigError` saying how
    to build the loader, and nothing has been allocated that could be left behind.
    """

    __slots__ = ("_dataset", "_positions")

    def __init__(self, dataset: VinOfflineBatchedTorchDataset, positions: Any) -> None:
        self._dataset = dataset
        self._positions = positions

    def gather(self) -> Any:
        """The collated batch: a dict of tensors (a :class:`ShmBatch` in transit)."""
        return self._dataset._gather(self._positions)

    def _refuse(self, *_: object) -> Any:
        raise ConfigError(_COLLATE_HINT, key="collate_fn")

    __getitem__ = __len__ = __iter__ = __contains__ = _refuse


def passthrough_collate(batch: Any) -> Any:
    """Collate for :class:`VinOfflineBatchedTorchDataset`: read the fetched batch as is."""
    if isinstance(batch, PendingBatch):
        return batch.gather()
    return batch


class VinOfflineTorchDataset(Dataset[dict[str, Any]]):
    """Map-style dataset of one split; a sample is a dict of tensors and records.

    A ``DataLoader`` with its default collate batches samples with :func:`collate_samples`
    (tensors stacked, records as lists, whatever their lengths); pass
    ``collate_fn=collate_samples`` explicitly to say so, or a collate of your own.

    Parameters
    ----------
    config
        Store and split to read (a path means ``"all"``), an open reader to share, or a
        :class:`~dataset_devkit.vin_store.VinOfflineMix` of several stores.
    blocks
        Block names to read (default: every block).
    raw_records
        Records as their MessagePack bytes instead of decoded values.
    transform
        Called on each sample (a dict of tensors and records) where it is read: in the
        DataLoader worker, before collating. Its result is the item; a plain dict it
        returns is still collated by :func:`collate_samples`. It must pickle for
        ``spawn`` workers (a module-level function or a ``functools.partial`` of one).
    """

    def __init__(
        self,
        config: VinOfflineStoreConfig | Path | str | VinOfflineStoreReader | VinOfflineMix,
        blocks: Sequence[str] | None = None,
        *,
        raw_records: bool = False,
        transform: Transform | None = None,
    ) -> None:
        self.reader: VinOfflineStoreReader | VinOfflineMix
        if isinstance(config, VinOfflineStoreReader | VinOfflineMix):
            self.reader = config  # share its open handles
        else:
            self.reader = VinOfflineStoreReader(config)
        if isinstance(blocks, str | bytes):  # a bare name would be read letter by letter
            raise ConfigError(
                f"blocks must be a list of block names, found {blocks!r}", key="blocks"
            )
        if transform is not None and not callable(transform):
            raise ConfigError(
                f"transform must be callable (sample -> item), found {transform!r}",
                key="transform",
            )
        self.blocks = None if blocks is None else tuple(blocks)
        self.decode_records = not raw_records
        self.transform = transform

    def __len__(self) -> int:
        return len(self.reader)

    def __repr__(self) -> str:
        extra = "" if self.blocks is None else f", blocks={list(self.blocks)!r}"
        if self.transform is not None:
            extra += f", transform={getattr(self.transform, '__qualname__', self.transform)}"
        return f"{type(self).__name__}({self.reader._repr_args()}{extra})"

    def _item(self, values: dict[str, Any]) -> Any:
        sample = VinOfflineTorchSample(_to_torch(values))
        return sample if self.transform is None else _as_sample(self.transform(sample))

    def sample_space(self) -> SampleSpace:
        """What a :class:`~dataset_devkit.vin_store.VinOfflineDistributedSampler` draws from."""
        return self.reader.sample_space()

    def shard_files(self) -> ShardFiles:
        """Each shard's files for the blocks read (the sampler prefetches URL stores)."""
        return self.reader.shard_files(self.blocks)

    def _positions(self, indices: Sequence[int]) -> Any:
        return self.reader.split_positions(indices)  # checked: type and range

    def __getitem__(self, index: int) -> Any:
        if _fetched_nothing_yet:
            _first_fetch_here()
        if isinstance(index, bool) or not isinstance(index, int | np.integer):
            raise ConfigError(f"index must be an int, found {index!r}", key="index")
        if index < 0:  # as the reader and Python sequences do
            index += len(self)
        position = int(self._positions([index])[0])
        values = self.reader.read_position(
            position, self.blocks, writeable=True, decode_records=self.decode_records
        )
        return self._item(values)


class VinOfflineBatchedTorchDataset(VinOfflineTorchDataset):
    """Like :class:`VinOfflineTorchDataset`, but a DataLoader fetches a batch in one call.

    Build the DataLoader with :meth:`loader` (or pass ``collate_fn=passthrough_collate``):
    ``__getitems__`` returns a :class:`PendingBatch` that the passthrough collate reads as
    one gather, and that torch's default collate refuses with a message saying so (instead
    of failing deep in a worker). :meth:`batch` reads a batch directly.
    Inside a worker on Linux the batch travels through
    one ``/dev/shm`` file (see :mod:`dataset_devkit.vin_store._shm_batch`): several times
    cheaper per batch than torch's descriptor passing. ``shm_transport=False`` keeps torch's
    own transport.

    *transform* is applied per sample, in the worker, as in :class:`VinOfflineTorchDataset`:
    the batch is read in one gather, cut into samples, each transformed, and the results
    collated with :func:`collate_samples` (they then travel through torch's transport: the
    transform decides their shapes, so they cannot be gathered into one file up front).
    """

    def __init__(
        self,
        config: VinOfflineStoreConfig | Path | str | VinOfflineStoreReader | VinOfflineMix,
        blocks: Sequence[str] | None = None,
        *,
        raw_records: bool = False,
        shm_transport: bool = True,
        transform: Transform | None = None,
    ) -> None:
        super().__init__(config, blocks, raw_records=raw_records, transform=transform)
        self._use_shm = shm_transport and shm_available()
        if self._use_shm:
            install_cleanup()  # the main process removes what an early stop leaves behind

    def loader(
        self,
        batch_size: int,
        *,
        num_workers: int = 0,
        shuffle: bool = False,
        stateful: bool = False,
        **options: Any,
    ) -> DataLoader[Any]:
        """A ``DataLoader`` of collated batches over this dataset, checked in the caller.

        *options* go to ``DataLoader`` as they are (``multiprocessing_context``,
        ``pin_memory``, ``prefetch_factor``, ``persistent_workers``, ``sampler``, ...),
        except ``collate_fn``, which this dataset fixes. ``stateful=True`` makes it a
        ``torchdata`` ``StatefulDataLoader``, whose ``state_dict`` carries the sampler's
        (a :class:`~dataset_devkit.vin_store.VinOfflineDistributedSampler` resumes exactly).
        """
        for name, value, low in (("batch_size", batch_size, 1), ("num_workers", num_workers, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{name} must be an int >= {low}, found {value!r}", key=name)
        if "collate_fn" in options:
            raise ConfigError(
                "loader() sets collate_fn itself (batches are read whole); drop collate_fn",
                key="collate_fn",
            )
        kind: Any = DataLoader
        if stateful:
            try:
                from torchdata.stateful_dataloader import StatefulDataLoader
            except ImportError as exc:
                raise MissingDependencyError(
                    "torchdata", extra="torch", purpose="loader(stateful=True)"
                ) from exc
            kind = StatefulDataLoader
        loader: DataLoader[Any] = kind(
            self,
            batch_size=batch_size,
            num_workers=num_workers,
            shuffle=shuffle,
            collate_fn=passthrough_collate,
            **options,
        )
        return loader

    def batch(self, indices: Sequence[int]) -> dict[str, Any]:
        """Read the samples at *indices* of the split as one collated batch of tensors
        (each sample transformed first, when the dataset has a transform)."""
        batch = self.reader.read_positions(
            self._positions(indices),
            self.blocks,
            writeable=True,
            decode_records=self.decode_records,
        )
        return self._transformed(batch) if self.transform is not None else _to_torch(batch)

    def _transformed(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Cut a read batch into samples, transform each, collate the results."""
        size = len(next(iter(batch.values()))) if batch else 0
        samples = [self._item({k: v[i] for k, v in batch.items()}) for i in range(size)]
        return default_collate(samples)  # type: ignore[no-any-return]

    def __getitems__(self, indices: list[int]) -> PendingBatch:
        """The DataLoader's batched fetch: indices checked now, read by the collate."""
        if _fetched_nothing_yet:
            _first_fetch_here()
        return PendingBatch(self, self._positions(indices))

    def _gather(self, positions: Any) -> Any:
        if self.transform is not None:
            batch = self.reader.read_positions(
                positions, self.blocks, writeable=True, decode_records=self.decode_records
            )
            return self._transformed(batch)
        if get_worker_info() is None:
            batch = self.reader.read_positions(
                positions, self.blocks, writeable=True, decode_records=self.decode_records
            )
            return _to_torch(batch)
        # In a worker: gather straight into one shared buffer, so the batch crosses to the
        # main process as a single mapping with no extra copy.
        specs = self.reader.block_specs
        names = list(specs) if self.blocks is None else list(self.blocks)
        numeric = [n for n in names if n in specs and specs[n].kind == "zarr_array"]
        layout: Layout = []
        total = 0
        for name in numeric:
            shape = (len(positions), *(specs[name].shape or ())[1:])
            dtype = np.dtype(specs[name].dtype)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            layout.append((name, shape, dtype, total, nbytes))
            total += -(-nbytes // 64) * 64
        if self._use_shm:
            return self._gather_into_shm(positions, names, layout, total)
        shared = torch.UntypedStorage._new_shared(total)  # type: ignore[no-untyped-call]
        storage = torch.empty(0, dtype=torch.uint8).set_(shared)  # as default_collate does
        flat = storage.numpy()
        out = {n: flat[o : o + b].view(d).reshape(shp) for n, shp, d, o, b in layout}
        batch = self.reader.read_positions(
            positions, names, decode_records=self.decode_records, out=out
        )
        for name, shape, dtype, offset, nbytes in layout:
            torch_dtype = torch.from_numpy(np.empty(0, dtype)).dtype
            batch[name] = storage[offset : offset + nbytes].view(torch_dtype).view(shape)
        return batch

    def _gather_into_shm(self, positions: Any, names: list[str], layout: Layout, total: int) -> Any:
        path, buffer = new_batch_buffer(total)
        try:
            flat = np.frombuffer(buffer, dtype=np.uint8)
            out = {n: flat[o : o + b].view(d).reshape(shp) for n, shp, d, o, b in layout}
            batch = self.reader.read_positions(
                positions, names, decode_records=self.decode_records, out=out
            )
            rest = {k: v for k, v in batch.items() if k not in out}
        except BaseException:
            Path(path).unlink(missing_ok=True)
            raise
        return ShmBatch(path, total, layout, rest)
