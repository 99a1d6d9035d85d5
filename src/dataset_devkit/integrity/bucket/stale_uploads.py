"""Abort the unfinished multipart uploads that earlier runs of a publish left under a prefix.

An unfinished multipart upload is invisible to listings and readers, but its parts are
stored, and billed, until someone aborts it. obstore aborts its own upload when a part
fails for good or the file turns out not to match (see
:mod:`~dataset_devkit.integrity.bucket.upload`), so a publish that *fails* leaves none
behind. A publish that is *killed* (SIGKILL, a lost machine), or whose abort request itself
failed, does. The next run of the same publish cleans up after it here.

obstore (its Rust ``object_store``) can neither list multipart uploads nor abort one by its
id, so this module speaks S3's ``ListMultipartUploads`` and ``AbortMultipartUpload`` through
botocore, the AWS SDK's core, with the same endpoint and credentials from the environment.
It is S3 only: Azure discards uncommitted blocks by itself after a week, and for GCS a
bucket lifecycle rule does the job (see docs/object-storage.md).

Which uploads are stale: the sweep runs after the claim and before this run's first upload,
so every upload it finds belongs to another run of the same tree (the claim keeps other
trees out): a killed one, whose upload is garbage, or a twin still running, which loses
one upload and retries that file (:func:`~dataset_devkit.integrity.bucket.failures.
is_transient` treats ``NoSuchUpload`` as transient).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from dataset_devkit.integrity.bucket.failures import short_reason
from dataset_devkit.integrity.bucket.retry import RetryPolicy
from dataset_devkit.objectstore import ObjectLocation

__all__ = ["StaleUploads", "abort_stale_uploads"]


@dataclass(frozen=True)
class StaleUploads:
    """What a sweep did: uploads aborted, and why it could not look when it could not."""

    aborted: int = 0
    problem: str | None = None


def _client(policy: RetryPolicy) -> Any:
    import botocore.session
    from botocore.config import Config

    endpoint = os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT") or None
    config = Config(
        retries={"max_attempts": policy.request_retries + 1, "mode": "standard"},
        connect_timeout=policy.timeout,
        read_timeout=policy.timeout,
        # obstore addresses buckets by path unless told otherwise; so must this client, or
        # a custom endpoint (MinIO, a test server) would be asked for bucket.host names.
        s3={"addressing_style": "path" if endpoint else "auto"},
    )
    return botocore.session.get_session().create_client("s3", endpoint_url=endpoint, config=config)


def abort_stale_uploads(location: ObjectLocation, policy: RetryPolicy) -> StaleUploads:
    """Abort every unfinished multipart upload below *location*'s prefix.

    Never raises for the sweep's own failures (a store without the API, a policy that
    denies ``s3:ListBucketMultipartUploads``): the publish does not depend on it, and the
    reason comes back in :attr:`StaleUploads.problem` for the caller to show.
    """
    if type(location.store).__name__ != "S3Store":
        return StaleUploads()
    parts = urlsplit(location.url)
    bucket = parts.netloc
    prefix = parts.path.strip("/")
    prefix = prefix + "/" if prefix else ""
    try:
        import botocore  # noqa: F401
    except ImportError:  # pragma: no cover - the s3 extra installs it
        return StaleUploads(problem="botocore is not installed")
    aborted = 0
    try:
        client = _client(policy)
        pages = client.get_paginator("list_multipart_uploads").paginate(
            Bucket=bucket, Prefix=prefix
        )
        for page in pages:
            for upload in page.get("Uploads", []):
                try:
                    client.abort_multipart_upload(
                        Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                    )
                except client.exceptions.NoSuchUpload:
                    continue  # completed or aborted meanwhile by its own run
                aborted += 1
    except Exception as exc:  # botocore's errors, a refused connection: not worth a failure
        return StaleUploads(aborted, f"could not abort unfinished uploads: {short_reason(exc)}")
    return StaleUploads(aborted)
