"""Write a release's metadata: files.jsonl, unpack.py, manifest.json, validation.json,
README.md and SHA256SUMS, in that order (the checksums last, over everything else)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import msgspec

from dataset_devkit.integrity import pretty_json
from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.release import unpack
from dataset_devkit.release.options import PackOptions
from dataset_devkit.release.planner import PlannedPackage
from dataset_devkit.release.readme import render_readme
from dataset_devkit.release.spec import (
    FILES_NAME,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST_NAME,
    README_NAME,
    SUMS_NAME,
    UNPACK_NAME,
    VALIDATION_NAME,
    FamilyRecord,
    FileRow,
    PackageRecord,
    ReleaseManifest,
    SnapshotRecord,
    ValidationReport,
)
from dataset_devkit.release.validate import validate_release

__all__ = ["files_jsonl_bytes", "sums_text", "unpack_py_bytes", "write_metadata"]


def unpack_py_bytes() -> bytes:
    """The exact bytes of the stdlib-only ``unpack.py`` shipped with every release."""
    return Path(unpack.__file__).read_bytes()


def files_jsonl_bytes(rows: Sequence[FileRow]) -> bytes:
    """One canonical JSON object per file, sorted by path."""
    lines = [unpack.canonical_json(msgspec.to_builtins(row)) for row in rows]
    return b"".join(line + b"\n" for line in sorted(lines))


def sums_text(entries: dict[str, str]) -> str:
    """``sha256sum -c`` compatible lines (text mode, two spaces), sorted by path."""
    return "".join(f"{digest}  {path}\n" for path, digest in sorted(entries.items()))


def _write(staging: Path, name: str, data: bytes) -> str:
    fd = os.open(staging / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with naming(staging / name):  # a full disk names the file, not just the errno
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
    finally:
        os.close(fd)
    return hashlib.sha256(data).hexdigest()


def write_metadata(
    staging: Path,
    out: Path,
    *,
    name: str,
    snapshot: SnapshotRecord,
    rows: list[FileRow],
    packages: list[PackageRecord],
    plans: dict[str, list[PlannedPackage]],
    delivered: set[str],
    new_families: set[str],
    options: PackOptions,
    previous: unpack.Release | None,
) -> tuple[ReleaseManifest, ValidationReport]:
    """Write every metadata file into *staging*, validating the release before the README."""
    digests: dict[str, str] = {}
    files_data = files_jsonl_bytes(rows)
    digests[FILES_NAME] = _write(staging, FILES_NAME, files_data)
    digests[UNPACK_NAME] = _write(staging, UNPACK_NAME, unpack_py_bytes())
    families = []
    for family in sorted({r.family for r in rows}):
        members = [r for r in rows if r.family == family]
        families.append(
            FamilyRecord(
                name=family,
                status="delivered" if family in delivered else "pending",
                file_count=len(members),
                total_bytes=sum(r.size for r in members),
                package_count=len(plans[family]) if family in delivered else 0,
            )
        )
    manifest = ReleaseManifest(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        name=name,
        snapshot=snapshot,
        package_limit_bytes=options.package_limit,
        default_family=options.rules.default,
        family_rules=tuple(options.rules.rules),
        families=tuple(families),
        packages=tuple(packages),
        files_jsonl_sha256=digests[FILES_NAME],
        unpack_py_sha256=digests[UNPACK_NAME],
    )
    digests[MANIFEST_NAME] = _write(
        staging, MANIFEST_NAME, pretty_json(msgspec.to_builtins(manifest))
    )
    validation = validate_release(
        staging, out, manifest, new_families=new_families, options=options, previous=previous
    )
    digests[VALIDATION_NAME] = _write(
        staging, VALIDATION_NAME, pretty_json(msgspec.to_builtins(validation))
    )
    readme = render_readme(manifest, validation, options.readme_lang)
    digests[README_NAME] = _write(staging, README_NAME, readme.encode("utf-8"))
    digests.update({p.name: p.sha256 for p in packages})
    _write(staging, SUMS_NAME, sums_text(digests).encode("utf-8"))
    return manifest, validation
