"""Revalidate a tree against its content manifest and report every difference at once."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from dataset_devkit.errors import ConfigError, DevkitError, FormatError, VerificationFailed
from dataset_devkit.integrity.issues import Issue, IssueKind
from dataset_devkit.integrity.location import (
    CONTENT_MANIFEST_NAME,
    ManifestNotFoundError,
    check_manifest_location,
    locate_manifest,
)
from dataset_devkit.integrity.manifest import (
    ContentManifest,
    ManifestEntry,
    compute_root_sha256,
    read_manifest,
)
from dataset_devkit.integrity.progress import OnProgress
from dataset_devkit.integrity.safefs import SafeDir, describe_mode, open_dir_nofollow, path_argument
from dataset_devkit.integrity.sampling import SampleCoverage, VerifySample
from dataset_devkit.integrity.scan import scan_tree

__all__ = ["VerificationReport", "check_root_hex", "verify_tree"]

_ROOT_HEX = re.compile(r"[0-9a-f]{64}")


def check_root_hex(value: object) -> str:
    """*value* if it is a root hash (64 lowercase hex digits), else a :class:`ConfigError`."""
    if not isinstance(value, str) or not _ROOT_HEX.fullmatch(value):
        raise ConfigError(
            f"expected a root_sha256 of 64 lowercase hex digits, found {value!r}",
            key="expect_root",
        )
    return value


@dataclass
class VerificationReport:
    """The outcome of :func:`verify_tree`.

    ``details`` holds structured :class:`Issue` values sorted by path; ``issues`` the same as
    lines of text. ``root_sha256`` is the manifest's root hash (``None`` when the manifest
    itself could not be read), ``actual_root_sha256`` the hash of what is on disk when every
    file could be hashed. ``manifest_location`` is where the manifest was looked for,
    relative to ``root`` (``None`` when none was found).
    """

    root: Path | str
    details: list[Issue] = field(default_factory=list)
    root_sha256: str | None = None
    actual_root_sha256: str | None = None
    file_count: int = 0
    total_bytes: int = 0
    manifest_location: str | None = None
    #: What a sampled verification hashed (None: every file was).
    sample: SampleCoverage | None = None

    @property
    def ok(self) -> bool:
        """Whether the tree matches its manifest exactly."""
        return not self.details

    @property
    def issues(self) -> list[str]:
        """Every issue as one line of text, sorted."""
        return [str(issue) for issue in self.details]

    def raise_for_issues(self) -> None:
        """Raise :class:`VerificationFailed` listing every issue, if there is any."""
        if self.details:
            count = len(self.details)
            where = f" {self.manifest_location}" if self.manifest_location else ""
            raise VerificationFailed(
                f"{self.root}: does not match its content manifest{where} "
                f"({count} issue{'s' if count != 1 else ''})",
                self.issues,
            )

    def to_json(self) -> dict[str, object]:
        """A plain mapping for ``--json`` output."""
        return {
            "root": str(self.root),
            "manifest": self.manifest_location,
            "ok": self.ok,
            "root_sha256": self.root_sha256,
            "actual_root_sha256": self.actual_root_sha256,
            "file_count": self.file_count,
            "total_bytes": self.total_bytes,
            "issues": [issue.to_json() for issue in self.details],
            "sample": None if self.sample is None else self.sample.to_json(),
        }


def _manifest_file_issue(root: Path, location: str) -> Issue | None:
    """The manifest itself must be a single-link regular file, reached without links."""
    parent_rel, _, leaf = location.rpartition("/")
    try:
        with SafeDir.open(root) as pinned:
            parent = pinned.opendir(parent_rel) if parent_rel else pinned
            try:
                st = os.stat(leaf, dir_fd=parent.fd, follow_symlinks=False)
            finally:
                if parent is not pinned:
                    parent.close()
    except FileNotFoundError:
        return Issue(location, IssueKind.MISSING, "no content manifest")
    except (OSError, DevkitError) as exc:
        return Issue(location, IssueKind.UNSAFE, f"cannot reach the content manifest: {exc}")
    if stat.S_ISLNK(st.st_mode):
        return Issue(location, IssueKind.LINKED, "is a symlink")
    if not stat.S_ISREG(st.st_mode):
        return Issue(location, IssueKind.NOT_REGULAR, f"is a {describe_mode(st.st_mode)}")
    if st.st_nlink > 1:
        return Issue(location, IssueKind.LINKED, f"is a hard link ({st.st_nlink})")
    return None


def verify_tree(
    root: Path,
    *,
    manifest: ContentManifest | None = None,
    location: str | None = None,
    progress: OnProgress | None = None,
    workers: int | None = None,
    expect_root: str | None = None,
    sample: VerifySample | None = None,
) -> VerificationReport:
    """Compare every file below *root* with its content manifest.

    Reports missing, extra, changed (size or SHA-256), linked (symlink or hard link),
    non-regular and raced files, sorted by path. A tree whose manifest cannot be found or
    read reports that as its one issue.

    Parameters
    ----------
    root
        A real directory.
    manifest
        The manifest to compare with, already read; otherwise it is read from the tree.
    location
        Where the manifest lives, relative to *root*. ``None`` uses *manifest*'s own
        ``excluded`` when one is given, else finds it (the top, else the one subdirectory
        whose manifest names itself). Only that path is left out of the comparison: a
        root-level ``content_manifest.json`` beside a nested manifest is an extra file.
    progress
        Hears of the hashing as stage ``"verify"``: the manifest's byte and file totals
        first, then bytes and files as they are hashed (see
        :func:`~dataset_devkit.integrity.scan.scan_tree`).
    workers
        As for :func:`~dataset_devkit.integrity.scan.scan_tree`.
    expect_root
        The ``root_sha256`` the caller pinned (64 lowercase hex digits), e.g. the one printed
        when the tree was published. A tree that matches its own manifest still fails when
        that manifest's root is another: an edited tree with a regenerated manifest is
        consistent, but it is not the dataset that was published.
    sample
        Hash only the files it selects (:mod:`~dataset_devkit.integrity.sampling`); every
        file is still listed and its size checked. The report's ``sample`` says how much
        was hashed, and no ``actual_root_sha256`` is computed.

    Raises
    ------
    ConfigError
        *expect_root* is not 64 lowercase hex digits.
    """
    root = path_argument(root)
    pinned_root = check_root_hex(expect_root) if expect_root is not None else None
    os.close(open_dir_nofollow(root))  # a missing or linked root is an error, not a report
    report = VerificationReport(root=root)
    if location is None and manifest is not None:
        location = manifest.location
    if location is None:
        try:
            location = locate_manifest(root)
        except ManifestNotFoundError:
            report.details.append(
                Issue(CONTENT_MANIFEST_NAME, IssueKind.MISSING, "no content manifest")
            )
            return report
        except FormatError as exc:
            report.details.append(Issue(".", IssueKind.MANIFEST, exc.detail))
            return report
    location = check_manifest_location(location)
    report.manifest_location = location
    if manifest is not None and manifest.excluded != (location,):
        report.details.append(
            Issue(
                location,
                IssueKind.MANIFEST,
                f"the given manifest excludes {list(manifest.excluded)!r}, not [{location!r}]",
            )
        )
        return report
    if manifest is None:
        problem = _manifest_file_issue(root, location)
        if problem is not None:
            report.details.append(problem)
            return report
        try:
            manifest = read_manifest(root, location=location)
        except FormatError as exc:
            where = f" (at {exc.field})" if exc.field else ""
            report.details.append(Issue(location, IssueKind.MANIFEST, exc.detail + where))
            return report
        except DevkitError as exc:
            report.details.append(Issue(location, IssueKind.MANIFEST, str(exc)))
            return report
    report.root_sha256 = manifest.root_sha256
    if pinned_root is not None and manifest.root_sha256 != pinned_root:
        report.details.append(
            Issue(
                location,
                IssueKind.MANIFEST,
                f"root_sha256 {manifest.root_sha256}, expected the pinned {pinned_root}",
            )
        )
    report.file_count = manifest.file_count
    report.total_bytes = manifest.total_bytes
    totals = (manifest.total_bytes, manifest.file_count)
    if sample is not None:
        report.sample = SampleCoverage.of(sample, manifest.files)
        totals = (report.sample.bytes, report.sample.files)
    scan = scan_tree(
        root,
        exclude=frozenset({location}),
        progress=progress,
        workers=workers,
        stage="verify",
        totals=totals,
        select=None if sample is None else sample.selects,
    )
    issues = list(scan.issues)
    problem_paths = {issue.path for issue in scan.issues}
    expected = manifest.by_path()
    for path, entry in expected.items():
        found = scan.files.get(path)
        if found is None and path in scan.sized:  # not in the sample: its size only
            if scan.sized[path] != entry.size:
                found = (scan.sized[path], "")
            else:
                continue
        if found is None:
            if path not in problem_paths:
                issues.append(Issue(path, IssueKind.MISSING, f"expected {entry.size} bytes"))
            continue
        size, digest = found
        if size != entry.size:
            issues.append(Issue(path, IssueKind.CHANGED, f"size {size}, expected {entry.size}"))
        elif digest != entry.sha256:
            issues.append(
                Issue(path, IssueKind.CHANGED, f"sha256 {digest}, expected {entry.sha256}")
            )
    listed = [*((p, s) for p, (s, _) in scan.files.items()), *scan.sized.items()]
    for path, size in listed:
        if path not in expected:
            issues.append(Issue(path, IssueKind.EXTRA, f"not in the manifest ({size} bytes)"))
    report.details = sorted([*report.details, *issues])
    if not scan.issues and sample is None:
        report.actual_root_sha256 = compute_root_sha256(
            ManifestEntry(path=p, size=s, sha256=d) for p, (s, d) in scan.files.items()
        )
    return report
