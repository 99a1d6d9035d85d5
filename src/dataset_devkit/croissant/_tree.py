"""The files of a tree as its own records name them: path, size and SHA-256.

A Croissant ``FileObject`` carries the file's SHA-256. Our trees already hold it: every
published tree in its content manifest, a release directory in ``SHA256SUMS`` and
``manifest.json``. Nothing is re-hashed here except the content manifest itself (it cannot
list its own digest), read once: describing a tree of terabytes costs one small read.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import SafeDir, locate_manifest, parse_manifest

__all__ = ["FileFacts", "TreeFiles"]


@dataclass(frozen=True, slots=True)
class FileFacts:
    """One file: relative POSIX path, size in bytes, lowercase hex SHA-256."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class TreeFiles:
    """Every file of a tree by relative path, and where its digests were taken from."""

    root: Path
    files: Mapping[str, FileFacts]
    #: The record the digests come from (``content_manifest.json``, ``SHA256SUMS``).
    source: str
    #: The tree's root hash (the content manifest's ``root_sha256``), if it has one.
    root_sha256: str | None = None

    @classmethod
    def from_content_manifest(cls, root: Path) -> TreeFiles:
        """The files of a published tree, from its content manifest (found as verify does)."""
        location = locate_manifest(root)
        with SafeDir.open(root) as pinned:
            raw = pinned.read_bytes(location)
        manifest = parse_manifest(raw, root / location, location=location)
        facts = {e.path: FileFacts(e.path, e.size, e.sha256) for e in manifest.files}
        facts[location] = FileFacts(location, len(raw), hashlib.sha256(raw).hexdigest())
        return cls(root, dict(sorted(facts.items())), location, manifest.root_sha256)

    @classmethod
    def from_facts(cls, root: Path, facts: Iterable[FileFacts], source: str) -> TreeFiles:
        """A tree whose digests come from another record (a release's ``SHA256SUMS``)."""
        return cls(root, {f.path: f for f in sorted(facts, key=lambda f: f.path)}, source)

    def __contains__(self, path: object) -> bool:
        return path in self.files

    def get(self, path: str) -> FileFacts:
        """The facts of *path*; a :class:`FormatError` naming the record if it is not listed."""
        facts = self.files.get(path)
        if facts is None:
            raise FormatError(
                f"{path!r} is not listed in {self.source}: the tree is not the one its "
                "records describe (run `dataset-devkit verify`)",
                path=self.root / self.source,
            )
        return facts

    def matching(self, pattern: str) -> list[str]:
        """Listed paths matching the Croissant glob *pattern* (``*`` also spans ``/``,
        as mlcroissant matches ``includes``)."""
        return [path for path in self.files if fnmatch.fnmatchcase(path, pattern)]
