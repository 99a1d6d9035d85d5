"""Publish a verified tree to an object store, with the manifest as the commit marker.

The protocol, in order:

1. The local tree's listing is checked against its content manifest: the same files, with
   their sizes, as plain files (no content is read here: step 4 hashes every byte as it
   sends it). A tree with no manifest yet is hashed into one in memory.
2. A prefix that already holds a manifest is a published dataset: the same root is
   "already published" (success), another root is refused. A prefix that holds objects
   outside the tree is refused too: a dataset's prefix holds only its files.
3. A claim ``<manifest>.publishing`` naming the root is created with a conditional put
   (``If-None-Match: *``). A claim for the same root means a re-run or a twin publisher of
   the identical tree: both may go on, they write the same bytes. A claim for another root
   refuses, so two different trees can never interleave their objects under one prefix.
   The manifest is checked once more after claiming: a winner that committed and released
   its claim meanwhile is seen here, and the claim just made is removed before refusing.
   A run that found the claim already there (or the dataset already published) aborts the
   unfinished multipart uploads an earlier, killed run left under the prefix
   (:mod:`~dataset_devkit.integrity.bucket.stale_uploads`).
4. Every file is uploaded in parallel (multipart when large, memory bounded, retried),
   hashed as it is read for sending: bytes that do not match the manifest never become an
   object and fail the publish naming the file. Objects already present with the right
   size and SHA-256 are skipped, so a re-run after an interruption resumes.
5. A final listing proves every file is present with its size and nothing else is there.
6. ``content_manifest.json`` is written last with a conditional put: exactly one publisher
   commits; a loser whose tree has the same root is told "already published".
7. The claim is removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dataset_devkit.errors import DestinationExistsError, PublicationError, VerificationFailed
from dataset_devkit.integrity.bucket.commit import (
    CLAIM_SUFFIX,
    claim,
    commit,
    committed,
    release_claim,
)
from dataset_devkit.integrity.bucket.local_check import check_local_listing
from dataset_devkit.integrity.bucket.objects import RemoteObject, list_objects
from dataset_devkit.integrity.bucket.retry import RetryPolicy
from dataset_devkit.integrity.bucket.stale_uploads import StaleUploads, abort_stale_uploads
from dataset_devkit.integrity.bucket.transfer import Outcome, already_uploaded, upload_all
from dataset_devkit.integrity.location import CONTENT_MANIFEST_NAME, ManifestNotFoundError
from dataset_devkit.integrity.manifest import (
    ContentManifest,
    build_manifest,
    read_manifest,
)
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.integrity.safefs import path_argument
from dataset_devkit.objectstore import ObjectLocation, open_location

__all__ = ["CLAIM_SUFFIX", "DEFAULT_PART_SIZE", "RemotePublishResult", "publish_remote"]

#: Multipart part size (files up to 8 MiB go in one request).
DEFAULT_PART_SIZE: Final = 32 << 20


@dataclass(frozen=True)
class RemotePublishResult:
    """What :func:`publish_remote` did.

    ``already_published`` is true when the prefix already held this very dataset (a re-run
    after success, or a concurrent publisher of the identical tree that committed first).
    """

    url: str
    root_sha256: str
    manifest_location: str
    file_count: int
    total_bytes: int
    uploaded_files: int
    uploaded_bytes: int
    skipped_files: int
    already_published: bool
    aborted_uploads: int = 0
    notice: str | None = None


def _local_manifest(tree: Path, location: str | None) -> ContentManifest:
    try:
        manifest = read_manifest(tree, location=location)
    except ManifestNotFoundError:
        return build_manifest(tree, location=location or CONTENT_MANIFEST_NAME)
    check_local_listing(tree, manifest)
    return manifest


def publish_remote(
    tree: Path,
    url: str,
    *,
    manifest_location: str | None = None,
    workers: int = 8,
    part_size: int = DEFAULT_PART_SIZE,
    part_concurrency: int = 2,
    retry: RetryPolicy | None = None,
    progress: OnProgress | None = None,
) -> RemotePublishResult:
    """Upload the tree *tree* to *url* and commit it with its content manifest.

    Parameters
    ----------
    tree
        A local tree with its content manifest (or one is built when it has none). Its
        listing is checked first; every file's SHA-256 is checked as it is uploaded.
    url
        ``s3://bucket/prefix`` (or ``gs://``, ``az://``, ``file://``); endpoint and
        credentials come from the environment.
    manifest_location
        Where the manifest lives in the tree (default: found, else the top).
    workers, part_size, part_concurrency
        Files uploaded at once, the multipart part size, and parts in flight per large file:
        memory stays under ``workers x 8 MiB + 4 x part_concurrency x part_size``.
    retry
        Retries of each request and of each whole object upload.

    Raises
    ------
    VerificationFailed
        The local tree does not match its manifest: a file missing, extra or of another
        size (found before anything is uploaded), or of other content (found by the upload;
        no object is created for that file and no manifest is written).
    DestinationExistsError
        *url* holds another dataset (also when a concurrent publisher of another tree
        committed first).
    PublicationError
        *url* holds objects outside the tree, or another tree's unfinished publish.
    ObjectStoreError, MissingPathError
        The store failed for good (the message names the object), or the bucket is missing.
    """
    policy = retry or RetryPolicy()
    tree = path_argument(tree)
    manifest = _local_manifest(tree, manifest_location)
    key = manifest.location
    claim_key = key + CLAIM_SUFFIX
    location = open_location(url, retry=policy.obstore_config(), create=True)

    swept: StaleUploads | None = None

    def done(already: bool, outcome: Outcome | None = None) -> RemotePublishResult:
        nonlocal swept
        if already and swept is None:  # a killed run may have left uploads behind
            swept = abort_stale_uploads(location, policy)
        swept = swept or StaleUploads()
        return RemotePublishResult(
            url=location.url,
            root_sha256=manifest.root_sha256,
            manifest_location=key,
            file_count=manifest.file_count,
            total_bytes=manifest.total_bytes,
            uploaded_files=outcome.files if outcome else 0,
            uploaded_bytes=outcome.bytes if outcome else 0,
            skipped_files=outcome.skipped if outcome else manifest.file_count,
            already_published=already,
            aborted_uploads=swept.aborted,
            notice=swept.problem,
        )

    if committed(location, key, manifest, policy):
        release_claim(location, claim_key, manifest.root_sha256, policy)
        return done(True)
    listed = list_objects(location, policy)
    _refuse_strangers(location, manifest, listed, claim_key)
    fresh_claim = claim(location, claim_key, manifest.root_sha256, policy)
    with _released_if_taken(location, claim_key, manifest.root_sha256, policy):
        if committed(location, key, manifest, policy):
            release_claim(location, claim_key, manifest.root_sha256, policy)
            return done(True)
    if not fresh_claim:  # an earlier run did not finish, or a twin is at work: see above
        swept = abort_stale_uploads(location, policy)
    outcome = Outcome()
    present = already_uploaded(location, manifest, listed, workers, policy)
    outcome.skipped = len(present)
    todo = [entry for entry in manifest.files if entry.path not in present]
    report(
        progress,
        ProgressUpdate(
            "upload",
            total_bytes=sum(entry.size for entry in todo),
            total_items=len(todo),
        ),
    )
    try:
        upload_all(
            location, tree, todo, outcome, workers, part_size, part_concurrency, policy, progress
        )
    except VerificationFailed:
        # The local tree is wrong, not the transfer: a claim this run made would only
        # stand in the way of publishing the corrected tree (whose root differs).
        if fresh_claim:
            release_claim(location, claim_key, manifest.root_sha256, policy)
        raise
    _check_complete(location, manifest, list_objects(location, policy), claim_key)
    with _released_if_taken(location, claim_key, manifest.root_sha256, policy):
        if not commit(location, key, manifest, policy):
            release_claim(location, claim_key, manifest.root_sha256, policy)
            return done(True, outcome)
    release_claim(location, claim_key, manifest.root_sha256, policy)
    return done(False, outcome)


@contextmanager
def _released_if_taken(
    location: ObjectLocation, claim_key: str, root: str, policy: RetryPolicy
) -> Iterator[None]:
    """Remove our claim when another dataset turns out to be committed here.

    A publisher of another tree can commit and release its claim between our first look
    at the manifest and our claim: our claim is then created, the manifest found, and the
    publish refused. The claim would be left behind in another dataset's prefix (and make
    it fail verification), so it goes; a claim for another root is never touched.
    """
    try:
        yield
    except DestinationExistsError:
        release_claim(location, claim_key, root, policy)
        raise


def _refuse_strangers(
    location: ObjectLocation,
    manifest: ContentManifest,
    listed: dict[str, RemoteObject],
    claim_key: str,
) -> None:
    paths = {entry.path for entry in manifest.files}
    strangers = sorted(set(listed) - paths - {manifest.location, claim_key})
    if strangers:
        shown = ", ".join(strangers[:3]) + (", ..." if len(strangers) > 3 else "")
        raise PublicationError(
            f"{location.url}: holds {len(strangers)} object(s) that are not in this tree "
            f"({shown}); a dataset's prefix holds only its own files, choose an empty prefix"
        )


def _check_complete(
    location: ObjectLocation,
    manifest: ContentManifest,
    listed: dict[str, RemoteObject],
    claim_key: str,
) -> None:
    """Every file present with its size, nothing else: the last look before committing."""
    problems = [
        f"{entry.path}: missing"
        if entry.path not in listed
        else f"{entry.path}: size {listed[entry.path].size}, expected {entry.size}"
        for entry in manifest.files
        if entry.path not in listed or listed[entry.path].size != entry.size
    ]
    _refuse_strangers(location, manifest, listed, claim_key)
    if problems:
        raise PublicationError(
            f"{location.url}: after the upload {len(problems)} object(s) are not as uploaded "
            f"(first: {problems[0]}); another writer is at work here, nothing was committed"
        )
