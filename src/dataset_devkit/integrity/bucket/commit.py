"""The claim of a prefix and the commit marker: the two conditional puts of a publish.

Both are written with ``If-None-Match: *`` (obstore's ``mode="create"``), so the store
itself decides between racing publishers: one claim per root, one manifest per prefix.
Every backend we open honours it: S3 and Azure Blob Storage with ``If-None-Match: *``,
Google Cloud Storage with ``x-goog-if-generation-match: 0``, a local folder by linking the
written file into place only if the name is free. A store that cannot (obstore says "not
supported") is refused: writing the marker unconditionally could replace another dataset.
"""

from __future__ import annotations

import contextlib
from typing import Final

from dataset_devkit.errors import DestinationExistsError, FormatError, PublicationError
from dataset_devkit.integrity.bucket.objects import read_remote_manifest, read_small
from dataset_devkit.integrity.bucket.retry import RetryPolicy, with_retries
from dataset_devkit.integrity.canonical import canonical_json
from dataset_devkit.integrity.manifest import ContentManifest
from dataset_devkit.objectstore import ObjectLocation

__all__ = ["CLAIM_SUFFIX", "claim", "commit", "committed", "release_claim"]

#: Appended to the manifest's key to name the claim of a publish in progress.
CLAIM_SUFFIX: Final = ".publishing"
_CLAIM_FORMAT: Final = "dataset-devkit/publish-claim"


def _create(location: ObjectLocation, key: str, data: bytes) -> bool:
    """Put *data* at *key* only if nothing is there; False when something is."""
    import obstore

    try:
        obstore.put(location.store, key, data, mode="create")
    except FileExistsError:
        return False
    except Exception as exc:
        if type(exc).__name__ == "AlreadyExistsError":
            return False
        if type(exc).__name__ == "NotSupportedError" or isinstance(exc, NotImplementedError):
            raise PublicationError(
                f"{location.describe(key)}: this store cannot write an object only if absent "
                "(If-None-Match), so a publish could replace another dataset; publish to an "
                "S3, Azure, Google Cloud Storage or file:// location instead"
            ) from exc
        raise
    return True


def committed(
    location: ObjectLocation, key: str, manifest: ContentManifest, policy: RetryPolicy
) -> bool:
    """True when *location* already holds this dataset; raise when it holds another."""
    try:
        published = read_remote_manifest(location, key, policy)
    except FormatError as exc:
        raise DestinationExistsError(
            f"{location.describe(key)}: already exists and is not a valid content manifest "
            f"({exc.detail}); a published dataset is never replaced"
        ) from None
    if published is None:
        return False
    if published.root_sha256 != manifest.root_sha256:
        raise DestinationExistsError(
            f"{location.url}: already holds a dataset with root_sha256 "
            f"{published.root_sha256}, not {manifest.root_sha256}; a published dataset is "
            "never replaced"
        )
    return True


def _claim_bytes(root: str) -> bytes:
    return canonical_json({"format": _CLAIM_FORMAT, "root_sha256": root}) + b"\n"


def claim(location: ObjectLocation, claim_key: str, root: str, policy: RetryPolicy) -> bool:
    """Hold the prefix for *root*; a claim for the same root (a re-run, a twin) is shared.

    Returns True when this call created the claim, False when it joined one already there
    (an earlier run of the same tree that did not finish, or one still running).
    Raises :class:`PublicationError` when another root's claim is there.
    """
    url = location.describe(claim_key)
    data = _claim_bytes(root)
    if with_retries(policy, url, "claim the prefix", lambda: _create(location, claim_key, data)):
        return True
    held = read_small(location, claim_key, policy)
    if held is not None and held != _claim_bytes(root):
        raise PublicationError(
            f"{location.url}: an unfinished publish of another tree holds this prefix "
            f"({claim_key}: {held[:120].decode('utf-8', 'replace').strip()}); re-run that "
            "publish to finish it, or delete the prefix to start over"
        )
    return False


def release_claim(location: ObjectLocation, claim_key: str, root: str, policy: RetryPolicy) -> None:
    """Remove our claim (or a stale one for the same root); another root's is left alone."""
    import obstore

    if read_small(location, claim_key, policy) != _claim_bytes(root):
        return

    def delete() -> None:
        with contextlib.suppress(FileNotFoundError):  # a twin publisher removed it first
            obstore.delete(location.store, claim_key)

    with_retries(policy, location.describe(claim_key), "remove the claim", delete)


def commit(
    location: ObjectLocation, key: str, manifest: ContentManifest, policy: RetryPolicy
) -> bool:
    """Write the manifest if no one has; True when this call wrote it."""
    data = manifest.to_bytes()
    url = location.describe(key)
    if with_retries(policy, url, "write the manifest", lambda: _create(location, key, data)):
        return True
    # Someone committed first (or our own write landed and its answer was lost): the same
    # root is this dataset, another root is a lost race.
    committed(location, key, manifest, policy)
    return False
