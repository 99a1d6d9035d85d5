"""The files a build writes after its shards: index, splits, manifest, content manifest.

The content manifest is made from the digests taken as each file was written (by the
workers for shard files, here for the rest), not by hashing the tree again, and the
stamps taken with them let publication recheck the sealed tree by identity instead of
hashing it again (``publish_tree``'s *written*, which says why that is the same proof):
the build reads its data once, as it writes it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dataset_devkit.errors import PublicationError
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, ContentManifest, ManifestEntry
from dataset_devkit.integrity.stamps import FileStamp, file_stamp
from dataset_devkit.vin_store._hashed import HashedFile
from dataset_devkit.vin_store._index_out import IndexWriter
from dataset_devkit.vin_store.errors import VinOfflineSchemaError
from dataset_devkit.vin_store.spec import (
    MANIFEST_NAME,
    OFFLINE_DATASET_VERSION,
    VinOfflineManifest,
    VinOfflineMaterializedBlocks,
    VinOfflineShardSpec,
)

__all__ = ["write_store_files"]


def write_store_files(
    tree: Path,
    index: IndexWriter,
    shards: Sequence[tuple[VinOfflineShardSpec, Sequence[tuple[str, int, str]]]],
    *,
    rows_per_shard: int,
    materialized_blocks: VinOfflineMaterializedBlocks | None,
    meta: Mapping[str, Any],
) -> dict[str, FileStamp]:
    """Write everything but the shards into *tree*, the content manifest last; return the
    stamps of the files written here that the content manifest lists."""
    if not shards:
        raise VinOfflineSchemaError("no samples: a store needs at least one")
    split_sizes = index.finish()
    specs = tuple(spec for spec, _ in shards)
    names = sorted(specs[0].blocks)
    flags = materialized_blocks or VinOfflineMaterializedBlocks.from_block_names(names)
    manifest = VinOfflineManifest(
        version=OFFLINE_DATASET_VERSION,
        created_at=meta["created_at"],
        source=dict(meta["source"] or {}),
        oracle=dict(meta["oracle"] or {}),
        vin=dict(meta["vin"] or {}),
        materialized_blocks=flags,
        stats={
            "num_samples": index.count,
            "num_shards": len(specs),
            "rows_per_shard": rows_per_shard,
            "split_sizes": split_sizes,
        },
        provenance={"writer": "dataset_devkit.vin_store", **dict(meta["provenance"] or {})},
        shards=specs,
    )
    manifest.write(tree / MANIFEST_NAME)
    with open(tree / MANIFEST_NAME, "rb", opener=_no_follow) as stream:
        stamp = file_stamp(stream.fileno())
        data = stream.read()
        if file_stamp(stream.fileno()) != stamp or len(data) != stamp[2]:
            raise PublicationError(f"{tree / MANIFEST_NAME}: changed while it was read")
    stamps = {MANIFEST_NAME: stamp, **index.stamps}
    entries = [
        ManifestEntry(path=MANIFEST_NAME, size=len(data), sha256=hashlib.sha256(data).hexdigest())
    ]
    entries.extend(
        ManifestEntry(path=path, size=size, sha256=digest)
        for path, (size, digest) in index.files.items()
    )
    for spec, files in shards:
        entries.extend(
            ManifestEntry(path=f"{spec.relative_dir}/{rel}", size=size, sha256=digest)
            for rel, size, digest in files
        )
    content = ContentManifest.from_entries(entries, location=CONTENT_MANIFEST_NAME)
    handle = HashedFile(tree / CONTENT_MANIFEST_NAME)
    try:
        handle.write(content.to_bytes())
    finally:
        handle.close()
    return stamps


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
