"""Errors of release packaging, each a subclass of the devkit tree a caller already catches."""

from __future__ import annotations

from dataset_devkit.errors import (
    ConfigError,
    DestinationExistsError,
    DevkitError,
    UnsafePathError,
    VerificationFailed,
)

__all__ = [
    "PackWorkerError",
    "PackageLimitError",
    "ReleaseExistsError",
    "ReleaseVerificationError",
    "SnapshotMismatchError",
    "UnsafeTreeError",
]


class PackageLimitError(ConfigError):
    """A single file cannot fit in one package; files are never split across packages."""


class UnsafeTreeError(UnsafePathError):
    """The source tree holds links, special files or names that are not portable."""


class SnapshotMismatchError(VerificationFailed):
    """A family published later was cut from a different source snapshot than the release."""


class ReleaseVerificationError(VerificationFailed):
    """A release (or the restore of one) does not verify; ``issues`` lists every problem."""


class ReleaseExistsError(DestinationExistsError):
    """The release directory already exists; releases are never overwritten."""


class PackWorkerError(DevkitError):
    """A worker process writing packages stopped for a reason outside the data: it was
    killed (the out-of-memory killer, a signal) or could not start (a script that packs
    with ``workers`` > 1 must do so under ``if __name__ == "__main__":``, as each worker
    imports it)."""
