"""The release format: names, limits and the records of ``manifest.json``, ``files.jsonl``
and ``validation.json``.

The on-disk layout is documented in ``docs/release.md``; ``unpack.py`` reads these files with
the standard library alone, so every field here is plain JSON (sorted keys, no floats).
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from dataset_devkit.release import unpack

__all__ = [
    "DEFAULT_FAMILY",
    "DEFAULT_PACKAGE_LIMIT",
    "DEFAULT_RULES",
    "FILES_NAME",
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST_NAME",
    "README_NAME",
    "SUMS_NAME",
    "UNPACK_NAME",
    "VALIDATION_FORMAT",
    "VALIDATION_NAME",
    "FamilyRecord",
    "FamilyRule",
    "FileRow",
    "PackageCheck",
    "PackageRecord",
    "ReleaseManifest",
    "RestoreTest",
    "SnapshotRecord",
    "ValidationReport",
]

FORMAT: Final = unpack.FORMAT
FORMAT_VERSION: Final = unpack.FORMAT_VERSION
VALIDATION_FORMAT: Final = "dataset-devkit-release-validation"
MANIFEST_NAME: Final = unpack.MANIFEST_NAME
FILES_NAME: Final = unpack.FILES_NAME
SUMS_NAME: Final = "SHA256SUMS"
VALIDATION_NAME: Final = "validation.json"
README_NAME: Final = "README.md"
UNPACK_NAME: Final = "unpack.py"
#: 4 GiB - 1: the largest file FAT32 can hold, so every package fits on any medium.
DEFAULT_PACKAGE_LIMIT: Final = 4_294_967_295
DEFAULT_FAMILY: Final = "base"

_STRICT = {"frozen": True, "kw_only": True, "forbid_unknown_fields": True}


class FamilyRule(msgspec.Struct, **_STRICT):
    """Files whose relative path matches *pattern* belong to *family* (first match wins).

    Patterns follow gitignore rules (matched with ``pathspec``): ``*``/``?``/``[...]``
    within one component, ``**`` for any number of components; a pattern with a ``/``
    before its end is anchored at the top of the tree, so ``**/depth-*/**`` takes every
    file below any directory named ``depth-...`` at any depth.
    """

    pattern: str
    family: str


DEFAULT_RULES: Final = (FamilyRule(pattern="**/depth-*/**", family="depth"),)


class SnapshotRecord(msgspec.Struct, **_STRICT):
    """The identity of the source tree: its content-manifest root hash and totals."""

    root_sha256: str
    source: Literal["content_manifest", "computed"]
    excluded: tuple[str, ...]
    file_count: int
    total_bytes: int


class FamilyRecord(msgspec.Struct, **_STRICT):
    """One family: ``delivered`` (its packages are listed) or ``pending`` (declared only)."""

    name: str
    status: Literal["delivered", "pending"]
    file_count: int
    total_bytes: int
    package_count: int


class PackageRecord(msgspec.Struct, **_STRICT):
    """One delivered package: ``FAMILY/FAMILY-0001.tar``, its bytes, SHA-256 and members."""

    name: str
    family: str
    size: int
    sha256: str
    member_count: int


class ReleaseManifest(msgspec.Struct, **_STRICT):
    """``manifest.json``: the authoritative list of what a release delivers."""

    format: str
    format_version: int
    name: str
    snapshot: SnapshotRecord
    package_limit_bytes: int
    default_family: str
    family_rules: tuple[FamilyRule, ...]
    families: tuple[FamilyRecord, ...]
    packages: tuple[PackageRecord, ...]
    files_jsonl_sha256: str
    unpack_py_sha256: str


class FileRow(msgspec.Struct, **_STRICT):
    """One line of ``files.jsonl``; *package* is ``None`` for a pending family's file."""

    path: str
    size: int
    sha256: str
    family: str
    package: str | None


class PackageCheck(msgspec.Struct, **_STRICT):
    """The read-back of one package: parsed strictly, every member hashed against its row."""

    name: str
    members_checked: int
    read_back: Literal["passed", "not run"]
    checked_by: Literal["this release", "an earlier release of the same snapshot"]


class RestoreTest(msgspec.Struct, **_STRICT):
    """A real restore with the shipped ``unpack.py`` into a scratch directory, then a re-run."""

    mode: Literal["full", "sample", "not run"]
    packages: tuple[str, ...]
    files_restored: int
    rerun_files_skipped: int
    restored_root_sha256: str | None


class ValidationReport(msgspec.Struct, **_STRICT):
    """``validation.json``: what was verified when packing, and what was not."""

    format: str
    format_version: int
    snapshot_root_sha256: str
    source_check: str
    packages: tuple[PackageCheck, ...]
    restore_test: RestoreTest
    not_verified: tuple[str, ...]
