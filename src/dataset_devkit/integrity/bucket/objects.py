"""The few object operations publish, verify and the reader's cache share: list, read a
small object (the content manifest above all), head.

Every call goes through :func:`~dataset_devkit.integrity.bucket.retry.with_retries`, so a
flaky server is retried the same way everywhere and a failure names the object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity.bucket.retry import RetryPolicy, with_retries
from dataset_devkit.integrity.manifest import ContentManifest, parse_manifest
from dataset_devkit.objectstore import ObjectLocation

__all__ = [
    "SHA256_METADATA",
    "RemoteObject",
    "keeps_metadata",
    "list_objects",
    "read_remote_manifest",
    "read_small",
    "recorded_sha256",
]

#: The user metadata key (``x-amz-meta-sha256`` on S3) an upload records its digest under.
SHA256_METADATA: Final = "sha256"
#: The most a manifest or marker read may return: a manifest of millions of files fits.
_SMALL_LIMIT: Final = 1 << 30


@dataclass(frozen=True, slots=True)
class RemoteObject:
    """One listed object: its size and entity tag (``None`` where the store has none)."""

    size: int
    e_tag: str | None


def keeps_metadata(location: ObjectLocation) -> bool:
    """Whether the store keeps user metadata with an object (S3, GCS, Azure do; a local
    filesystem does not, and reading a local file back is cheap anyway)."""
    return type(location.store).__name__ in ("S3Store", "GCSStore", "AzureStore")


def list_objects(location: ObjectLocation, policy: RetryPolicy) -> dict[str, RemoteObject]:
    """Every object below the prefix, keyed by its path relative to the prefix."""
    import obstore

    def listing() -> dict[str, RemoteObject]:
        found: dict[str, RemoteObject] = {}
        try:
            for batch in obstore.list(location.store):
                for meta in batch:
                    found[meta["path"]] = RemoteObject(meta["size"], meta.get("e_tag"))
        except FileNotFoundError as exc:
            if "NoSuchBucket" in str(exc) or "ContainerNotFound" in str(exc):
                raise
            return {}  # a file:// prefix whose directory does not exist yet
        return found

    return with_retries(policy, location.url, "list", listing)


def read_small(location: ObjectLocation, key: str, policy: RetryPolicy) -> bytes | None:
    """The whole content of *key*, or ``None`` when there is no such object."""
    import obstore

    def read() -> bytes | None:
        try:
            result = obstore.get(location.store, key)
        except FileNotFoundError:
            return None
        if result.meta["size"] > _SMALL_LIMIT:
            raise FormatError(
                f"{result.meta['size']} bytes, too large for this document",
                path=location.describe(key),
            )
        return bytes(result.bytes())

    return with_retries(policy, location.describe(key), "read", read)


def read_remote_manifest(
    location: ObjectLocation, key: str, policy: RetryPolicy
) -> ContentManifest | None:
    """The strictly checked content manifest at *key*, ``None`` when there is none.

    The one read of a remote manifest (publish's commit checks, verify, inspect, the
    reader's cache): retried like every request, too large a document refused before it
    is read. Raises :class:`FormatError` naming the object and field for a broken one.
    """
    raw = read_small(location, key, policy)
    if raw is None:
        return None
    return parse_manifest(raw, location.describe(key), location=key)


def recorded_sha256(location: ObjectLocation, key: str, policy: RetryPolicy) -> str | None:
    """The SHA-256 an upload of ours recorded on *key* (``None``: none recorded or gone)."""
    import obstore

    def head() -> str | None:
        try:
            result = obstore.get(location.store, key, options={"head": True})
        except FileNotFoundError:
            return None
        return result.attributes.get(SHA256_METADATA)

    return with_retries(policy, location.describe(key), "read metadata", head)
