"""Verify a tree that ``unpack.py`` restored, family by family.

A partial restore (``base`` without ``depth``) is a supported state, not a damaged tree:
``unpack.py`` records next to ``OUTPUT/NAME`` which families it restored
(``NAME.unpack-state.json``) and a copy of the release index (``NAME.unpack-index.jsonl``,
authenticated by the state's SHA-256). Checking the tree against that index verifies every
file of the families present and names the absent ones once each, instead of listing each
of their files as missing.
"""

from __future__ import annotations

import hashlib
import json
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataset_devkit.errors import VerificationFailed
from dataset_devkit.integrity.numbers import count, format_size
from dataset_devkit.release import unpack

__all__ = ["RestoredReport", "restore_state", "verify_partial_restore", "verify_restored"]


@dataclass(frozen=True)
class RestoredReport:
    """The outcome of :func:`verify_restored`; ``issues`` is empty when ``ok``."""

    tree: Path
    name: str
    snapshot_root: str
    present: list[str]
    absent: dict[str, int]  # family -> files it holds in the release
    file_count: int
    total_bytes: int
    issues: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.issues

    def describe(self) -> str:
        """The verdict in words, as ``verify`` and ``validate`` both print it."""
        if not self.ok:
            return f"restored release {self.name} does not verify"
        absent = ", ".join(f"{fam} ({count(n, 'file')})" for fam, n in self.absent.items())
        absent = absent or "none"
        return (
            f"families {', '.join(self.present)} of release {self.name} verified "
            f"({count(self.file_count, 'file')}, {format_size(self.total_bytes)}) against its "
            f"release index, snapshot root_sha256 {self.snapshot_root}; not restored: {absent}"
        )

    def raise_for_issues(self) -> None:
        """Raise :class:`VerificationFailed` listing every issue, if there is any."""
        if self.issues:
            raise VerificationFailed(f"{self.tree}: {self.describe()}", self.issues)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (``--json``)."""
        return {
            "ok": self.ok,
            "tree": str(self.tree),
            "release": self.name,
            "snapshot_root_sha256": self.snapshot_root,
            "families_present": self.present,
            "families_absent": self.absent,
            "file_count": self.file_count,
            "total_bytes": self.total_bytes,
            "issues": self.issues,
        }


def _sibling(tree: Path, suffix: str) -> Path:
    absolute = Path(tree).absolute()
    return absolute.with_name(absolute.name + suffix)


def restore_state(tree: Path) -> dict[str, Any] | None:
    """The restore state ``unpack.py`` left next to *tree*, or None when there is none (or
    it predates family records). A state file that is not ours is not an error here: the
    tree is then verified as any other."""
    path = _sibling(tree, unpack.STATE_SUFFIX)
    try:
        if not stat.S_ISREG(path.lstat().st_mode) or path.lstat().st_size > 1 << 20:
            return None
        state = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("name") != Path(tree).absolute().name:
        return None
    keys = ("families", "release_families", "files_jsonl_sha256", "snapshot_root_sha256")
    if not all(key in state for key in keys):
        return None
    return state


def verify_partial_restore(tree: Path, *, expect_root: str | None = None) -> RestoredReport | None:
    """The verdict on a tree ``unpack.py`` restored only in part (base without depth), or
    None for any other tree (a complete restore is checked against its content manifest).

    The one place that decides: ``dataset-devkit verify`` and ``validate`` both call it, so
    a supported partial state gets the same answer from either. With *expect_root*, the
    restored release must be the snapshot with that root.

    Raises
    ------
    VerificationFailed
        The restore is of another snapshot than *expect_root*, or its recorded index does
        not match its state.
    """
    state = restore_state(tree)
    if state is None or set(state["families"]) >= set(state["release_families"]):
        return None
    if expect_root is not None and expect_root.lower() != state["snapshot_root_sha256"]:
        raise VerificationFailed(
            f"{tree}: restored from snapshot root_sha256 {state['snapshot_root_sha256']}, "
            f"not the expected {expect_root.lower()} (--expect-root)"
        )
    return verify_restored(tree, state)


def verify_restored(tree: Path, state: dict[str, Any]) -> RestoredReport:
    """Check *tree* against the release index recorded with its restore *state*.

    Every file of a restored family must be present with its size and SHA-256; files of
    absent families must not be there (a half-restored family is named, with the command
    that finishes it); nothing else may be in the tree.

    Raises
    ------
    VerificationFailed
        When the recorded index is missing or does not match the state.
    """
    index_path = _sibling(tree, unpack.INDEX_SUFFIX)
    try:
        data = index_path.read_bytes()
    except OSError as exc:
        raise VerificationFailed(
            f"{index_path}: cannot read the recorded index ({exc.strerror})"
        ) from None
    if hashlib.sha256(data).hexdigest() != state["files_jsonl_sha256"]:
        raise VerificationFailed(
            f"{index_path}: does not match {unpack.STATE_SUFFIX.lstrip('.')} (SHA-256 differs)"
        )
    try:
        rows = {r.path: r for r in unpack.parse_index(data, str(index_path))}
    except unpack.UnpackError as exc:
        raise VerificationFailed(str(exc)) from None
    present = sorted(state["families"])
    absent = {
        fam: sum(1 for r in rows.values() if r.family == fam)
        for fam in sorted(set(state["release_families"]) - set(present))
    }
    issues: list[str] = []
    seen: set[str] = set()
    strays: dict[str, int] = {}
    count = total = 0
    try:
        top = unpack.PinnedDir.open_root(str(tree), create=False)
    except unpack.UnpackError as exc:
        raise VerificationFailed(str(exc)) from None
    try:
        for rel, st, folder in unpack._existing_tree(top):
            row = rows.get(rel)
            if row is None or not stat.S_ISREG(st.st_mode):
                issues.append(f"{rel}: not part of release {state['name']}")
                continue
            if row.family not in present:
                strays[row.family] = strays.get(row.family, 0) + 1
                continue
            seen.add(rel)
            with folder.open_read(rel.rsplit("/", 1)[-1]) as fh:
                size, digest = unpack._hash_open(fh)
            if (size, digest) != (row.size, row.sha256):
                issues.append(
                    f"{rel}: {size} bytes, SHA-256 {digest}; the index has {row.size} "
                    f"bytes, {row.sha256}"
                )
            count, total = count + 1, total + size
    finally:
        top.close()
    issues.extend(
        f"{p}: missing (family {rows[p].family} was restored)"
        for p in sorted(p for p, r in rows.items() if r.family in present and p not in seen)
    )
    issues.extend(
        f"family {fam}: {n} of {absent[fam]} files present but the family was not restored "
        f"completely; finish it with: python unpack.py --family {fam} --output {tree.parent}"
        for fam, n in sorted(strays.items())
    )
    return RestoredReport(
        tree=tree,
        name=state["name"],
        snapshot_root=state["snapshot_root_sha256"],
        present=present,
        absent=absent,
        file_count=count,
        total_bytes=total,
        issues=issues,
    )
