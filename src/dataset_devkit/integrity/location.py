"""Where a tree's content manifest lives, and how a reader finds it without being told.

Most trees keep ``content_manifest.json`` at the top. A tree whose format fixes its top level
(a nuScenes dataroot keeps it in ``mz_extensions/``) puts it one directory down. The manifest
names its own location in ``excluded``, so the file is self-describing: a manifest is valid
only at the path its ``excluded`` names, and discovery accepts a nested candidate only when
it says it belongs exactly there. A stray copy elsewhere is then an ordinary file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

import msgspec

from dataset_devkit.errors import ConfigError, DevkitError, FormatError, UnsafePathError
from dataset_devkit.integrity.safefs import (
    SafeDir,
    check_relative_path,
    describe_mode,
    path_argument,
)

__all__ = [
    "CONTENT_MANIFEST_NAME",
    "AmbiguousManifestError",
    "ManifestNotFoundError",
    "check_manifest_location",
    "locate_manifest",
]

#: The manifest's file name, and its location when none is given (the top of the tree).
CONTENT_MANIFEST_NAME: Final = "content_manifest.json"


class ManifestNotFoundError(FormatError):
    """Neither the top of the tree nor one directory down holds a content manifest."""


class AmbiguousManifestError(FormatError):
    """Several subdirectories hold a content manifest that claims its own location."""


class _Claim(msgspec.Struct):
    """The one field discovery looks at; everything else is checked by the strict reader."""

    excluded: list[str] = []


def check_manifest_location(location: str) -> str:
    """Return *location* if it is a safe relative POSIX path ending in the manifest's name.

    Raises
    ------
    UnsafePathError
        An absolute path, ``..``, ``.``, an empty component, a backslash or NUL.
    ConfigError
        Not a str, or the last component is not ``content_manifest.json``: the name is what
        lets readers and tools recognise the manifest wherever it lives.
    """
    if not isinstance(location, str):
        raise ConfigError(
            f"manifest location must be a str, found {type(location).__name__}", key="location"
        )
    try:
        parts = check_relative_path(location)
    except UnsafePathError as exc:
        raise UnsafePathError(f"manifest location: {exc}") from None
    if parts[-1] != CONTENT_MANIFEST_NAME:
        raise ConfigError(
            f"a manifest location must end in {CONTENT_MANIFEST_NAME!r}, found {location!r}",
            key="location",
        )
    return "/".join(parts)


def locate_manifest(root: Path) -> str:
    """Find the content manifest of *root* and return its relative location.

    The top-level ``content_manifest.json`` wins whenever anything has that name (a link
    there is reported by the reader, never stepped around). Otherwise every real
    subdirectory is looked at, without following links: a ``<dir>/content_manifest.json``
    is the manifest only if its ``excluded`` is exactly ``["<dir>/content_manifest.json"]``.

    Raises
    ------
    ManifestNotFoundError
        No candidate; the message names every file of that name that was passed over, and why.
    AmbiguousManifestError
        More than one nested candidate; pass the location explicitly.
    """
    root = path_argument(root)
    with SafeDir.open(root) as pinned:
        if pinned.exists(CONTENT_MANIFEST_NAME):
            return CONTENT_MANIFEST_NAME
        found: list[str] = []
        passed_over: list[str] = []
        for name in pinned.listdir():
            rel = f"{name}/{CONTENT_MANIFEST_NAME}"
            verdict = _nested_verdict(pinned, name, rel)
            if verdict is None:
                found.append(rel)
            elif verdict:
                passed_over.append(f"{rel} ({verdict})")
    if len(found) > 1:
        raise AmbiguousManifestError(
            f"several content manifests claim their own location: {', '.join(found)}; "
            "name the one to use",
            path=root,
        )
    if found:
        return found[0]
    why = f"; passed over: {'; '.join(passed_over)}" if passed_over else ""
    raise ManifestNotFoundError(
        f"no content manifest (expected {CONTENT_MANIFEST_NAME} here or one directory "
        f"down, naming itself in 'excluded'){why}",
        path=root / CONTENT_MANIFEST_NAME,
    )


def _nested_verdict(pinned: SafeDir, name: str, rel: str) -> str | None:
    """``None`` when ``name/content_manifest.json`` claims *rel*; otherwise why it does not
    (``""`` when there is nothing of that name to mention)."""
    try:
        st = os.stat(name, dir_fd=pinned.fd, follow_symlinks=False)
    except FileNotFoundError:
        return ""
    if not stat.S_ISDIR(st.st_mode):
        return ""
    try:
        with pinned.opendir(name) as sub:
            try:
                leaf = os.stat(CONTENT_MANIFEST_NAME, dir_fd=sub.fd, follow_symlinks=False)
            except FileNotFoundError:
                return ""
            if not stat.S_ISREG(leaf.st_mode):
                return f"is a {describe_mode(leaf.st_mode)}"
            raw = sub.read_bytes(CONTENT_MANIFEST_NAME)
    except (OSError, DevkitError) as exc:
        return f"unreadable: {exc}"
    try:
        claim = msgspec.json.decode(raw, type=_Claim)
    except (msgspec.MsgspecError, RecursionError):  # msgspec caps nesting so
        return "not a content manifest document"
    if claim.excluded != [rel]:
        return f"its excluded is {claim.excluded!r}, not [{rel!r}]"
    return None
