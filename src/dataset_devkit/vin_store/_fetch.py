"""Which files of a store a reader needs, fetched into the local cache before it opens them.

Only for a store read from object storage
(:class:`~dataset_devkit.integrity.bucket.cache.RemoteTree`):
opening needs ``manifest.json``, the index sidecar (or, without one, ``sample_index.jsonl``)
and the split file; a block needs its chunk file, or its payload and offsets. Every file is
a whole, verified copy; the reader then maps it exactly as it maps a local store's files.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from dataset_devkit.integrity.bucket.cache import RemoteTree
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.spec import (
    MANIFEST_NAME,
    SAMPLE_INDEX_NAME,
    SAMPLE_INDEX_SIDECAR_NAME,
    SPLITS_DIR,
    VinOfflineBlockSpec,
)

__all__ = ["fetch_block", "fetch_index", "fetch_opening", "remote_tree"]


def remote_tree(config: VinOfflineStoreConfig) -> RemoteTree | None:
    """The cached remote tree of a URL config, or None for a local store."""
    if config.url is None or config.cache_dir is None:
        return None
    return RemoteTree(config.url, config.cache_dir)


def fetch_opening(tree: RemoteTree, config: VinOfflineStoreConfig) -> None:
    """Fetch what opening reads: manifest, index sidecar (else the JSON lines), one split."""
    tree.local_path(MANIFEST_NAME)
    if tree.has(SAMPLE_INDEX_SIDECAR_NAME):
        tree.local_path(SAMPLE_INDEX_SIDECAR_NAME)
    else:
        tree.local_path(SAMPLE_INDEX_NAME)
    tree.local_path(f"{SPLITS_DIR}/{config.split}.npy")


def fetch_index(tree: RemoteTree) -> None:
    """Fetch ``sample_index.jsonl`` (only the full index records need it)."""
    tree.local_path(SAMPLE_INDEX_NAME)


def fetch_block(tree: RemoteTree, shard_dir: str, spec: VinOfflineBlockSpec) -> None:
    """Fetch the files of one block of one shard (whole, verified)."""
    base = PurePosixPath(shard_dir)
    if spec.kind == "zarr_array":
        ndim = len(spec.shape or ())
        tree.local_path(str(base.joinpath(spec.paths[0], "c", *(["0"] * ndim))))
        return
    for rel in spec.paths[:2]:
        tree.local_path(str(base / rel))
