"""Write a release's metadata: files.jsonl, unpack.py, manifest.json, validation.json,
README.md and SHA256SUMS, in that order (the checksums last, over everything else)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec

from dataset_devkit.integrity import pretty_json
from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.release import unpack
from dataset_devkit.release.options import PackOptions
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
    PackageRecord,
    ReleaseManifest,
    SnapshotRecord,
    ValidationReport,
)
from dataset_devkit.release.validate import validate_release

__all__ = [
    "FamilyTotals",
    "index_group_order",
    "index_line",
    "sums_text",
    "unpack_py_bytes",
    "write_files_jsonl",
    "write_metadata",
]

#: ``json``'s own encoder of a string as ``ensure_ascii=False`` dumps write it.
_json_string: Final[Callable[[str], str]] = json.encoder.encode_basestring
_INDEX_FLUSH: Final = 1 << 20


def unpack_py_bytes() -> bytes:
    """The exact bytes of the stdlib-only ``unpack.py`` shipped with every release."""
    return Path(unpack.__file__).read_bytes()


def index_line(path: str, size: int, sha256: str, family: str, package: str | None) -> bytes:
    """One ``files.jsonl`` row, byte for byte :func:`unpack.canonical_json` of its fields.

    Formatted directly (keys in sorted order, strings through :mod:`json`'s own string
    encoder, ints as ``json`` writes them) because building a dict and sorting its keys for
    every one of 50,000 rows was a measurable share of packing a small-file tree;
    ``tests/release/test_metadata_index.py`` checks the identity on random rows.
    """
    return (
        f'{{"family":{_json_string(family)},'
        f'"package":{"null" if package is None else _json_string(package)},'
        f'"path":{_json_string(path)},"sha256":{_json_string(sha256)},"size":{int(size)}}}\n'
    ).encode()


def index_group_order(family: str, package: str | None) -> bytes:
    """Where the rows of one package (or of a pending family) fall in ``files.jsonl``.

    The index is sorted by its canonical lines, which start with the family and the
    package: every row of a group shares this prefix, no prefix extends another, so ordering
    the groups by it and each group's lines by themselves yields the fully sorted index.
    """
    return index_line("", 0, "", family, package).partition(b',"path":')[0]


@dataclass(slots=True)
class FamilyTotals:
    """A family's file count and bytes, summed while its rows are written."""

    files: int = 0
    bytes: int = 0


def write_files_jsonl(
    staging: Path, groups: Iterable[tuple[str, str | None, Iterable[tuple[str, int, str]]]]
) -> tuple[str, dict[str, FamilyTotals]]:
    """Stream ``files.jsonl`` to disk: one canonical JSON object per file, sorted.

    *groups* are ``(family, package, rows)`` in :func:`index_group_order`, each *rows* being
    ``(path, size, sha256)``; only one group's lines are held at a time, never the whole
    index. Returns the file's SHA-256 and every family's totals.
    """
    path = staging / FILES_NAME
    hasher = hashlib.sha256()
    totals: dict[str, FamilyTotals] = {}
    pending = bytearray()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with naming(path):  # a full disk names the file, not just the errno
            for family, package, rows in groups:
                total = totals.setdefault(family, FamilyTotals())
                lines = []
                for rel, size, digest in rows:
                    lines.append(index_line(rel, size, digest, family, package))
                    total.files += 1
                    total.bytes += size
                lines.sort()
                for line in lines:
                    pending += line
                if len(pending) >= _INDEX_FLUSH:
                    hasher.update(pending)
                    _write_all(fd, pending)
                    pending.clear()
            hasher.update(pending)
            _write_all(fd, pending)
            os.fsync(fd)
    finally:
        os.close(fd)
    return hasher.hexdigest(), totals


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
    files_jsonl_sha256: str,
    family_totals: Mapping[str, FamilyTotals],
    packages: list[PackageRecord],
    package_counts: Mapping[str, int],
    delivered: set[str],
    new_families: set[str],
    options: PackOptions,
    previous: unpack.Release | None,
    packages_checked: Callable[[], None] = lambda: None,
) -> tuple[ReleaseManifest, ValidationReport]:
    """Write the metadata that follows ``files.jsonl`` (already in *staging*, see
    :func:`write_files_jsonl`), validating the release before the README (*packages_checked*:
    see :func:`validate_release`)."""
    digests: dict[str, str] = {FILES_NAME: files_jsonl_sha256}
    digests[UNPACK_NAME] = _write(staging, UNPACK_NAME, unpack_py_bytes())
    families = [
        FamilyRecord(
            name=family,
            status="delivered" if family in delivered else "pending",
            file_count=totals.files,
            total_bytes=totals.bytes,
            package_count=package_counts[family] if family in delivered else 0,
        )
        for family, totals in sorted(family_totals.items())
    ]
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
        staging,
        out,
        manifest,
        new_families=new_families,
        options=options,
        previous=previous,
        packages_checked=packages_checked,
    )
    digests[VALIDATION_NAME] = _write(
        staging, VALIDATION_NAME, pretty_json(msgspec.to_builtins(validation))
    )
    readme = render_readme(manifest, validation, options.readme_lang)
    digests[README_NAME] = _write(staging, README_NAME, readme.encode("utf-8"))
    digests.update({p.name: p.sha256 for p in packages})
    _write(staging, SUMS_NAME, sums_text(digests).encode("utf-8"))
    return manifest, validation
