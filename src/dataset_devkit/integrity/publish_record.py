"""A record beside the final name of which staging directory became it, so a re-run of the
same publication can say "already published" and exit 0.

``publish_tree`` ends by renaming the staging directory to the final name. A run killed
after that rename (even after its very last step, before the process exited) leaves no
staging directory, only the published tree; its re-run (the same command) would otherwise
stop at "already exists". So, just before the rename, the publisher writes
``.FINAL.published-from.json`` beside the final name (atomically, durable with the rename):
the staging directory's name, its identity (device and inode, which the rename keeps) and
the root hash being published. A re-run that finds the final name taken and its staging
directory gone reads the record: when it names that staging directory, the final name is
that very directory and the tree verifies against its manifest with that root hash, the
tree is already published and the re-run reports it. Anything else at the final name stays
a refusal.

The record of a user's own staging directory (``dataset-devkit publish STAGING --out
FINAL``) is kept: a kill can land after any step, so no step could remove it without
opening a window in which the re-run fails, and with it every later run of the same command
gives the same answer. A private staging directory (a random name no re-run repeats) has
its record removed once the published tree was checked. A publication of another tree to
the same name (after the user removed the first) replaces it.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from dataset_devkit.errors import DestinationExistsError
from dataset_devkit.integrity.atomic import remove_stale_partials, write_atomic
from dataset_devkit.integrity.canonical import canonical_json
from dataset_devkit.integrity.manifest import ContentManifest, read_manifest
from dataset_devkit.integrity.safefs import SafeDir, open_dir_nofollow
from dataset_devkit.integrity.verify import verify_tree

__all__ = ["check_republished", "record_name", "remove_record", "write_record"]

_LIMIT = 1 << 16


def record_name(final: Path) -> str:
    """The record's name in the final name's parent directory."""
    return f".{final.name}.published-from.json"


def write_record(
    parent_fd: int, final: Path, staging: Path, identity: os.stat_result, root_sha256: str
) -> None:
    """Write the record for publishing *staging* (pinned as *identity*) to *final*.

    Called under the parent's publication lock: a record of an earlier attempt (or tree) is
    replaced. Made durable by the ``fsync`` of the parent that follows the rename.
    """
    name = record_name(final)
    body = {
        "staging": staging.name,
        "device": identity.st_dev,
        "inode": identity.st_ino,
        "root_sha256": root_sha256,
    }
    with SafeDir(os.dup(parent_fd), final.parent) as parent:
        remove_stale_partials(parent, name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent_fd)
        write_atomic(parent, name, canonical_json(body) + b"\n", 0o600)


def remove_record(parent_fd: int, final: Path) -> None:
    """Remove the record (and partial copies of it left by a killed writer)."""
    name = record_name(final)
    with SafeDir(os.dup(parent_fd), final.parent) as parent:
        remove_stale_partials(parent, name)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=parent_fd)


def _read_record(parent_fd: int, final: Path) -> dict[str, Any] | None:
    """The record beside *final*, or None when there is none or it is not one of ours."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(record_name(final), flags, dir_fd=parent_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _LIMIT)
    finally:
        os.close(fd)
    try:
        record = json.loads(data)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def check_republished(
    parent_fd: int, staging: Path, final: Path, location: str
) -> tuple[str, ContentManifest] | None:
    """If *final* is the tree an earlier run of "publish *staging* to *final*" published,
    return its root hash and manifest (the record stays, for any later run); None if the
    record is absent or names another staging directory.

    Raises
    ------
    DestinationExistsError
        The record names *staging*, but the final name holds another directory, or a tree
        that does not verify or has another root hash.
    """
    record = _read_record(parent_fd, final)
    if record is None or record.get("staging") != staging.name:
        return None
    expected = str(record.get("root_sha256"))
    try:
        fd = open_dir_nofollow(final.name, dir_fd=parent_fd, shown=final)
    except OSError as exc:  # UnsafePathError, MissingPathError too
        raise DestinationExistsError(f"{final}: already exists ({exc})") from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if (st.st_dev, st.st_ino) != (record.get("device"), record.get("inode")):
        raise DestinationExistsError(
            f"{final}: already exists and is not the tree {staging} was; a published tree "
            "is never replaced"
        )
    report = verify_tree(final, location=location)
    if not report.ok or report.root_sha256 != expected:
        raise DestinationExistsError(
            f"{final}: already exists but does not verify as the tree {staging} published "
            f"(root_sha256 {expected}); check it with `dataset-devkit verify {final}`"
        )
    manifest = read_manifest(final, location=location)
    return expected, manifest
