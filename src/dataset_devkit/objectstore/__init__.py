"""Object storage locations (``s3://``, ``gs://``, ``az://``, ``file://``) for every system.

A foundation package, like :mod:`dataset_devkit.errors`: the integrity core and every system
may import it; it imports nothing of ours but the errors. The client is obstore: one Rust
client for every cloud that zarr 3 also supports, with conditional puts (``If-None-Match``),
ranged and parallel reads, and retries with backoff built in.
"""

from __future__ import annotations

from dataset_devkit.objectstore.environment import credentials_hint
from dataset_devkit.objectstore.location import (
    ObjectLocation,
    forked_after_use,
    is_url,
    open_location,
    refuse_url,
)

__all__ = [
    "ObjectLocation",
    "credentials_hint",
    "forked_after_use",
    "is_url",
    "open_location",
    "refuse_url",
]
