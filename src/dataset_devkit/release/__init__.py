"""Release packaging: cut a tree into verified ≤ 4 GiB tar packages in families, with a
stdlib-only ``unpack.py`` that restores exactly what was published or fails loudly."""

from __future__ import annotations

from dataset_devkit.release.errors import (
    PackageLimitError,
    PackWorkerError,
    ReleaseExistsError,
    ReleaseVerificationError,
    SnapshotMismatchError,
    UnsafeTreeError,
)
from dataset_devkit.release.families import FamilyRules, parse_rule
from dataset_devkit.release.packer import PackOptions, PackResult, pack_release
from dataset_devkit.release.restore import restore_release, verify_release
from dataset_devkit.release.spec import (
    DEFAULT_PACKAGE_LIMIT,
    DEFAULT_RULES,
    FamilyRecord,
    FamilyRule,
    FileRow,
    PackageRecord,
    ReleaseManifest,
    SnapshotRecord,
    ValidationReport,
)

__all__ = [
    "DEFAULT_PACKAGE_LIMIT",
    "DEFAULT_RULES",
    "FamilyRecord",
    "FamilyRule",
    "FamilyRules",
    "FileRow",
    "PackOptions",
    "PackResult",
    "PackWorkerError",
    "PackageLimitError",
    "PackageRecord",
    "ReleaseExistsError",
    "ReleaseManifest",
    "ReleaseVerificationError",
    "SnapshotMismatchError",
    "SnapshotRecord",
    "UnsafeTreeError",
    "ValidationReport",
    "pack_release",
    "parse_rule",
    "restore_release",
    "verify_release",
]
