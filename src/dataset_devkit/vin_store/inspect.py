"""Summarize a VIN offline store (shards, blocks, splits, bytes, root hash) as plain data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, read_manifest
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.reader import _load_int64
from dataset_devkit.vin_store.spec import (
    SPLIT_NAMES,
    VinOfflineManifest,
    uses_vin_layout,
    vin_family,
)

__all__ = ["VinOfflineBlockSummary", "VinOfflineStoreSummary", "inspect_store"]


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

    store_dir: Path
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


def inspect_store(store_dir: Path) -> VinOfflineStoreSummary:
    """Read the manifests and split files of a store and summarize them (no verification)."""
    config = VinOfflineStoreConfig(store_dir=Path(store_dir))
    manifest = VinOfflineManifest.read(config.manifest_path)
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
        store_dir=config.store_dir,
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
