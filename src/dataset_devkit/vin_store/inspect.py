"""Summarize a VIN offline store (shards, blocks, splits, bytes, root hash) as plain data.

A store in object storage is summarized from its content manifest, ``manifest.json`` and
split files, fetched through the local cache (nothing else is downloaded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, ContentManifest, read_manifest
from dataset_devkit.objectstore import is_url
from dataset_devkit.vin_store._fetch import remote_tree
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.reader import _load_int64
from dataset_devkit.vin_store.spec import (
    MANIFEST_NAME,
    SPLIT_NAMES,
    SPLITS_DIR,
    VinOfflineManifest,
    uses_vin_layout,
    vin_family,
)

__all__ = ["VinOfflineBlockSummary", "VinOfflineStoreSummary", "inspect_store", "store_config"]


@dataclass(frozen=True, slots=True)
class VinOfflineBlockSummary:
    """One logical block: kind, dtype, per-row shape, optional flag, VIN family.

    ``family`` is the block's VIN family (``core``, ``backbone``, ...; see
    :func:`~dataset_devkit.vin_store.spec.vin_family`), None outside the VIN layout.
    """

    name: str
    kind: str
    dtype: str | None
    row_shape: tuple[int, ...]
    optional: bool
    family: str | None = None


@dataclass(frozen=True, slots=True)
class VinOfflineStoreSummary:
    """What ``dataset-devkit store inspect`` shows."""

    store_dir: Path | str
    version: int
    num_samples: int
    num_shards: int
    blocks: tuple[VinOfflineBlockSummary, ...]
    materialized: dict[str, bool]
    split_sizes: dict[str, int]
    total_bytes: int
    num_files: int
    root_sha256: str
    #: Whether the store uses the VIN layout (some block is ``vin.*`` or of a VIN family):
    #: only then do ``materialized`` and the families mean anything to its reader.
    vin_layout: bool = False

    @property
    def absent_families(self) -> tuple[str, ...]:
        """VIN families a VIN-layout store does not hold; none for any other store."""
        if not self.vin_layout:
            return ()
        return tuple(name for name, present in self.materialized.items() if not present)


def store_config(
    store: Path | str, *, cache_dir: Path | str | None = None, cache_limit: int | str | None = None
) -> VinOfflineStoreConfig:
    """The config of a local store or of a store's URL (cached in *cache_dir*)."""
    if isinstance(store, str) and is_url(store):
        return VinOfflineStoreConfig.from_url(store, cache_dir=cache_dir, cache_limit=cache_limit)
    return VinOfflineStoreConfig(store_dir=Path(store))


def inspect_store(
    store_dir: Path | str,
    *,
    cache_dir: Path | str | None = None,
    cache_limit: int | str | None = None,
) -> VinOfflineStoreSummary:
    """Read the manifests and split files of a store and summarize them (no verification).

    *store_dir* may be a URL (``s3://bucket/store``): its files are then fetched into
    *cache_dir* (bounded by *cache_limit*).
    """
    config = store_config(store_dir, cache_dir=cache_dir, cache_limit=cache_limit)
    tree = remote_tree(config)
    if tree is None:
        return _summary(config, None)
    with tree.held([MANIFEST_NAME, *(f"{SPLITS_DIR}/{name}.npy" for name in SPLIT_NAMES)]):
        return _summary(config, tree.manifest)


def _summary(
    config: VinOfflineStoreConfig, content: ContentManifest | None
) -> VinOfflineStoreSummary:
    manifest = VinOfflineManifest.read(config.manifest_path)  # first: "is this a store?"
    if content is None:
        content = read_manifest(config.store_dir, location=CONTENT_MANIFEST_NAME)
    first = manifest.shards[0].blocks if manifest.shards else {}
    blocks = tuple(
        VinOfflineBlockSummary(
            b.name, b.kind, b.dtype, tuple((b.shape or ())[1:]), b.optional, vin_family(b.name)
        )
        for b in first.values()
    )
    splits = {
        name: int(_load_int64(config.split_path(name), f"split {name!r}").shape[0])
        for name in SPLIT_NAMES
    }
    return VinOfflineStoreSummary(
        store_dir=config.url or config.store_dir,
        version=manifest.version,
        num_samples=manifest.num_rows,
        num_shards=len(manifest.shards),
        blocks=blocks,
        materialized={
            f: bool(getattr(manifest.materialized_blocks, f))
            for f in manifest.materialized_blocks.__struct_fields__
        },
        split_sizes=splits,
        total_bytes=sum(entry.size for entry in content.files),
        num_files=len(content.files),
        root_sha256=content.root_sha256,
        vin_layout=uses_vin_layout(first),
    )
