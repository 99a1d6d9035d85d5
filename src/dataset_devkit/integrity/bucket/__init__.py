"""Datasets on object storage: publish a verified tree to a bucket, verify it in place.

The same content manifest and root hash as on disk, with the manifest written last by a
conditional put as the commit marker: a prefix without its manifest is not a dataset.
Clients come from :mod:`dataset_devkit.objectstore` (obstore), so ``s3://``, ``gs://``,
``az://`` and ``file://`` URLs all work, with credentials from the environment.
"""

from __future__ import annotations

from dataset_devkit.integrity.bucket.failures import ObjectStoreError
from dataset_devkit.integrity.bucket.objects import read_remote_manifest
from dataset_devkit.integrity.bucket.publish import RemotePublishResult, publish_remote
from dataset_devkit.integrity.bucket.retry import RetryPolicy
from dataset_devkit.integrity.bucket.verify import verify_remote

__all__ = [
    "ObjectStoreError",
    "RemotePublishResult",
    "RetryPolicy",
    "publish_remote",
    "read_remote_manifest",
    "verify_remote",
]
