"""The library face of ``unpack.py``: the same verify and restore logic, devkit errors."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import path_argument
from dataset_devkit.release import unpack
from dataset_devkit.release.errors import ReleaseVerificationError
from dataset_devkit.release.spec import (
    FILES_NAME,
    MANIFEST_NAME,
    README_NAME,
    SUMS_NAME,
    UNPACK_NAME,
    VALIDATION_NAME,
)

__all__ = ["restore_release", "verify_release"]


def _families(families: Sequence[str]) -> tuple[list[str], bool]:
    if isinstance(families, str) or not all(isinstance(f, str) for f in families):
        raise ConfigError(f"families must be a list of names, found {families!r}", key="families")
    return [f for f in families if f != "all"], "all" in families


def verify_release(release_dir: Path, families: Sequence[str]) -> unpack.Summary:
    """Verify the named families (or ``"all"``; none: every delivered one), writing nothing.

    Raises
    ------
    ReleaseVerificationError
        Listing every problem: missing, truncated, extra or altered packages, members that
        are not exactly the indexed regular files, metadata that does not agree.
    """
    path_argument(release_dir, "release_dir")
    names, everything = _families(families)
    try:
        if not names and not everything:
            release = unpack.load_release(str(release_dir))
            names = [n for n, f in release.families.items() if f["status"] == "delivered"]
        summary = unpack.verify_release(str(release_dir), names, everything)
        issues = check_shipped_files(release_dir)
    except unpack.UnpackError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc.summary}", exc.issues) from None
    except OSError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc}") from None
    if issues:
        raise ReleaseVerificationError(f"{release_dir}: release does not verify", issues)
    return summary


#: Files every release ships next to its packages, each listed in SHA256SUMS.
_METADATA = (FILES_NAME, MANIFEST_NAME, README_NAME, UNPACK_NAME, VALIDATION_NAME)


def check_shipped_files(release_dir: Path) -> list[str]:
    """Check ``unpack.py`` and ``SHA256SUMS`` against ``manifest.json``; return every issue.

    ``unpack.py`` is the program downloaders run, so a copy that differs from the one the
    manifest names must fail verification. ``SHA256SUMS`` lines of small metadata files are
    hashed; package lines are compared with the manifest (the packages were just hashed).
    """
    manifest = unpack.load_release(str(release_dir)).manifest
    script = hashlib.sha256(unpack._read_small(str(release_dir), UNPACK_NAME)).hexdigest()
    issues = []
    if script != manifest.get("unpack_py_sha256"):
        issues.append(
            f"{UNPACK_NAME}: SHA-256 {script}, {MANIFEST_NAME} says "
            f"{manifest.get('unpack_py_sha256')!r}"
        )
    packages = {p["name"]: p["sha256"] for p in manifest["packages"]}
    unlisted = set(packages) | set(_METADATA)
    text = unpack._read_small(str(release_dir), SUMS_NAME).decode("utf-8", "replace")
    for number, line in enumerate(text.split("\n"), 1):
        digest, _, name = line.partition("  ")
        unlisted.discard(name)
        if not line or (name in packages and digest == packages[name]):
            continue
        # Only the metadata files are read here: any other name (a damaged one may hold a
        # NUL byte, or point anywhere) is a line that does not match the release.
        if name not in _METADATA or not unpack._is_sha(digest):
            issues.append(f"{SUMS_NAME} line {number}: {line[:120]!r} does not match the release")
            continue
        try:
            found = hashlib.sha256(unpack._read_small(str(release_dir), name)).hexdigest()
        except unpack.UnpackError as exc:
            issues.append(f"{SUMS_NAME} line {number}: {exc}")
            continue
        if found != digest:
            issues.append(f"{SUMS_NAME} line {number}: {name} has SHA-256 {found}, listed {digest}")
    issues.extend(f"{SUMS_NAME}: no line for {name}" for name in sorted(unlisted))
    return issues


def restore_release(
    release_dir: Path, output: Path, families: Sequence[str], *, fsync: bool = True
) -> unpack.Summary:
    """Restore the named families (or ``"all"``) into ``output/<release name>``.

    With *fsync* every restored file and every directory that gained entries is fsynced.

    Raises
    ------
    ReleaseVerificationError
        On any failure; files already correct stay, nothing pre-existing is replaced.
    """
    path_argument(release_dir, "release_dir")
    path_argument(output, "output")
    names, everything = _families(families)
    try:
        return unpack.unpack_release(str(release_dir), str(output), names, everything, fsync=fsync)
    except unpack.UnpackError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc.summary}", exc.issues) from None
    except OSError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc}") from None
