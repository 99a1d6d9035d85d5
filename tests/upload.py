"""Put a published local tree into a bucket by uploading its files directly with obstore.

The tests of readers depend on nothing but the bytes being there: not on the publish
command, which has its own tests.
"""

from __future__ import annotations

from pathlib import Path

import obstore

from dataset_devkit.objectstore import open_location


def upload_tree(root: Path, url: str) -> list[str]:
    """Upload every file under *root* to *url* (relative keys); return the keys, sorted."""
    store = open_location(url).store
    keys = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        key = path.relative_to(root).as_posix()
        obstore.put(store, key, path.read_bytes())
        keys.append(key)
    return keys
