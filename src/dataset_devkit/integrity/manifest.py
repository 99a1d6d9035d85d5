"""The content manifest: every published file by path, size and SHA-256, and a root hash.

``content_manifest.json`` lists every single-link regular file of a tree, sorted by relative
POSIX path, and excludes only itself, naming its own location in ``excluded`` (the top of
the tree by default, or a subdirectory such as ``mz_extensions/``). ``root_sha256`` is the
SHA-256 of the canonical JSON of the entry list, so the same content always gives the same
file and the same root hash whatever the host, the mtimes or the order files were made in.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import msgspec

from dataset_devkit.errors import (
    DestinationExistsError,
    FormatError,
    UnsafePathError,
    VerificationFailed,
)
from dataset_devkit.integrity.atomic import remove_stale_partials, write_atomic
from dataset_devkit.integrity.canonical import canonical_json, pretty_json
from dataset_devkit.integrity.location import (
    CONTENT_MANIFEST_NAME,
    ManifestNotFoundError,
    check_manifest_location,
    locate_manifest,
)
from dataset_devkit.integrity.progress import OnProgress
from dataset_devkit.integrity.records import decode_json_record
from dataset_devkit.integrity.safefs import SafeDir, check_relative_path, path_argument
from dataset_devkit.integrity.scan import scan_tree

__all__ = [
    "CONTENT_MANIFEST_FORMAT",
    "CONTENT_MANIFEST_NAME",
    "CONTENT_MANIFEST_VERSION",
    "ContentManifest",
    "ManifestEntry",
    "build_manifest",
    "compute_root_sha256",
    "parse_manifest",
    "read_manifest",
    "read_manifest_bytes",
    "write_manifest",
]

CONTENT_MANIFEST_FORMAT: Final = "dataset-devkit/content-manifest"
CONTENT_MANIFEST_VERSION: Final = 1

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class ManifestEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One file: relative POSIX path, byte size and lowercase hex SHA-256."""

    path: str
    size: int
    sha256: str

    def to_json(self) -> dict[str, str | int]:
        """The canonical mapping hashed into ``root_sha256``."""
        return {"path": self.path, "sha256": self.sha256, "size": self.size}


class ContentManifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole ``content_manifest.json`` document."""

    format: str = CONTENT_MANIFEST_FORMAT
    format_version: int = CONTENT_MANIFEST_VERSION
    algorithm: str = "sha256"
    excluded: tuple[str, ...] = (CONTENT_MANIFEST_NAME,)
    file_count: int
    total_bytes: int
    root_sha256: str
    files: tuple[ManifestEntry, ...]

    @classmethod
    def from_entries(
        cls, entries: Iterable[ManifestEntry], *, location: str = CONTENT_MANIFEST_NAME
    ) -> ContentManifest:
        """Sort *entries* by path and compute the counts and root hash.

        *location* is where the manifest will live; it is recorded as the one exclusion.
        """
        files = tuple(sorted(entries, key=lambda entry: entry.path))
        return cls(
            excluded=(location,),
            file_count=len(files),
            total_bytes=sum(entry.size for entry in files),
            root_sha256=compute_root_sha256(files),
            files=files,
        )

    @property
    def location(self) -> str:
        """Where this manifest lives in its tree: its one exclusion."""
        return self.excluded[0] if self.excluded else CONTENT_MANIFEST_NAME

    def by_path(self) -> dict[str, ManifestEntry]:
        """Entries keyed by path."""
        return {entry.path: entry for entry in self.files}

    def to_bytes(self) -> bytes:
        """The deterministic file bytes (sorted keys, two-space indent, final newline)."""
        return pretty_json(
            {
                "algorithm": self.algorithm,
                "excluded": list(self.excluded),
                "file_count": self.file_count,
                "files": [entry.to_json() for entry in self.files],
                "format": self.format,
                "format_version": self.format_version,
                "root_sha256": self.root_sha256,
                "total_bytes": self.total_bytes,
            }
        )


def compute_root_sha256(entries: Iterable[ManifestEntry]) -> str:
    """SHA-256 of the canonical JSON list of entries, sorted by path."""
    ordered = sorted(entries, key=lambda entry: entry.path)
    return hashlib.sha256(canonical_json([entry.to_json() for entry in ordered])).hexdigest()


def build_manifest(
    root: Path,
    *,
    location: str = CONTENT_MANIFEST_NAME,
    progress: OnProgress | None = None,
    workers: int | None = None,
) -> ContentManifest:
    """Hash every file below *root* except the manifest's own *location* into a manifest.

    *location* is where the manifest lives (or will), relative to *root*: only that exact
    path is left out, so a file of the same name elsewhere is listed like any other.
    *progress* hears of the hashing as stage ``"hash"`` (totals, then bytes and files).

    Raises
    ------
    VerificationFailed
        When the tree holds links, special files, or files that changed while hashed:
        such a tree cannot be described truthfully, so no manifest is made.
    """
    location = check_manifest_location(location)
    scan = scan_tree(
        path_argument(root), exclude=frozenset({location}), progress=progress, workers=workers
    )
    if scan.issues:
        raise VerificationFailed(
            f"{root}: cannot build a content manifest", [str(issue) for issue in scan.issues]
        )
    return ContentManifest.from_entries(
        (
            ManifestEntry(path=path, size=size, sha256=digest)
            for path, (size, digest) in scan.files.items()
        ),
        location=location,
    )


def write_manifest(
    root: Path,
    *,
    location: str = CONTENT_MANIFEST_NAME,
    progress: OnProgress | None = None,
    workers: int | None = None,
) -> ContentManifest:
    """Build the manifest of *root* and write it at *location*, exclusively and no-follow.

    The file appears complete or not at all (a temp file renamed into place, see
    :func:`~dataset_devkit.integrity.atomic.write_atomic`), so a kill or a full disk never
    leaves half a manifest for the next run to trip on.

    The directory that will hold it must already exist (it is part of the content); it is
    pinned, and the name checked free, before the tree is hashed, so a misplaced call fails
    at once rather than after hashing everything.

    Raises
    ------
    DestinationExistsError
        Something already exists at *location*: nothing is ever replaced.
    MissingPathError, UnsafePathError
        The parent directory of *location* is missing or is not a real directory.
    """
    root, location = path_argument(root), check_manifest_location(location)
    parent_rel, _, leaf = location.rpartition("/")
    with SafeDir.open(root) as pinned, _pin(pinned, parent_rel) as parent:
        if parent.exists(leaf):
            raise DestinationExistsError(
                f"{Path(root) / location}: already exists; a manifest is never replaced"
            )
        # A run killed while writing left its partial file: it is not content, and hashing
        # it would make this manifest describe a file that is about to disappear.
        remove_stale_partials(parent, leaf)
        manifest = build_manifest(root, location=location, progress=progress, workers=workers)
        write_atomic(parent, leaf, manifest.to_bytes())
    return manifest


def _pin(root: SafeDir, rel: str) -> SafeDir:
    """*root* itself for ``""``, else a new handle on the subdirectory *rel*."""
    return SafeDir(os.dup(root.fd), root.path) if not rel else root.opendir(rel)


def read_manifest(root: Path, *, location: str | None = None) -> ContentManifest:
    """Read and strictly check the content manifest of *root*.

    *location* is where the manifest is, relative to *root*; ``None`` finds it with
    :func:`~dataset_devkit.integrity.location.locate_manifest` (the top, else the one
    subdirectory whose manifest names itself).

    Raises
    ------
    FormatError
        No manifest (:class:`ManifestNotFoundError`), several candidates
        (:class:`AmbiguousManifestError`), or a document that breaks an invariant (the
        error names the field, with expected and found values).
    """
    return read_manifest_bytes(root, location=location)[0]


def read_manifest_bytes(
    root: Path, *, location: str | None = None
) -> tuple[ContentManifest, bytes]:
    """:func:`read_manifest`, with the very bytes it decoded and checked.

    A reader that keeps a tree open can later tell that its manifest is unchanged by
    comparing bytes (or their hash) instead of decoding and checking every entry again.
    """
    root = path_argument(root)
    rel = locate_manifest(root) if location is None else check_manifest_location(location)
    path = root / rel
    try:
        with SafeDir.open(root) as pinned:
            raw = pinned.read_bytes(rel)
    except FileNotFoundError as exc:
        raise ManifestNotFoundError(
            "no content manifest (expected a file here)", path=path
        ) from exc
    return parse_manifest(raw, path, location=rel), raw


def parse_manifest(
    raw: bytes, path: Path | str, *, location: str = CONTENT_MANIFEST_NAME
) -> ContentManifest:
    """Decode manifest bytes and check every invariant, naming the offending field.

    *location* is where the bytes were found, relative to the tree: ``excluded`` must name
    exactly that path, so a manifest moved or copied elsewhere is refused rather than
    trusted to describe a tree it was not written for.
    """
    location = check_manifest_location(location)
    manifest = decode_json_record(raw, ContentManifest, path)
    if manifest.format != CONTENT_MANIFEST_FORMAT:
        raise FormatError(
            f"expected {CONTENT_MANIFEST_FORMAT!r}, found {manifest.format!r}",
            path=path,
            field="$.format",
        )
    if manifest.format_version != CONTENT_MANIFEST_VERSION:
        raise FormatError(
            f"unsupported version {manifest.format_version} "
            f"(this reader supports {CONTENT_MANIFEST_VERSION})",
            path=path,
            field="$.format_version",
        )
    if manifest.algorithm != "sha256":
        raise FormatError("expected 'sha256'", path=path, field="$.algorithm")
    if manifest.excluded != (location,):
        raise FormatError(
            f"expected exactly [{location!r}] (where this manifest is), "
            f"found {list(manifest.excluded)!r}",
            path=path,
            field="$.excluded",
        )
    previous = ""
    for index, entry in enumerate(manifest.files):
        where = f"$.files[{index}]"
        try:
            check_relative_path(entry.path)
        except UnsafePathError as exc:
            raise FormatError(str(exc), path=path, field=f"{where}.path") from exc
        if entry.path == location:
            raise FormatError("the manifest cannot list itself", path=path, field=where)
        if index and entry.path <= previous:
            raise FormatError("paths must be unique and sorted", path=path, field=f"{where}.path")
        previous = entry.path
        if entry.size < 0:
            raise FormatError("size must be >= 0", path=path, field=f"{where}.size")
        if not _SHA256_HEX.fullmatch(entry.sha256):
            raise FormatError(
                "expected 64 lowercase hex digits", path=path, field=f"{where}.sha256"
            )
    if manifest.file_count != len(manifest.files):
        raise FormatError(
            f"says {manifest.file_count}, lists {len(manifest.files)}",
            path=path,
            field="$.file_count",
        )
    total = sum(entry.size for entry in manifest.files)
    if manifest.total_bytes != total:
        raise FormatError(
            f"says {manifest.total_bytes}, entries add up to {total}",
            path=path,
            field="$.total_bytes",
        )
    expected = compute_root_sha256(manifest.files)
    if manifest.root_sha256 != expected:
        raise FormatError(
            f"says {manifest.root_sha256}, entries hash to {expected}",
            path=path,
            field="$.root_sha256",
        )
    return manifest
