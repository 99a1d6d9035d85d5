"""VIN offline store: immutable Zarr + MessagePack shards read at random by many workers.

Every public name is imported from its module on first use: ``import
dataset_devkit.vin_store`` never imports torch (the adapter :class:`VinOfflineTorchDataset`,
:class:`VinOfflineBatchedTorchDataset`), and a process that only reads (a DataLoader's
parent, whose heap every forked worker inherits) imports the reader's modules alone, not the
builder, writer, verifier or their thread and process pools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataset_devkit.integrity.lazy_exports import lazy_exports

if TYPE_CHECKING:
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
    # the torch datasets stay untyped (Any, from __getattr__): torch is an optional extra

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

#: Public name -> the module that defines it, imported on first use (PEP 562): a worker
#: that only reads imports the reader's modules, not the builder's, the verifier's or torch.
_MODULE_OF: dict[str, str] = {
    "DEFAULT_SHARD_BYTES": "builder",
    "InventoryError": "errors",
    "OFFLINE_DATASET_VERSION": "spec",
    "PositionOutOfRangeError": "errors",
    "SampleIndexNotFoundError": "errors",
    "SampleSpace": "sample_space",
    "UnsupportedVersionError": "errors",
    "VinOfflineBatchedTorchDataset": "torch_dataset",
    "VinOfflineBlockSpec": "spec",
    "VinOfflineBuildResult": "builder",
    "VinOfflineDistributedSampler": "sampler",
    "VinOfflineFormatError": "errors",
    "VinOfflineIndexRecord": "spec",
    "VinOfflineManifest": "spec",
    "VinOfflineMaterializedBlocks": "spec",
    "VinOfflineMix": "mixing",
    "VinOfflineSample": "builder",
    "VinOfflineSchemaError": "errors",
    "VinOfflineShardSource": "sources",
    "VinOfflineShardSpec": "spec",
    "VinOfflineShardWriter": "writer",
    "VinOfflineStoreConfig": "config",
    "VinOfflineStoreReader": "reader",
    "VinOfflineStoreSummary": "inspect",
    "VinOfflineStream": "mixing",
    "VinOfflineTorchDataset": "torch_dataset",
    "VinOfflineVerifyReport": "verify",
    "build_process_pool": "builder",
    "build_vin_offline_store": "builder",
    "inspect_store": "inspect",
    "loader_sampler_state": "sampler",
    "verify_store": "verify",
}


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, __all__)
