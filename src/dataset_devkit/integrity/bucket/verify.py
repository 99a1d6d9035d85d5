"""Verify a dataset in place on an object store, as ``verify`` does on disk.

The prefix is listed once (sizes and entity tags), the manifest read and checked, and
every object streamed through SHA-256 with parallel ranged reads
(:func:`~dataset_devkit.integrity.bucket.reads.hash_objects`). Differences are the same
:class:`~dataset_devkit.integrity.issues.Issue` kinds as on disk: missing, extra, changed,
raced (replaced while read), manifest, in the same report.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity.bucket.commit import CLAIM_SUFFIX
from dataset_devkit.integrity.bucket.objects import (
    RemoteObject,
    list_objects,
    read_remote_manifest,
)
from dataset_devkit.integrity.bucket.reads import (
    DEFAULT_RANGE_SIZE,
    DEFAULT_WHOLE_LIMIT,
    hash_objects,
)
from dataset_devkit.integrity.bucket.retry import RetryPolicy
from dataset_devkit.integrity.issues import Issue, IssueKind
from dataset_devkit.integrity.location import CONTENT_MANIFEST_NAME, check_manifest_location
from dataset_devkit.integrity.manifest import (
    ContentManifest,
    ManifestEntry,
    compute_root_sha256,
)
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, byte_reporter, report
from dataset_devkit.integrity.sampling import SampleCoverage, VerifySample
from dataset_devkit.integrity.verify import VerificationReport, check_root_hex
from dataset_devkit.objectstore import ObjectLocation, open_location

__all__ = ["find_remote_manifest", "verify_remote"]


def find_remote_manifest(listed: dict[str, RemoteObject]) -> list[str]:
    """Candidate manifest keys: the top one, else every one exactly one level down."""
    if CONTENT_MANIFEST_NAME in listed:
        return [CONTENT_MANIFEST_NAME]
    return sorted(
        key
        for key in listed
        if PurePosixPath(key).name == CONTENT_MANIFEST_NAME and key.count("/") == 1
    )


def _locate(
    location: ObjectLocation,
    listed: dict[str, RemoteObject],
    wanted: str | None,
    policy: RetryPolicy,
) -> tuple[str, ContentManifest] | Issue:
    keys = [check_manifest_location(wanted)] if wanted else find_remote_manifest(listed)
    found: list[tuple[str, ContentManifest]] = []
    for key in keys:
        try:
            manifest = read_remote_manifest(location, key, policy)
        except FormatError as exc:
            if wanted is None and key != CONTENT_MANIFEST_NAME:
                continue  # a nested file of that name that is not its tree's manifest
            where = f" (at {exc.field})" if exc.field else ""
            return Issue(key, IssueKind.MANIFEST, exc.detail + where)
        if manifest is not None:
            found.append((key, manifest))
    if len(found) > 1:
        names = ", ".join(key for key, _ in found)
        return Issue(".", IssueKind.MANIFEST, f"several content manifests ({names}); name one")
    if not found:
        claim = (wanted or CONTENT_MANIFEST_NAME) + CLAIM_SUFFIX
        hint = " (an unfinished publish is here: re-run it to finish)" if claim in listed else ""
        return Issue(
            wanted or CONTENT_MANIFEST_NAME,
            IssueKind.MISSING,
            "no content manifest; a prefix without its manifest is not a dataset" + hint,
        )
    return found[0]


def _counter(progress: OnProgress) -> Callable[[], None]:
    def one() -> None:
        progress(ProgressUpdate("verify", items=1, unit="objects"))

    return one


def verify_remote(
    url: str,
    *,
    location: str | None = None,
    expect_root: str | None = None,
    workers: int = 8,
    range_size: int = DEFAULT_RANGE_SIZE,
    whole_limit: int = DEFAULT_WHOLE_LIMIT,
    retry: RetryPolicy | None = None,
    progress: OnProgress | None = None,
    sample: VerifySample | None = None,
) -> VerificationReport:
    """Compare every object below *url* with the dataset's content manifest.

    The report is the one :func:`~dataset_devkit.integrity.verify_tree` returns for a local
    tree, with ``root`` the URL: missing, extra and changed objects, objects replaced while
    read (raced), and a manifest that is absent, broken or not the pinned *expect_root*.

    Objects up to *whole_limit* bytes are read by one streamed GET each, larger ones by
    parallel ranged reads of *range_size*; *workers* objects or ranges at once.

    *sample* reads and hashes only the objects it selects (the same files as for a local
    tree); every object's presence and size is still checked from the listing.

    Raises
    ------
    ConfigError
        A bad URL or *expect_root*.
    ObjectStoreError, MissingPathError
        The store failed for good after its retries (naming the object), or the bucket
        does not exist: a verification that could not read everything is not a verdict.
    """
    policy = retry or RetryPolicy()
    pinned_root = check_root_hex(expect_root) if expect_root is not None else None
    store = open_location(url, retry=policy.obstore_config())
    report_ = VerificationReport(root=store.url)
    listed = list_objects(store, policy)
    located = _locate(store, listed, location, policy)
    if isinstance(located, Issue):
        report_.details.append(located)
        return report_
    key, manifest = located
    report_.manifest_location = key
    report_.root_sha256 = manifest.root_sha256
    report_.file_count = manifest.file_count
    report_.total_bytes = manifest.total_bytes
    issues: list[Issue] = []
    if pinned_root is not None and manifest.root_sha256 != pinned_root:
        issues.append(
            Issue(
                key,
                IssueKind.MANIFEST,
                f"root_sha256 {manifest.root_sha256}, expected the pinned {pinned_root}",
            )
        )
    expected = manifest.by_path()
    present = {path: info for path, info in listed.items() if path != key}
    hashed = present
    if sample is not None:
        report_.sample = SampleCoverage.of(sample, manifest.files)
        hashed = {p: i for p, i in present.items() if p in expected and sample.selects(p)}
    for path, entry in expected.items():
        if path not in present:
            issues.append(Issue(path, IssueKind.MISSING, f"expected {entry.size} bytes"))
    report(
        progress,
        ProgressUpdate(
            "verify",
            total_bytes=sum(info.size for info in hashed.values()),
            total_items=len(hashed),
            unit="objects",
        ),
    )
    digests = hash_objects(
        store,
        sorted(hashed.items()),
        workers=workers,
        policy=policy,
        range_size=range_size,
        whole_limit=whole_limit,
        progress=byte_reporter(progress, "verify", unit="objects"),
        finished=None if progress is None else _counter(progress),
    )
    clean = True
    for path, info in sorted(present.items()):
        outcome = digests.get(path)  # None: not in the sample (or not listed): size only
        if isinstance(outcome, Issue):
            issues.append(outcome)
            clean = False
            continue
        listed_entry = expected.get(path)
        if listed_entry is None:
            issues.append(Issue(path, IssueKind.EXTRA, f"not in the manifest ({info.size} bytes)"))
        elif info.size != listed_entry.size:
            issues.append(
                Issue(path, IssueKind.CHANGED, f"size {info.size}, expected {listed_entry.size}")
            )
        elif outcome is not None and outcome != listed_entry.sha256:
            issues.append(
                Issue(
                    path,
                    IssueKind.CHANGED,
                    f"sha256 {outcome}, expected {listed_entry.sha256}",
                )
            )
    report_.details = sorted(issues)
    if clean and sample is None:
        report_.actual_root_sha256 = compute_root_sha256(
            ManifestEntry(path=p, size=present[p].size, sha256=str(digests[p])) for p in present
        )
    return report_
