"""Move the files: find what a previous run already uploaded, upload the rest in parallel.

Three sizes of file, one rule for memory:

* small (up to :data:`SINGLE_PUT_LIMIT`): one request each, held whole by one worker;
* medium (up to ``part_concurrency x part_size``): one request too, held whole, but only
  :data:`_LARGE_AT_ONCE` at a time, like large files. A file that fits in the memory its
  multipart upload would hold anyway goes in one request: on S3 servers one request is
  cheaper than creating, sending and assembling parts (measured: a 64 MiB file costs moto
  half the CPU in one request), and S3 takes up to 5 GiB in one;
* large: a multipart upload of ``part_size`` parts, ``part_concurrency`` in flight.

Memory stays under ``workers x 8 MiB + 4 x part_concurrency x part_size`` (320 MiB with
the defaults), whatever the file sizes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

from dataset_devkit.integrity.bucket.objects import (
    RemoteObject,
    keeps_metadata,
    recorded_sha256,
)
from dataset_devkit.integrity.bucket.reads import hash_objects
from dataset_devkit.integrity.bucket.retry import RetryPolicy, with_retries
from dataset_devkit.integrity.bucket.upload import upload_file
from dataset_devkit.integrity.manifest import ContentManifest, ManifestEntry
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.objectstore import ObjectLocation

__all__ = ["SINGLE_PUT_LIMIT", "Outcome", "already_uploaded", "upload_all"]

#: Files up to this size go in one request, any number of workers at once.
SINGLE_PUT_LIMIT: Final = 8 << 20

#: Medium and large files uploaded at once; each holds up to ``part_concurrency`` parts'
#: worth of memory. Four, like s3fs's concurrent puts: with two, a tree of 64 MiB files
#: went out in two waves with the server idle while each wave was read and hashed
#: (measured: publish 0.68-1.54x of s3fs put per run with two, 1.01-1.55x with four).
_LARGE_AT_ONCE: Final = 4


class Outcome:
    """Counters shared by the upload workers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.files = 0
        self.bytes = 0
        self.skipped = 0


def already_uploaded(
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


def upload_all(
    location: ObjectLocation,
    tree: Path,
    todo: list[ManifestEntry],
    outcome: Outcome,
    workers: int,
    part_size: int,
    part_concurrency: int,
    policy: RetryPolicy,
    progress: OnProgress | None,
) -> None:
    metadata = keeps_metadata(location)
    window = threading.BoundedSemaphore(workers * 2)
    large = threading.BoundedSemaphore(_LARGE_AT_ONCE)
    small_limit = min(part_size, SINGLE_PUT_LIMIT)
    whole_limit = part_size * max(1, part_concurrency)
    failures: list[BaseException] = []
    stop = threading.Event()
    advance: Callable[[int], None] | None = None
    if progress is not None:
        sink = progress

        def advance(nbytes: int) -> None:
            sink(ProgressUpdate("upload", nbytes=nbytes))

    def one(entry: ManifestEntry) -> None:
        is_large = entry.size > small_limit
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
                        single_put_limit=whole_limit,
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
