"""Where a store read from a URL is cached and how much that cache may hold.

Given in code (``cache_dir=``, ``cache_limit=``), on the command line (``--cache-dir``,
``--cache-limit``) or, for jobs whose code you would rather not touch, in the environment:
``DATASET_DEVKIT_CACHE_DIR`` and ``DATASET_DEVKIT_CACHE_LIMIT`` (``200GB``, ``512MiB``).
An explicit value always wins over the environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity.numbers import parse_size
from dataset_devkit.integrity.safefs import path_argument

__all__ = [
    "CACHE_DIR_ENV",
    "CACHE_LIMIT_ENV",
    "default_cache_dir",
    "resolve_cache_dir",
    "resolve_cache_limit",
]

CACHE_DIR_ENV: Final = "DATASET_DEVKIT_CACHE_DIR"
CACHE_LIMIT_ENV: Final = "DATASET_DEVKIT_CACHE_LIMIT"


def resolve_cache_dir(given: object, url: str) -> Path:
    """*given*, else ``$DATASET_DEVKIT_CACHE_DIR``, else a one-line error naming both."""
    if given is None:
        given = os.environ.get(CACHE_DIR_ENV) or None
    if given is None:
        raise ConfigError(
            f"{url}: reading a store from object storage needs a local cache_dir for "
            f"verified copies of its files (or {CACHE_DIR_ENV} in the environment)",
            key="cache_dir",
        )
    return path_argument(given, "cache_dir")


def resolve_cache_limit(given: object) -> int | None:
    """*given* (bytes, or a size such as ``"200GB"``), else ``$DATASET_DEVKIT_CACHE_LIMIT``,
    else None (no limit)."""
    if given is None:
        text = os.environ.get(CACHE_LIMIT_ENV, "").strip()
        if not text:
            return None
        return parse_size(text, key=CACHE_LIMIT_ENV)
    return parse_size(given, key="cache_limit")


def default_cache_dir() -> Path:
    """Where the command line caches a URL store when not told: ``$DATASET_DEVKIT_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/dataset-devkit``, else ``~/.cache/dataset-devkit``."""
    named = os.environ.get(CACHE_DIR_ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dataset-devkit"
