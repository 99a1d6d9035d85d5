"""``store verify URL``: a VIN offline store checked where it lives, in object storage.

The content check is the integrity core's remote verify: every object hashed in place
against the content manifest (parallel streamed reads, nothing written to disk). The format
checks then need only the files that describe the store: ``manifest.json``, the sample
index and its sidecar, the split files, each shard's Zarr metadata and its record blocks
(offsets and payloads, every record decoded). They are fetched through the local cache
(verified on download, evicted under a cache limit) one shard at a time. A numeric block's
chunk file, the bulk of a store, is not downloaded: its size is checked against the
listing and only its Zarr shard index (the last ``16 x rows + 4`` bytes) is read.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import msgspec
import numpy as np

from dataset_devkit.errors import ConfigError, DevkitError
from dataset_devkit.integrity.bucket import verify_remote
from dataset_devkit.integrity.bucket.cache import RemoteTree
from dataset_devkit.integrity.location import CONTENT_MANIFEST_NAME
from dataset_devkit.integrity.manifest import ManifestEntry
from dataset_devkit.integrity.progress import OnProgress
from dataset_devkit.vin_store._shards import check_shard_index
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.spec import (
    MANIFEST_NAME,
    SAMPLE_INDEX_NAME,
    SAMPLE_INDEX_SIDECAR_NAME,
    SHARDS_DIR,
    SPLIT_NAMES,
    SPLITS_DIR,
    VinOfflineBlockSpec,
    VinOfflineManifest,
)
from dataset_devkit.vin_store.verify import (
    VinOfflineVerifyReport,
    check_index,
    check_shard_blocks,
    check_shard_listing,
)
from dataset_devkit.vin_store.writer import chunk_file_path, shard_index_nbytes

__all__ = ["URL_VERIFY_NOTE", "verify_url_store"]

#: What a verify of a URL covers, said in its report.
URL_VERIFY_NOTE: Final = (
    "every object hashed in place; format checks read the metadata, index, split and "
    "record files through the cache, and of each numeric chunk only its shard index"
)


def verify_url_store(
    url: str,
    *,
    cache_dir: Path | str | None,
    cache_limit: int | str | None = None,
    progress: OnProgress | None = None,
) -> VinOfflineVerifyReport:
    """Verify the store at *url*: content in place, format through *cache_dir*."""
    config = VinOfflineStoreConfig.from_url(url, cache_dir=cache_dir, cache_limit=cache_limit)
    content = verify_remote(url, progress=progress)
    issues = set(content.issues)
    if content.manifest_location is not None and content.root_sha256 is not None:
        tree = RemoteTree(url, Path(str(config.cache_dir)), config.cache_limit)
        damaged = {issue.path for issue in content.details}
        mirror = str(tree.root)
        issues.update(
            issue.replace(mirror, tree.url) for issue in _format_issues(tree, config, damaged)
        )
    return VinOfflineVerifyReport(
        url, tuple(sorted(issues)), content.root_sha256, (URL_VERIFY_NOTE,)
    )


def _format_issues(
    tree: RemoteTree, config: VinOfflineStoreConfig, damaged: set[str]
) -> Iterator[str]:
    listed = tree.manifest.by_path()
    usable = {rel for rel in listed if rel not in damaged}
    if MANIFEST_NAME not in usable:
        return  # missing or changed: the content check said so
    try:
        with tree.held([MANIFEST_NAME]):
            manifest = VinOfflineManifest.read(config.manifest_path)
    except ConfigError:
        raise  # a cache too small is the user's setting, not the store's issue
    except DevkitError as exc:
        yield str(exc)
        return
    chunks = {
        chunk_file_path(Path(shard.relative_dir) / b.paths[0], len(b.shape or ())).as_posix()
        for shard in manifest.shards
        for b in shard.blocks.values()
        if b.kind == "zarr_array"
    }
    tree.require_room(sorted(usable - chunks))  # what it fetches: all but the chunks
    index_files = [SAMPLE_INDEX_NAME, SAMPLE_INDEX_SIDECAR_NAME]
    index_files += [f"{SPLITS_DIR}/{name}.npy" for name in SPLIT_NAMES]
    with tree.held([rel for rel in index_files if rel in usable]):
        yield from check_index(config, manifest)
    known = {shard.relative_dir for shard in manifest.shards}
    folders = {"/".join(rel.split("/")[:2]) for rel in listed if rel.startswith(f"{SHARDS_DIR}/")}
    yield from (
        f"{tree.url}/{folder}: extra shard not in {MANIFEST_NAME}"
        for folder in sorted(folders - known)
    )
    for shard in manifest.shards:
        prefix = f"{shard.relative_dir}/"
        found = {rel[len(prefix) :] for rel in listed if rel.startswith(prefix)}
        shard_dir = config.store_dir / shard.relative_dir
        if not found:
            yield f"{shard_dir}: shard directory is missing"
            continue
        yield from check_shard_listing(shard_dir, shard, found)
        small = sorted(prefix + name for name in found if prefix + name not in chunks)
        # Blocks with a changed or missing record file were reported by the content check.
        intact = {
            name: block
            for name, block in shard.blocks.items()
            if block.kind == "zarr_array"
            or all(f"{prefix}{rel}" in usable for rel in block.paths[:2])
        }
        shard = msgspec.structs.replace(shard, blocks=intact)
        try:
            with tree.held([rel for rel in small if rel in usable]):
                check = functools.partial(_chunk_issues, tree, listed, prefix, damaged)
                yield from check_shard_blocks(shard_dir, shard, check)
        except ConfigError:
            raise
        except DevkitError as exc:
            yield str(exc)
    top = {MANIFEST_NAME, SAMPLE_INDEX_NAME, SAMPLE_INDEX_SIDECAR_NAME, SPLITS_DIR, SHARDS_DIR}
    top.add(CONTENT_MANIFEST_NAME)
    names = sorted({rel.split("/")[0] for rel in listed} - top)
    yield from (f"{tree.url}/{name}: unexpected entry in the store root" for name in names)


def _chunk_issues(
    tree: RemoteTree,
    listed: dict[str, ManifestEntry],
    prefix: str,
    damaged: set[str],
    name: str,
    block: VinOfflineBlockSpec,
) -> Iterator[str]:
    """A numeric block's chunk file: its listed size, then its shard index (one range)."""
    shape = tuple(block.shape or ())
    rel = chunk_file_path(Path(prefix) / block.paths[0], len(shape)).as_posix()
    entry = listed.get(rel)
    if entry is None or rel in damaged:
        return  # missing (the listing check said so) or changed (the content check did)
    num_rows = shape[0]
    row_nbytes = int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(block.dtype).itemsize
    expected = num_rows * row_nbytes + shard_index_nbytes(num_rows)
    where = f"{tree.url}/{rel}"
    if entry.size != expected:
        yield (
            f"{where}: expected {expected} bytes ({num_rows} rows of {row_nbytes} bytes + the "
            f"shard index), found {entry.size} (block {name!r})"
        )
        return
    try:
        tail = tree.read_range(rel, num_rows * row_nbytes, expected)
        check_shard_index(tail, 0, num_rows, row_nbytes, where)
    except DevkitError as exc:
        yield f"{exc} (block {name!r})"
