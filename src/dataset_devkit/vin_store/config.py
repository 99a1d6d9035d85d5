"""Configuration of one VIN offline store: where each file lives, which split.

A store may live in an object store (``s3://bucket/store``): then ``cache_dir`` is where
verified copies of its files are kept (``cache_limit`` bounds it), and every path below
points into that local mirror (the reader fetches a file before it first opens it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import path_argument
from dataset_devkit.objectstore import is_url
from dataset_devkit.objectstore.location import looks_like_mangled_url
from dataset_devkit.vin_store.spec import (
    MANIFEST_NAME,
    SAMPLE_INDEX_NAME,
    SAMPLE_INDEX_SIDECAR_NAME,
    SHARDS_DIR,
    SPLIT_NAMES,
    SPLITS_DIR,
    Split,
)

__all__ = ["VinOfflineStoreConfig"]


@dataclass(frozen=True, slots=True)
class VinOfflineStoreConfig:
    """Filesystem configuration for one immutable VIN offline dataset.

    Parameters
    ----------
    store_dir
        The store's root directory, or its URL (``s3://bucket/store``, ``gs://``,
        ``az://``, ``file://``) in an object store.
    split
        The split a reader serves: ``"all"``, ``"train"`` or ``"val"``.
    cache_dir
        For a URL: the local directory that keeps verified copies of the store's files
        (shared safely by DataLoader workers and jobs). Required with a URL, unless
        ``DATASET_DEVKIT_CACHE_DIR`` names one.
    url
        Set from a URL ``store_dir`` (``store_dir`` then names the local mirror).
    cache_limit
        For a URL: bytes the whole cache directory may hold (an int, or ``"200GB"``,
        ``"512MiB"``), else ``DATASET_DEVKIT_CACHE_LIMIT``, else no limit. Files are
        evicted least recently used first, across every process sharing ``cache_dir``.
    """

    store_dir: Path
    split: Split = "all"
    cache_dir: Path | None = None
    url: str | None = None
    cache_limit: int | None = None

    def __post_init__(self) -> None:
        given: object = self.store_dir
        if isinstance(given, str) and is_url(given):
            object.__setattr__(self, "url", given.rstrip("/"))
        if self.url is not None:
            # The object-storage cache is imported for URL stores only: a local reader (and
            # every DataLoader worker forked from it) never loads the upload and HTTP code.
            from dataset_devkit.integrity.bucket.cache import RemoteTree
            from dataset_devkit.integrity.bucket.cache_settings import (
                resolve_cache_dir,
                resolve_cache_limit,
            )

            cache = resolve_cache_dir(self.cache_dir, self.url)
            object.__setattr__(self, "cache_dir", cache)
            object.__setattr__(self, "cache_limit", resolve_cache_limit(self.cache_limit))
            object.__setattr__(self, "store_dir", RemoteTree(self.url, cache).root)
        elif looks_like_mangled_url(given):
            raise ConfigError(
                f"{given}: an object store URL read as a local path; pass the URL as a str "
                "(s3://BUCKET/PREFIX)",
                key="store_dir",
            )
        elif self.cache_limit is not None:
            raise ConfigError(
                f"cache_limit applies to a store read from a URL; {given} is a local store "
                "(nothing of it is ever cached or evicted)",
                key="cache_limit",
            )
        object.__setattr__(self, "store_dir", path_argument(self.store_dir, "store_dir"))
        if self.split not in SPLIT_NAMES:
            raise ConfigError(
                f"split must be one of {', '.join(SPLIT_NAMES)}, found {self.split!r}", key="split"
            )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        cache_dir: Path | str | None = None,
        split: Split = "all",
        cache_limit: int | str | None = None,
    ) -> VinOfflineStoreConfig:
        """A store in object storage (``s3://bucket/store``), cached in *cache_dir*.

        The same as ``VinOfflineStoreConfig(url, cache_dir=..., cache_limit=...)``, spelled
        with types. *cache_limit* (``"200GB"``, or bytes) bounds the cache directory.
        """
        if not isinstance(url, str) or not is_url(url):
            raise ConfigError(
                f"{url}: expected an object store URL (s3://, az://, gs://, file://)", key="url"
            )
        return cls(Path(), split, cache_dir, url, cache_limit)  # type: ignore[arg-type]

    @property
    def manifest_path(self) -> Path:
        """``manifest.json``."""
        return self.store_dir / MANIFEST_NAME

    @property
    def sample_index_path(self) -> Path:
        """``sample_index.jsonl``, the canonical index."""
        return self.store_dir / SAMPLE_INDEX_NAME

    @property
    def sample_index_sidecar_path(self) -> Path:
        """``sample_index.npy``, the binary sidecar read at open instead of JSON lines."""
        return self.store_dir / SAMPLE_INDEX_SIDECAR_NAME

    @property
    def shards_dir(self) -> Path:
        """``shards/``."""
        return self.store_dir / SHARDS_DIR

    @property
    def splits_dir(self) -> Path:
        """``splits/``."""
        return self.store_dir / SPLITS_DIR

    def split_path(self, split: str | None = None) -> Path:
        """``splits/<split>.npy`` for *split* (default: the configured one)."""
        name = self.split if split is None else split
        if name not in SPLIT_NAMES:
            raise ConfigError(f"unknown split {name!r}", key="split")
        return self.splits_dir / f"{name}.npy"

    @property
    def train_split_path(self) -> Path:
        """``splits/train.npy``."""
        return self.split_path("train")

    @property
    def val_split_path(self) -> Path:
        """``splits/val.npy``."""
        return self.split_path("val")

    @property
    def all_split_path(self) -> Path:
        """``splits/all.npy``."""
        return self.split_path("all")

    def write_split_indices(self, splits: Mapping[str, npt.ArrayLike]) -> dict[str, Path]:
        """Write each split's sorted int64 sample indices exclusively (never overwriting).

        Local stores only: a store in object storage is immutable once published.

        Parameters
        ----------
        splits
            Split name -> sample indices; every name in ``SPLIT_NAMES`` is required.
        """
        if self.url is not None:
            raise ConfigError(f"{self.url}: a published store is read-only", key="store_dir")
        missing = sorted(set(SPLIT_NAMES) - set(splits))
        extra = sorted(set(splits) - set(SPLIT_NAMES))
        if missing or extra:
            raise ConfigError(
                f"splits must be exactly {SPLIT_NAMES}; missing {missing}, unknown {extra}",
                key="splits",
            )
        arrays = {}
        for name in SPLIT_NAMES:  # check everything before writing anything
            values = np.asarray(splits[name], dtype="<i8").reshape(-1)
            if values.size > 1 and bool(np.any(np.diff(values) <= 0)):
                raise ConfigError(f"split {name!r} indices must strictly increase", key=name)
            arrays[name] = values
        self.splits_dir.mkdir(exist_ok=True)
        written = {}
        for name, values in arrays.items():
            path = self.split_path(name)
            with path.open("xb") as stream:
                np.save(stream, values, allow_pickle=False)
            written[name] = path
        return written
