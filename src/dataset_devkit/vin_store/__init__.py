"""VIN offline store: immutable Zarr + MessagePack shards read at random by many workers.

The torch adapter (:class:`VinOfflineTorchDataset`, :class:`VinOfflineBatchedTorchDataset`)
is imported on first use, so ``import dataset_devkit.vin_store`` never imports torch.
"""

from __future__ import annotations

from typing import Any

from dataset_devkit.vin_store.builder import (
    DEFAULT_SHARD_BYTES,
    VinOfflineBuildResult,
    VinOfflineSample,
    build_process_pool,
    build_vin_offline_store,
)
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.errors import (
    InventoryError,
    PositionOutOfRangeError,
    SampleIndexNotFoundError,
    UnsupportedVersionError,
    VinOfflineFormatError,
    VinOfflineSchemaError,
)
from dataset_devkit.vin_store.inspect import VinOfflineStoreSummary, inspect_store
from dataset_devkit.vin_store.mixing import VinOfflineMix, VinOfflineStream
from dataset_devkit.vin_store.reader import VinOfflineStoreReader
from dataset_devkit.vin_store.sample_space import SampleSpace
from dataset_devkit.vin_store.sampler import VinOfflineDistributedSampler, loader_sampler_state
from dataset_devkit.vin_store.sources import VinOfflineShardSource
from dataset_devkit.vin_store.spec import (
    OFFLINE_DATASET_VERSION,
    VinOfflineBlockSpec,
    VinOfflineIndexRecord,
    VinOfflineManifest,
    VinOfflineMaterializedBlocks,
    VinOfflineShardSpec,
)
from dataset_devkit.vin_store.verify import VinOfflineVerifyReport, verify_store
from dataset_devkit.vin_store.writer import VinOfflineShardWriter

__all__ = [
    "DEFAULT_SHARD_BYTES",
    "OFFLINE_DATASET_VERSION",
    "InventoryError",
    "PositionOutOfRangeError",
    "SampleIndexNotFoundError",
    "SampleSpace",
    "UnsupportedVersionError",
    "VinOfflineBatchedTorchDataset",
    "VinOfflineBlockSpec",
    "VinOfflineBuildResult",
    "VinOfflineDistributedSampler",
    "VinOfflineFormatError",
    "VinOfflineIndexRecord",
    "VinOfflineManifest",
    "VinOfflineMaterializedBlocks",
    "VinOfflineMix",
    "VinOfflineSample",
    "VinOfflineSchemaError",
    "VinOfflineShardSource",
    "VinOfflineShardSpec",
    "VinOfflineShardWriter",
    "VinOfflineStoreConfig",
    "VinOfflineStoreReader",
    "VinOfflineStoreSummary",
    "VinOfflineStream",
    "VinOfflineTorchDataset",
    "VinOfflineVerifyReport",
    "build_process_pool",
    "build_vin_offline_store",
    "inspect_store",
    "loader_sampler_state",
    "verify_store",
]

_TORCH_NAMES = frozenset({"VinOfflineBatchedTorchDataset", "VinOfflineTorchDataset"})


def __getattr__(name: str) -> Any:
    if name in _TORCH_NAMES:
        from dataset_devkit.vin_store import torch_dataset

        return getattr(torch_dataset, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
