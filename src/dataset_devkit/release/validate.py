"""Verify a freshly packed release the way a user will: read back, restore, restore again."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    build_manifest,
    new_staging_dir,
    remove_staging,
)
from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.integrity.staging import release_staging_lock
from dataset_devkit.release import unpack
from dataset_devkit.release.errors import ReleaseVerificationError
from dataset_devkit.release.options import PackOptions
from dataset_devkit.release.spec import (
    FORMAT_VERSION,
    VALIDATION_FORMAT,
    PackageCheck,
    PackageRecord,
    ReleaseManifest,
    RestoreTest,
    ValidationReport,
)

__all__ = [
    "collect_read_backs",
    "fsync_package",
    "raise_read_back_problems",
    "read_back_package",
    "restore_test_name",
    "validate_release",
]


def read_back_package(
    staging: Path, name: str, record: PackageRecord, rows: dict[str, unpack.FileRow]
) -> tuple[PackageRecord, list[str]]:
    """Re-read one new package with ``unpack.py``'s strict parser.

    Every member must be exactly one of *rows* and hash to its SHA-256; the package's own
    SHA-256 is taken from this same read (the writer does not hash the bytes twice).
    Returns the completed record and every problem found.
    """
    path = staging / record.name
    try:
        digest, bad = unpack.read_back_package(str(path), record.name, name, rows)
    except unpack.UnpackError as exc:
        return record, [str(exc)]
    return msgspec.structs.replace(record, sha256=digest), bad


def fsync_package(path: Path) -> None:
    """Flush one finished package to disk (the writer leaves this to a pool thread, where
    the disk flush overlaps with the read-back and with writing the next package)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        with naming(path):
            os.fsync(fd)
    finally:
        os.close(fd)


def collect_read_backs(
    results: Iterable[tuple[PackageRecord, list[str]]],
) -> list[PackageRecord]:
    """Gather read-back results in order, raising once with every problem.

    Raises
    ------
    ReleaseVerificationError
        Listing every package or member that did not read back.
    """
    records: list[PackageRecord] = []
    issues: list[str] = []
    for record, bad in results:
        records.append(record)
        issues.extend(bad)
    raise_read_back_problems(issues)
    return records


def raise_read_back_problems(problems: list[str]) -> None:
    """Raise :class:`ReleaseVerificationError` listing *problems*, the read-back's findings,
    if there are any."""
    if problems:
        raise ReleaseVerificationError("read-back of the new packages failed", problems)


def restore_test_name(out: Path) -> Path:
    """The name whose sibling staging directories hold the restore test's scratch space.

    A packer killed during its restore test leaves ``.OUT.restore-test.staging-*``; the next
    pack of *out* removes it (it is locked while its packer lives).
    """
    return out.with_name(out.name + ".restore-test")


def _remove_after_failure(scratch: Path) -> None:
    """Remove the scratch space of a failed restore test without hiding why it failed.

    A restore that ran out of descriptors or space can make the removal fail the same way;
    the failure of the restore is what the user must see, and the next pack of the same
    release removes the leftover (its lock died with this process).
    """
    try:
        remove_staging(scratch)
    except OSError:
        release_staging_lock(scratch)  # abandoned: the next pack may take and remove it


def _restore_test(
    release: unpack.Release,
    out: Path,
    manifest: ReleaseManifest,
    families: list[str],
    mode: str,
) -> RestoreTest:
    new = [p for p in manifest.packages if p.family in families]
    only = None
    if mode == "sample":
        only = sorted({min(p.name for p in new if p.family == f) for f in families})
    scratch = new_staging_dir(restore_test_name(out))
    try:
        # Scratch space that is deleted right after: durability (fsync) is not the point.
        # Both runs take the release unpack.load_release just read from these files (in
        # validate_release): loading the same bytes twice more would parse the whole index
        # twice more, on a 50,000-file release a second of the restore test.
        first = unpack.unpack_release(
            release, str(scratch), families, only_packages=only, fsync=False
        )
        again = unpack.unpack_release(
            release, str(scratch), families, only_packages=only, fsync=False
        )
        if again.written != 0 or again.skipped != first.written:
            raise ReleaseVerificationError(
                f"restore re-run wrote {again.written} files and skipped {again.skipped}, "
                f"expected 0 and {first.written}"
            )
        restored_root = None
        if mode == "full" and {f.name for f in manifest.families} == set(families):
            # The snapshot root leaves out exactly the source's manifest, wherever it lives.
            excluded = manifest.snapshot.excluded
            location = excluded[0] if excluded else CONTENT_MANIFEST_NAME
            restored_root = build_manifest(scratch / manifest.name, location=location).root_sha256
            if restored_root != manifest.snapshot.root_sha256:
                raise ReleaseVerificationError(
                    f"the restored tree hashes to {restored_root}, "
                    f"the snapshot is {manifest.snapshot.root_sha256}"
                )
    except unpack.UnpackError as exc:
        _remove_after_failure(scratch)
        raise ReleaseVerificationError(
            "restore test of the new release failed", [str(exc)]
        ) from None
    except BaseException:
        _remove_after_failure(scratch)
        raise
    remove_staging(scratch)
    return RestoreTest(
        mode="full" if only is None else "sample",
        packages=tuple(only if only is not None else [p.name for p in new]),
        files_restored=first.written,
        rerun_files_skipped=again.skipped,
        restored_root_sha256=restored_root,
    )


def validate_release(
    staging: Path,
    out: Path,
    manifest: ReleaseManifest,
    *,
    new_families: set[str],
    options: PackOptions,
    previous: unpack.Release | None,
    packages_checked: Callable[[], None] = lambda: None,
) -> ValidationReport:
    """Run the configured checks on the new packages and say exactly what they covered.

    *packages_checked* waits for the new packages' flushes and read-backs still running
    (on worker processes), raising if one failed; it is called once the metadata is loaded,
    so the two overlap, and before anything reads the packages.
    """
    families = sorted(new_families)
    # With a read-back, every new package is read strictly from disk once it is written
    # (each member's SHA-256 against these rows; the package SHA-256 recorded from that read,
    # or on worker processes checked against the writer's), so the bytes are not read a
    # second time here: only packages_checked() waits for the last of those reads. In every
    # case the metadata
    # just written must authenticate the way unpack.py will check it: files.jsonl against
    # manifest.json, rows against the root, member counts, package presence and sizes.
    release = None
    try:
        release = unpack.load_release(str(staging))
        problems = unpack.stat_packages(release, release.packages_of(families))
    except unpack.UnpackError as exc:
        problems = [str(exc)]
    packages_checked()  # a package that did not read back is the failure to report
    if problems or release is None:
        raise ReleaseVerificationError("the new release's metadata does not verify", problems)
    checks = [
        PackageCheck(
            name=p.name,
            members_checked=p.member_count if options.read_back else 0,
            read_back="passed" if options.read_back else "not run",
            checked_by="this release",
        )
        for p in manifest.packages
        if p.family in new_families
    ]
    if previous is not None:
        checks += _previous_checks(previous, new_families)
    not_verified = [
        "restore with native tar (GNU tar, bsdtar, Windows tar) was not run by the packer",
        "restore on Windows and macOS filesystems was not run by the packer",
        f"unpack.py was run only with Python {sys.version_info[0]}.{sys.version_info[1]}",
    ]
    if options.restore_test == "none":
        restore = RestoreTest(
            mode="not run",
            packages=(),
            files_restored=0,
            rerun_files_skipped=0,
            restored_root_sha256=None,
        )
        not_verified.append("no restore test was run")
    else:
        restore = _restore_test(release, out, manifest, families, options.restore_test)
        if restore.mode == "sample":
            not_verified.append(
                "only the listed sample packages were restored; others were read back"
            )
        if restore.restored_root_sha256 is None:
            not_verified.append("the root hash of a complete restored tree was not recomputed")
    if not options.read_back:
        not_verified.append("the packages were not read back after writing")
    not_verified += [
        f"family {f.name} is pending: its files are hashed in files.jsonl, no package exists"
        for f in manifest.families
        if f.status == "pending"
    ]
    if previous is not None:
        not_verified.append(
            "packages of families delivered earlier were checked by that earlier release, "
            "not re-read now"
        )
    return ValidationReport(
        format=VALIDATION_FORMAT,
        format_version=FORMAT_VERSION,
        snapshot_root_sha256=manifest.snapshot.root_sha256,
        source_check=(
            f"{manifest.snapshot.excluded[0]} verified: every file hashed once while packed"
            if manifest.snapshot.source == "content_manifest" and manifest.snapshot.excluded
            else "no content_manifest.json: hashes computed once while packing"
        ),
        packages=tuple(sorted(checks, key=lambda c: c.name)),
        restore_test=restore,
        not_verified=tuple(not_verified),
    )


def _previous_checks(previous: unpack.Release, new_families: set[str]) -> list[PackageCheck]:
    path = Path(previous.directory) / "validation.json"
    try:
        old = json.loads(path.read_text("utf-8"))
        by_name = {c["name"]: c for c in old["packages"]}
    except (OSError, ValueError, KeyError, TypeError):
        by_name = {}
    checks = []
    for pkg in previous.packages_of(set(previous.families) - new_families):
        record = by_name.get(pkg["name"], {})
        passed = record.get("read_back") == "passed"
        checks.append(
            PackageCheck(
                name=pkg["name"],
                members_checked=int(record.get("members_checked", 0)) if passed else 0,
                read_back="passed" if passed else "not run",
                checked_by="an earlier release of the same snapshot",
            )
        )
    return checks
