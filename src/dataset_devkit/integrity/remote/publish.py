"""Publish a verified tree to an object store, with the manifest as the commit marker.

The protocol, in order:

1. The local tree is verified against its content manifest (or one is built in memory
   when the tree has none yet); nothing unverified leaves the machine.
2. A prefix that already holds a manifest is a published dataset: the same root is
   "already published" (success), another root is refused. A prefix that holds objects
   outside the tree is refused too: a dataset's prefix holds only its files.
3. A claim ``<manifest>.publishing`` naming the root is created with a conditional put
   (``If-None-Match: *``). A claim for the same root means a re-run or a twin publisher of
   the identical tree: both may go on, they write the same bytes. A claim for another root
   refuses, so two different trees can never interleave their objects under one prefix.
   The manifest is checked once more after claiming: a winner that committed and released
   its claim meanwhile is seen here.
4. Every file is uploaded in parallel (multipart when large, memory bounded, retried);
   objects already present with the right size and SHA-256 are skipped, so a re-run after
   an interruption resumes.
5. A final listing proves every file is present with its size and nothing else is there.
6. ``content_manifest.json`` is written last with a conditional put: exactly one publisher
   commits; a loser whose tree has the same root is told "already published".
7. The claim is removed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dataset_devkit.errors import DestinationExistsError, FormatError, PublicationError
from dataset_devkit.integrity.canonical import canonical_json
from dataset_devkit.integrity.location import CONTENT_MANIFEST_NAME, ManifestNotFoundError
from dataset_devkit.integrity.manifest import (
    ContentManifest,
    ManifestEntry,
    build_manifest,
    parse_manifest,
    read_manifest,
)
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.integrity.remote.objects import (
    RemoteObject,
    keeps_metadata,
    list_objects,
    read_small,
    recorded_sha256,
)
from dataset_devkit.integrity.remote.reads import hash_objects
from dataset_devkit.integrity.remote.retry import RetryPolicy, with_retries
from dataset_devkit.integrity.remote.upload import upload_file
from dataset_devkit.integrity.safefs import path_argument
from dataset_devkit.integrity.verify import verify_tree
from dataset_devkit.objectstore import ObjectLocation, open_location

__all__ = ["CLAIM_SUFFIX", "DEFAULT_PART_SIZE", "RemotePublishResult", "publish_remote"]

#: Appended to the manifest's key to name the claim of a publish in progress.
CLAIM_SUFFIX: Final = ".publishing"
#: Multipart part size; also the largest file sent in one request.
DEFAULT_PART_SIZE: Final = 8 << 20
_CLAIM_FORMAT: Final = "dataset-devkit/publish-claim"
#: Large files uploaded at once; each holds ``part_concurrency`` parts in memory.
_LARGE_AT_ONCE: Final = 2


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


def _local_manifest(tree: Path, location: str | None) -> ContentManifest:
    try:
        manifest = read_manifest(tree, location=location)
    except ManifestNotFoundError:
        return build_manifest(tree, location=location or CONTENT_MANIFEST_NAME)
    verify_tree(tree, manifest=manifest).raise_for_issues()
    return manifest


def _published_root(
    location: ObjectLocation, key: str, policy: RetryPolicy
) -> ContentManifest | None:
    raw = read_small(location, key, policy)
    if raw is None:
        return None
    return parse_manifest(raw, location.describe(key), location=key)


class _Outcome:
    """Counters shared by the upload workers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.files = 0
        self.bytes = 0
        self.skipped = 0


def publish_remote(
    tree: Path,
    url: str,
    *,
    manifest_location: str | None = None,
    workers: int = 8,
    part_size: int = DEFAULT_PART_SIZE,
    part_concurrency: int = 4,
    retry: RetryPolicy | None = None,
    progress: OnProgress | None = None,
) -> RemotePublishResult:
    """Upload the tree *tree* to *url* and commit it with its content manifest.

    Parameters
    ----------
    tree
        A local tree; its content manifest is verified first (or built when it has none).
    url
        ``s3://bucket/prefix`` (or ``gs://``, ``az://``, ``file://``); endpoint and
        credentials come from the environment.
    manifest_location
        Where the manifest lives in the tree (default: found, else the top).
    workers, part_size, part_concurrency
        Files uploaded at once, the multipart part size, and parts in flight per large file:
        memory stays near ``workers x part_size + 2 x part_concurrency x part_size``.
    retry
        Retries of each request and of each whole object upload.

    Raises
    ------
    VerificationFailed
        The local tree does not match its manifest.
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

    def done(already: bool, outcome: _Outcome | None = None) -> RemotePublishResult:
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
        )

    if _committed(location, key, manifest, policy):
        _release_claim(location, claim_key, manifest.root_sha256, policy)
        return done(True)
    listed = list_objects(location, policy)
    _refuse_strangers(location, manifest, listed, claim_key)
    _claim(location, claim_key, manifest.root_sha256, policy)
    if _committed(location, key, manifest, policy):
        _release_claim(location, claim_key, manifest.root_sha256, policy)
        return done(True)
    outcome = _Outcome()
    present = _present(location, manifest, listed, workers, policy)
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
    _upload_all(
        location, tree, todo, outcome, workers, part_size, part_concurrency, policy, progress
    )
    _check_complete(location, manifest, list_objects(location, policy), claim_key)
    if not _commit(location, key, manifest, policy):
        _release_claim(location, claim_key, manifest.root_sha256, policy)
        return done(True, outcome)
    _release_claim(location, claim_key, manifest.root_sha256, policy)
    return done(False, outcome)


def _committed(
    location: ObjectLocation, key: str, manifest: ContentManifest, policy: RetryPolicy
) -> bool:
    """True when *location* already holds this dataset; raise when it holds another."""
    try:
        published = _published_root(location, key, policy)
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


def _claim_bytes(root: str) -> bytes:
    return canonical_json({"format": _CLAIM_FORMAT, "root_sha256": root}) + b"\n"


def _claim(location: ObjectLocation, claim_key: str, root: str, policy: RetryPolicy) -> None:
    import obstore

    url = location.describe(claim_key)

    def create() -> bool:
        try:
            obstore.put(location.store, claim_key, _claim_bytes(root), mode="create")
        except FileExistsError:
            return False
        except Exception as exc:
            if type(exc).__name__ == "AlreadyExistsError":
                return False
            raise
        return True

    if with_retries(policy, url, "claim the prefix", create):
        return
    held = read_small(location, claim_key, policy)
    if held is not None and held != _claim_bytes(root):
        raise PublicationError(
            f"{location.url}: an unfinished publish of another tree holds this prefix "
            f"({claim_key}: {held[:120].decode('utf-8', 'replace').strip()}); re-run that "
            "publish to finish it, or delete the prefix to start over"
        )


def _release_claim(
    location: ObjectLocation, claim_key: str, root: str, policy: RetryPolicy
) -> None:
    """Remove our claim (or a stale one for the same root); another root's is left alone."""
    import obstore

    if read_small(location, claim_key, policy) != _claim_bytes(root):
        return

    def delete() -> None:
        obstore.delete(location.store, claim_key)

    # Deleting a key that a twin publisher already removed succeeds on every store.
    with_retries(policy, location.describe(claim_key), "remove the claim", delete)


def _present(
    location: ObjectLocation,
    manifest: ContentManifest,
    listed: dict[str, RemoteObject],
    workers: int,
    policy: RetryPolicy,
) -> set[str]:
    """Paths already uploaded with the right size and SHA-256 (by a run interrupted)."""
    candidates = [
        (entry, listed[entry.path])
        for entry in manifest.files
        if entry.path in listed and listed[entry.path].size == entry.size
    ]
    if not candidates:
        return set()
    if not keeps_metadata(location):
        digests = hash_objects(
            location, [(e.path, info) for e, info in candidates], workers=workers, policy=policy
        )
        return {e.path for e, _ in candidates if digests.get(e.path) == e.sha256}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="remote-head") as pool:
        recorded = list(
            pool.map(lambda pair: recorded_sha256(location, pair[0].path, policy), candidates)
        )
    return {
        e.path for (e, _), digest in zip(candidates, recorded, strict=True) if digest == e.sha256
    }


def _upload_all(
    location: ObjectLocation,
    tree: Path,
    todo: list[ManifestEntry],
    outcome: _Outcome,
    workers: int,
    part_size: int,
    part_concurrency: int,
    policy: RetryPolicy,
    progress: OnProgress | None,
) -> None:
    metadata = keeps_metadata(location)
    window = threading.BoundedSemaphore(workers * 2)
    large = threading.BoundedSemaphore(_LARGE_AT_ONCE)
    failures: list[BaseException] = []
    stop = threading.Event()
    advance: Callable[[int], None] | None = None
    if progress is not None:
        sink = progress

        def advance(nbytes: int) -> None:
            sink(ProgressUpdate("upload", nbytes=nbytes))

    def one(entry: ManifestEntry) -> None:
        is_large = entry.size > part_size
        try:
            if stop.is_set():
                return
            if is_large:
                large.acquire()
            try:
                with_retries(
                    policy,
                    location.describe(entry.path),
                    "upload",
                    lambda: upload_file(
                        location,
                        tree,
                        entry,
                        part_size=part_size,
                        part_concurrency=part_concurrency,
                        metadata=metadata,
                        progress=advance,
                    ),
                )
            finally:
                if is_large:
                    large.release()
            with outcome.lock:
                outcome.files += 1
                outcome.bytes += entry.size
            report(progress, ProgressUpdate("upload", items=1))
        except BaseException as exc:
            failures.append(exc)
            stop.set()
        finally:
            window.release()

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="upload") as pool:
        for entry in todo:
            window.acquire()
            if stop.is_set():
                window.release()
                break
            pool.submit(one, entry)
    if failures:
        raise failures[0]


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


def _commit(
    location: ObjectLocation, key: str, manifest: ContentManifest, policy: RetryPolicy
) -> bool:
    """Write the manifest if no one has; True when this call wrote it."""
    import obstore

    def create() -> bool:
        try:
            obstore.put(location.store, key, manifest.to_bytes(), mode="create")
        except FileExistsError:
            return False
        except Exception as exc:
            if type(exc).__name__ == "AlreadyExistsError":
                return False
            raise
        return True

    if with_retries(policy, location.describe(key), "write the manifest", create):
        return True
    # Someone committed first (or our own write landed and its answer was lost): the same
    # root is this dataset, another root is a lost race.
    _committed(location, key, manifest, policy)
    return False
