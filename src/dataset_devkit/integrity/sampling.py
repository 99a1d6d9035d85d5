"""Sampled verification: hash a deterministic subset of a tree's files (restic's idea).

A dataset too large to re-read often can be checked a part at a time: ``5%`` hashes about
one file in twenty, ``3/20`` the third of twenty disjoint subsets (run ``1/20`` .. ``20/20``
on twenty nights and every file has been hashed once). Which files is decided by a hash of
``(seed, path)`` alone, so the same spec and seed always pick the same files, on every
machine and for a local tree and its bucket alike, and another seed picks others. Every
file's presence and size is still checked against the manifest; only the hashing is
sampled, and the report says how much it covered.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity.manifest import ManifestEntry

__all__ = ["SampleCoverage", "VerifySample", "parse_sample"]

_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_GROUP = re.compile(r"(\d+)\s*/\s*(\d+)")


@dataclass(frozen=True, slots=True)
class VerifySample:
    """Which files a sampled verification hashes.

    Parameters
    ----------
    spec
        As the user wrote it (``5%``, ``1/20``).
    fraction
        For ``X%``: the share of files, in ``(0, 1]``; None for a group.
    group, groups
        For ``N/T``: the N-th of T disjoint subsets.
    seed
        Changes which files every spec picks.
    """

    spec: str
    fraction: float | None = None
    group: int = 1
    groups: int = 1
    seed: int = 0

    def _unit(self, path: str) -> float:
        digest = hashlib.sha256(f"{self.seed}\0{path}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2.0**64

    def selects(self, path: str) -> bool:
        """Whether *path* is hashed."""
        unit = self._unit(path)
        if self.fraction is not None:
            return unit < self.fraction
        return int(unit * self.groups) == self.group - 1

    def describe(self) -> str:
        """The sample as a report names it."""
        return f"{self.spec} (seed {self.seed})"


@dataclass(frozen=True, slots=True)
class SampleCoverage:
    """What a sampled verification hashed, of what the manifest lists."""

    sample: VerifySample
    files: int
    bytes: int
    of_files: int
    of_bytes: int

    @classmethod
    def of(cls, sample: VerifySample, entries: Iterable[ManifestEntry]) -> SampleCoverage:
        """The coverage of *sample* over a manifest's *entries*."""
        listed = list(entries)
        chosen = [e for e in listed if sample.selects(e.path)]
        return cls(
            sample,
            len(chosen),
            sum(e.size for e in chosen),
            len(listed),
            sum(e.size for e in listed),
        )

    def describe(self) -> str:
        """One line: what was hashed, of how much."""
        share = self.bytes / self.of_bytes if self.of_bytes else 1.0
        return (
            f"sample {self.sample.describe()}: hashed {self.files} of {self.of_files} files, "
            f"{self.bytes} of {self.of_bytes} bytes ({share:.1%}); every file's presence "
            "and size checked"
        )

    def to_json(self) -> dict[str, object]:
        """A plain mapping for ``--json`` output."""
        return {
            "spec": self.sample.spec,
            "seed": self.sample.seed,
            "files": self.files,
            "bytes": self.bytes,
            "of_files": self.of_files,
            "of_bytes": self.of_bytes,
        }


def parse_sample(spec: object, seed: object = 0) -> VerifySample:
    """``"5%"`` or ``"3/20"`` (and a seed, an int >= 0) as a :class:`VerifySample`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"sample seed must be an int >= 0, found {seed!r}", key="sample_seed")
    text = spec.strip() if isinstance(spec, str) else ""
    found = _PERCENT.fullmatch(text)
    if found is not None and 0 < float(found.group(1)) <= 100:
        return VerifySample(text, fraction=float(found.group(1)) / 100, seed=seed)
    found = _GROUP.fullmatch(text)
    if found is not None and 1 <= int(found.group(1)) <= int(found.group(2)):
        return VerifySample(text, group=int(found.group(1)), groups=int(found.group(2)), seed=seed)
    raise ConfigError(
        f"sample: expected a share such as 5% (above 0, at most 100) or a subset N/T such "
        f"as 1/20 (1 <= N <= T), found {spec!r}",
        key="sample",
    )
