"""Check a local tree's listing against its manifest before a publish, without reading files.

A publish reads every file exactly once: the upload hashes the bytes it sends and refuses
to complete an object whose digest is not the manifest's (see
:mod:`~dataset_devkit.integrity.bucket.upload`). Reading and hashing the whole tree first,
as a local ``verify`` does, would read every byte twice and cost a quarter of the upload's
speed. What the upload cannot see is the *shape* of the tree: a file the manifest does not
list, a file of another size, a link. Those are found here by a walk of directory entries
(one ``stat`` each, no content read), so the common mistakes are refused before anything is
claimed or uploaded, with the same issue kinds and report as the local verify.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dataset_devkit.integrity.issues import Issue, IssueKind
from dataset_devkit.integrity.manifest import ContentManifest
from dataset_devkit.integrity.safefs import describe_mode, open_dir_nofollow
from dataset_devkit.integrity.verify import VerificationReport

__all__ = ["check_local_listing"]


def _walk(dir_fd: int, prefix: str, skip: str, sizes: dict[str, int], issues: list[Issue]) -> None:
    with os.scandir(dir_fd) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        rel = prefix + entry.name
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            shown = rel.encode("utf-8", "replace").decode()
            issues.append(Issue(shown, IssueKind.UNSAFE, "file name is not valid UTF-8"))
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            issues.append(Issue(rel, IssueKind.RACED, "vanished while listed"))
            continue
        if stat.S_ISDIR(st.st_mode):
            sub = open_dir_nofollow(entry.name, dir_fd=dir_fd)
            try:
                _walk(sub, rel + "/", skip, sizes, issues)
            finally:
                os.close(sub)
        elif rel == skip:
            continue
        elif stat.S_ISLNK(st.st_mode):
            issues.append(Issue(rel, IssueKind.LINKED, "is a symlink"))
        elif not stat.S_ISREG(st.st_mode):
            issues.append(Issue(rel, IssueKind.NOT_REGULAR, f"is a {describe_mode(st.st_mode)}"))
        elif st.st_nlink > 1:
            issues.append(Issue(rel, IssueKind.LINKED, f"is a hard link ({st.st_nlink} links)"))
        else:
            sizes[rel] = st.st_size


def check_local_listing(tree: Path, manifest: ContentManifest) -> None:
    """Raise :class:`~dataset_devkit.errors.VerificationFailed` unless *tree* holds exactly
    the manifest's files, each with its recorded size, as plain single-link files.

    Contents are not read: the upload checks every file's SHA-256 as it sends it.
    """
    sizes: dict[str, int] = {}
    issues: list[Issue] = []
    root_fd = open_dir_nofollow(tree)
    try:
        _walk(root_fd, "", manifest.location, sizes, issues)
    finally:
        os.close(root_fd)
    flagged = {issue.path for issue in issues}
    for entry in manifest.files:
        size = sizes.pop(entry.path, None)
        if size is None:
            if entry.path not in flagged:
                issues.append(Issue(entry.path, IssueKind.MISSING, f"expected {entry.size} bytes"))
        elif size != entry.size:
            issues.append(
                Issue(entry.path, IssueKind.CHANGED, f"size {size}, expected {entry.size}")
            )
    for path, size in sizes.items():
        issues.append(Issue(path, IssueKind.EXTRA, f"not in the manifest ({size} bytes)"))
    VerificationReport(
        root=tree,
        details=sorted(issues),
        root_sha256=manifest.root_sha256,
        file_count=manifest.file_count,
        total_bytes=manifest.total_bytes,
        manifest_location=manifest.location,
    ).raise_for_issues()
