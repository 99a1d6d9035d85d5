"""Which files of a store a reader needs, fetched into the local cache before it opens them.

Only for a store read from object storage
(:class:`~dataset_devkit.integrity.bucket.cache.RemoteTree`):
opening needs ``manifest.json``, the index sidecar (or, without one, ``sample_index.jsonl``)
and the split file; a block needs its chunk file, or its payload and offsets. Every file is
a whole, verified copy, held (safe from eviction) while the reader opens and maps it; the
reader then reads it exactly as it reads a local store's files.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.spec import (
    MANIFEST_NAME,
    SAMPLE_INDEX_NAME,
    SAMPLE_INDEX_SIDECAR_NAME,
    SHARDS_DIR,
    SPLITS_DIR,
    VinOfflineBlockSpec,
)

if TYPE_CHECKING:
    from dataset_devkit.integrity.bucket.cache import RemoteTree

__all__ = [
    "block_files",
    "forget_evicted",
    "held_index",
    "held_opening",
    "mark_used",
    "remote_tree",
    "require_room",
    "same_file",
]


def remote_tree(config: VinOfflineStoreConfig) -> RemoteTree | None:
    """The cached remote tree of a URL config, or None for a local store."""
    if config.url is None or config.cache_dir is None:
        return None
    from dataset_devkit.integrity.bucket.cache import RemoteTree  # URL stores only

    return RemoteTree(config.url, config.cache_dir, config.cache_limit)


def _opening_files(tree: RemoteTree, config: VinOfflineStoreConfig) -> list[str]:
    index = SAMPLE_INDEX_SIDECAR_NAME if tree.has(SAMPLE_INDEX_SIDECAR_NAME) else SAMPLE_INDEX_NAME
    return [MANIFEST_NAME, index, f"{SPLITS_DIR}/{config.split}.npy"]


def require_room(tree: RemoteTree, config: VinOfflineStoreConfig) -> None:
    """Refuse a cache limit smaller than the largest file a reader of *config* reads: the
    files opening reads and every file of the shards (one at a time is all it needs)."""
    listed = [entry.path for entry in tree.manifest.files]
    shard_files = [rel for rel in listed if rel.startswith(f"{SHARDS_DIR}/")]
    tree.require_room([*_opening_files(tree, config), *shard_files])


@contextlib.contextmanager
def held_opening(tree: RemoteTree, config: VinOfflineStoreConfig) -> Iterator[None]:
    """Hold what opening reads: manifest, index sidecar (else the JSON lines), one split."""
    with tree.held(_opening_files(tree, config)):
        yield


@contextlib.contextmanager
def held_index(tree: RemoteTree) -> Iterator[None]:
    """Hold ``sample_index.jsonl`` (only the full index records need it)."""
    with tree.held([SAMPLE_INDEX_NAME]):
        yield


def block_files(shard_dir: str, spec: VinOfflineBlockSpec) -> tuple[str, ...]:
    """The relative paths of one block's files in one shard (chunk, or payload + offsets).

    Plain strings (the manifest's paths are already POSIX): every worker asks this for
    every block of every shard it opens.
    """
    base = str(PurePosixPath(shard_dir))
    if spec.kind == "zarr_array":
        ndim = len(spec.shape or ())
        return ("/".join([base, spec.paths[0], "c", *(["0"] * ndim)]),)
    return tuple(f"{base}/{rel}" for rel in spec.paths[:2])


def same_file(path: Path, identity: tuple[int, int]) -> bool:
    """Whether *path* still names the file of *identity* (device, inode) a reader mapped."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == identity


def forget_evicted(
    handles: dict[tuple[int, str], Any], files: dict[tuple[int, str], Any], spans: dict[str, Any]
) -> None:
    """Drop a reader's handles (and span slots) of files evicted from the cache: their disk
    space comes back, and the next read of them fetches them again."""
    for key, handle in list(handles.items()):
        if same_file(handle.path, handle.identity):
            continue
        del handles[key]
        files.pop(key, None)
        span = spans.get(key[1])
        if span is not None and key[0] in span.mapped:
            span.unmap_shard(key[0])


def mark_used(
    tree: RemoteTree | None,
    files: dict[tuple[int, str], tuple[str, ...]],
    shards: Sequence[int],
    names: Sequence[str],
) -> None:
    """Tell the cache which files a read used (its least-recently-used order)."""
    if tree is not None:
        tree.mark_used(
            rel for shard in set(shards) for name in names for rel in files.get((shard, name), ())
        )
