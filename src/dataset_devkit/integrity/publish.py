"""Atomic, read-only publication of a staged tree under its final name.

The steps follow the seed's publication contract: the tree is built in a sibling staging
directory; the caller's validator runs; ``content_manifest.json`` is written last (at the
top, or wherever the caller's format puts it, such as ``mz_extensions/``); every
file becomes 0400 and every directory 0500 (or group- or world-readable, on request), all
made durable; the tree is re-verified (every byte hashed again, or, for a writer that hashed
each file as it wrote it, every file's identity compared with the one it had then: see
:func:`publish_tree`'s *written*); an
advisory lock on the parent serializes cooperating publishers; a no-replace rename moves it
under the final name; and an identity check right after the rename moves the same tree back
out if anything changed. An existing final name is never replaced.

This guards against accidents and cooperating concurrent writers, not against a hostile
process of the same user (it can undo chmod or ignore the lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.errors import (
    DestinationExistsError,
    MissingPathError,
    PublicationError,
    UnsafePathError,
)
from dataset_devkit.integrity.durable import sync_filesystem
from dataset_devkit.integrity.location import CONTENT_MANIFEST_NAME, check_manifest_location
from dataset_devkit.integrity.manifest import ContentManifest, read_manifest, write_manifest
from dataset_devkit.integrity.modes import ReadableBy, check_readable_by, sealed_modes
from dataset_devkit.integrity.oserrors import naming
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.integrity.publish_record import check_republished, remove_record, write_record
from dataset_devkit.integrity.rename import rename_noreplace
from dataset_devkit.integrity.safefs import SafeDir, open_dir_nofollow, path_argument
from dataset_devkit.integrity.staging import (
    new_staging_dir,
    pin_parent,
    release_staging_lock,
    remove_staging,
    remove_stale_staging,
)
from dataset_devkit.integrity.stamps import FileStamp, file_stamp
from dataset_devkit.integrity.verify import verify_tree

__all__ = [
    "PUBLISH_PHASES",
    "FileStamp",
    "PublishResult",
    "file_stamp",
    "new_staging_dir",
    "publish_tree",
    "remove_staging",
    "remove_stale_staging",
    "staged_publication",
]

#: Phases reported to ``on_phase``, in order; a test can stop the process at each.
PUBLISH_PHASES = (
    "checked",
    "validated",
    "manifest-written",
    "sealed",
    "rechecked",
    "locked",
    "renamed",
    "verified",
)

Validator = Callable[[Path], None]
PhaseHook = Callable[[str], None]
_Snapshot = dict[str, tuple[int, int, int, int, int]]


@dataclass(frozen=True, slots=True)
class PublishResult:
    """A published tree: its final path, root hash and manifest (and where it lives)."""

    final: Path
    root_sha256: str
    manifest: ContentManifest
    #: True when an earlier run of the same publication had already renamed it into place
    #: (killed after its rename): this run only checked it.
    already_published: bool = False

    @property
    def manifest_location(self) -> str:
        """The manifest's path relative to ``final``."""
        return self.manifest.location


def _seal(dir_fd: int, shown: Path, readable_by: ReadableBy, snapshot: _Snapshot) -> None:
    """Make the tree read-only (modes of *readable_by*), durable, and record identities.

    One ``syncfs`` after the chmod pass makes everything durable at once where Linux offers
    it; elsewhere each file and directory is fsynced as it is sealed.
    """
    per_file_sync = not sync_filesystem(dir_fd, shown)  # flush what is dirty already
    _seal_dir(dir_fd, shown, "", sealed_modes(readable_by), per_file_sync, snapshot)
    if not per_file_sync:
        sync_filesystem(dir_fd, shown)


def _seal_dir(
    dir_fd: int,
    shown: Path,
    prefix: str,
    modes: tuple[int, int],
    per_file_sync: bool,
    snapshot: _Snapshot,
) -> None:
    """Seal one directory bottom-up; one descriptor per level of the walk."""
    with os.scandir(dir_fd) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        rel = prefix + entry.name
        if entry.is_dir(follow_symlinks=False):
            sub = open_dir_nofollow(entry.name, dir_fd=dir_fd, shown=shown / rel)
            try:
                _seal_dir(sub, shown, rel + "/", modes, per_file_sync, snapshot)
            finally:
                os.close(sub)
        else:
            fd = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                    raise UnsafePathError("not a single-link regular file", path=rel)
                with naming(shown / rel):
                    os.fchmod(fd, modes[0])
                    if per_file_sync:
                        os.fsync(fd)
                st = os.fstat(fd)
            finally:
                os.close(fd)
            snapshot[rel] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
    with naming(shown / prefix):
        if per_file_sync:
            os.fsync(dir_fd)
        os.fchmod(dir_fd, modes[1])
    st = os.fstat(dir_fd)
    snapshot[prefix or "."] = (st.st_dev, st.st_ino, 0, 0, st.st_mode)


def _take_snapshot(dir_fd: int, prefix: str, snapshot: _Snapshot) -> None:
    """Record the identity of every entry, without following links."""
    with os.scandir(dir_fd) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        rel = prefix + entry.name
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            sub = open_dir_nofollow(entry.name, dir_fd=dir_fd)
            try:
                _take_snapshot(sub, rel + "/", snapshot)
            finally:
                os.close(sub)
        else:
            snapshot[rel] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
    st = os.fstat(dir_fd)
    snapshot[prefix or "."] = (st.st_dev, st.st_ino, 0, 0, st.st_mode)


def publish_tree(
    staging: Path,
    final: Path,
    *,
    validate: Validator | None = None,
    manifest_location: str = CONTENT_MANIFEST_NAME,
    progress: OnProgress | None = None,
    on_phase: PhaseHook | None = None,
    readable_by: ReadableBy = "owner",
    user_staging: bool = True,
    written: Mapping[str, FileStamp] | None = None,
) -> PublishResult:
    """Publish the staged tree *staging* under *final*, atomically and read-only.

    Parameters
    ----------
    staging
        A real directory beside *final* (same parent), holding the complete tree. If it
        already holds a manifest at *manifest_location*, that manifest must verify;
        otherwise it is written there after *validate* passes.
    final
        The publication name; it must not exist, and its parent must be a real directory.
    validate
        The caller's check of the staged content; raising stops publication.
    manifest_location
        Where the manifest is written, relative to the tree (its directory must be part of
        the staged content); the recheck and the post-rename check use the same path.
    progress
        Hears of the two hashing passes: stage ``"hash"`` (the manifest, when it is
        written here) and stage ``"verify"`` (the recheck of the sealed tree).
    on_phase
        Called with each name of :data:`PUBLISH_PHASES` as it completes (observability,
        and the hook tests use to interrupt publication at every phase).
    readable_by
        ``"owner"`` (files 0400, directories 0500), ``"group"`` (0440/0550) or ``"all"``
        (0444/0555): who besides the owner may read the published tree.
    user_staging
        *staging* is the user's own directory, and the way to finish an interrupted
        publication is the same call again (``dataset-devkit publish``): the record of
        which directory became *final* is kept beside it
        (:mod:`~dataset_devkit.integrity.publish_record`), so any later run of the same
        call reports it published, and an error tells what to do with *staging*. False for
        a private staging directory the caller made (:func:`new_staging_dir`) and removes
        on failure itself: the record goes once the tree is checked.
    written
        From a writer that hashed every file as it wrote it, into a manifest it wrote: the
        :func:`file_stamp` of each file the manifest lists, by its path, taken after the
        file's last write. The recheck of the sealed tree then compares each file's
        identity with its stamp instead of hashing every byte a second time (see
        :func:`_recheck_stamps` for why that proves the same); without a stamp for every
        file, the tree is hashed again.

    Raises
    ------
    DestinationExistsError
        *final* exists (or appeared during publication, from another publisher): nothing
        was replaced, and *staging* is left where it is. When an earlier run of this same
        publication renamed *staging* to *final* (so *staging* is gone), the tree there is
        checked instead: the result then has ``already_published`` set.
    PublicationError
        Any other failure; *final* is absent or untouched and *staging* is left for audit.
    """
    final = path_argument(final, "final").absolute()
    staging = path_argument(staging, "staging").absolute()
    location = check_manifest_location(manifest_location)
    readable = check_readable_by(readable_by)
    phase = on_phase or (lambda _name: None)
    done = _published_before(staging, final, location)
    if done is not None:
        return done
    if not os.path.lexists(staging) and os.path.lexists(final):
        # No record names this staging directory: the name is mistyped, or another tree
        # was published there (or the record beside it was removed). Nothing proves this
        # call published it, so say what to check instead of claiming it did.
        raise DestinationExistsError(
            f"{final}: already exists and {staging} is gone; no record beside it says "
            f"{staging.name} became it: check it with `dataset-devkit verify {final}`"
        )
    # What the staged tree is comes first: a missing one or a file is not a misplaced one.
    if not os.path.lexists(staging):
        raise MissingPathError("no such directory", path=staging)
    os.close(open_dir_nofollow(staging))  # a file or a link: named the safe way's words
    try:
        parent_fd = pin_parent(final)
    except DestinationExistsError:
        raise _taken(final, staging, user_staging, sealed=False) from None
    try:
        staging_parent = staging.parent.stat()
        pinned_parent = os.fstat(parent_fd)
        if (staging_parent.st_dev, staging_parent.st_ino) != (
            pinned_parent.st_dev,
            pinned_parent.st_ino,
        ):
            raise PublicationError(
                f"{staging}: staging must be a sibling of {final} (same parent directory)"
            )
        staging_fd = open_dir_nofollow(staging.name, dir_fd=parent_fd, shown=staging)
        try:
            identity = os.fstat(staging_fd)
            phase("checked")
            if validate is not None:
                validate(staging)
            phase("validated")
            if _holds(staging_fd, staging, location):
                manifest = read_manifest(staging, location=location)
            else:
                manifest = write_manifest(staging, location=location, progress=progress)
            phase("manifest-written")
            sealed: _Snapshot = {}
            _seal(staging_fd, staging, readable, sealed)
            phase("sealed")
            problems = _recheck(staging, location, manifest, sealed, written, progress)
            if problems:
                raise PublicationError(
                    f"{staging}: changed after its manifest was written; not published:\n"
                    + "\n".join(f"  - {line}" for line in problems)
                )
            checked: _Snapshot = {}
            _take_snapshot(staging_fd, "", checked)
            if checked != sealed:
                raise PublicationError(f"{staging}: changed while it was verified")
            phase("rechecked")
            fcntl.flock(parent_fd, fcntl.LOCK_EX)
            phase("locked")
            # Under the lock, before the record: a publisher that lost the race must not
            # replace the winner's record (its re-run needs it).
            if _exists_at(parent_fd, final.name):
                raise _taken(final, staging, user_staging, sealed=True)
            write_record(parent_fd, final, staging, identity, manifest.root_sha256)
            try:
                try:
                    rename_noreplace(parent_fd, staging.name, parent_fd, final.name)
                except DestinationExistsError:  # a publisher that ignores the lock
                    raise _taken(final, staging, user_staging, sealed=True) from None
                with naming(final.parent):
                    os.fsync(parent_fd)
                phase("renamed")
                _check_after_rename(parent_fd, final, identity, checked)
            except BaseException:
                with contextlib.suppress(OSError):
                    remove_record(parent_fd, final)
                raise
            if not user_staging:  # no re-run repeats a private staging name
                remove_record(parent_fd, final)
            phase("verified")
            release_staging_lock(staging)
        finally:
            os.close(staging_fd)
    finally:
        os.close(parent_fd)  # also releases the advisory lock
    return PublishResult(final=final, root_sha256=manifest.root_sha256, manifest=manifest)


def _recheck(
    staging: Path,
    location: str,
    manifest: ContentManifest,
    sealed: _Snapshot,
    written: Mapping[str, FileStamp] | None,
    progress: OnProgress | None,
) -> list[str]:
    """What differs between the sealed tree and *manifest* (nothing: publish it)."""
    if written is None or any(entry.path not in written for entry in manifest.files):
        found = verify_tree(staging, location=location, progress=progress)
        if found.ok and found.root_sha256 != manifest.root_sha256:
            return [f"{location}: its root hash changed since it was read"]
        return found.issues
    report(
        progress,
        ProgressUpdate("verify", total_bytes=manifest.total_bytes, total_items=manifest.file_count),
    )
    problems = _recheck_stamps(staging, location, manifest, sealed, written)
    report(
        progress,
        ProgressUpdate("verify", nbytes=manifest.total_bytes, items=manifest.file_count),
    )
    return problems


def _recheck_stamps(
    staging: Path,
    location: str,
    manifest: ContentManifest,
    sealed: _Snapshot,
    written: Mapping[str, FileStamp],
) -> list[str]:
    """Check the sealed tree is what its writer hashed, from identities alone.

    The writer vouches for one thing: it created each file itself (exclusively, so the
    inode held nothing else), hashed exactly the bytes it wrote to it (the same memory,
    unchanged between the hash and the write), and took the file's stamp after its last
    write. The manifest's digest of a file is then the hash of what that inode held at its
    stamp. The seal's pass saw each file through a no-follow descriptor as a single-link
    regular file; if its device, inode, size and modification time are still those of its
    stamp, nothing changed it since: any write, truncation or store through a mapping sets
    the modification time, and replacing the file changes the inode. (Linux since 6.13
    gives ext4, XFS, Btrfs and tmpfs fine-grained times as soon as a time has been read,
    as the stamp does, so even a write right after it shows; on a filesystem with coarse
    times, a write within the same clock tick as the writer's last one could keep the
    time: an accident inside a private build tree within milliseconds of its writing,
    which the threat model above leaves out like a hostile process.) So the bytes
    published are the bytes hashed, without reading them again. The listing is checked
    as the hashing recheck would: no file missing or extra, no size changed, and the
    manifest itself is read again and must have the same root hash.
    """
    problems = []
    files = {rel: st for rel, st in sealed.items() if not stat.S_ISDIR(st[4])}
    for entry in manifest.files:
        st = files.pop(entry.path, None)
        if st is None:
            problems.append(f"{entry.path}: missing: expected {entry.size} bytes")
        elif st[2] != entry.size:
            problems.append(f"{entry.path}: changed: size {st[2]}, expected {entry.size}")
        elif st[:4] != written[entry.path]:
            problems.append(f"{entry.path}: changed: not the file hashed when it was written")
    files.pop(location, None)
    problems.extend(
        f"{rel}: extra: not in the manifest ({st[2]} bytes)" for rel, st in sorted(files.items())
    )
    if read_manifest(staging, location=location).root_sha256 != manifest.root_sha256:
        problems.append(f"{location}: its root hash changed since it was read")
    return problems


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _taken(final: Path, staging: Path, user_staging: bool, *, sealed: bool) -> Exception:
    """The one error of a publication whose final name another tree holds (or took first),
    saying what became of the staging directory and what to do with it."""
    message = f"{final}: already exists; a published tree is never replaced"
    if not user_staging:
        return DestinationExistsError(message)
    state = "sealed read-only, as it would have been published" if sealed else "untouched"
    return DestinationExistsError(
        f"{message}; {staging} is left {state}: publish it under another name "
        f"(dataset-devkit publish {staging} --out OTHER) or remove it "
        f"(chmod -R u+w {staging} && rm -rf {staging})"
    )


def _published_before(staging: Path, final: Path, location: str) -> PublishResult | None:
    """The result of an earlier run of this same publication that was killed after its
    rename (:mod:`~dataset_devkit.integrity.publish_record`), or None."""
    if os.path.lexists(staging) or not os.path.lexists(final):
        return None
    parent_fd = open_dir_nofollow(final.parent)
    try:
        fcntl.flock(parent_fd, fcntl.LOCK_EX)  # not while a live publisher is renaming
        found = check_republished(parent_fd, staging, final, location)
    finally:
        os.close(parent_fd)
    if found is None:
        return None
    root, manifest = found
    return PublishResult(final=final, root_sha256=root, manifest=manifest, already_published=True)


def _holds(staging_fd: int, staging: Path, location: str) -> bool:
    """Whether anything is at *location* in the pinned staging tree (no link followed).

    A missing parent directory is not an answer: writing the manifest then fails naming it.
    """
    with SafeDir(os.dup(staging_fd), staging) as pinned:
        try:
            return pinned.exists(location)
        except FileNotFoundError:
            return False


def _check_after_rename(
    parent_fd: int, final: Path, identity: os.stat_result, expected: _Snapshot
) -> None:
    """Check the final name holds exactly the tree that was verified, or move it out."""
    problem: str | None = None
    try:
        fd = open_dir_nofollow(final.name, dir_fd=parent_fd)
    except (OSError, UnsafePathError) as exc:
        problem = f"cannot reopen the published tree: {exc}"
    else:
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (identity.st_dev, identity.st_ino):
                problem = "a different directory appeared under the final name"
            else:
                seen: _Snapshot = {}
                _take_snapshot(fd, "", seen)
                if seen != expected:
                    changed = sorted(set(seen.items()) ^ set(expected.items()))
                    problem = f"changed during publication: {changed[0][0]}"
        finally:
            os.close(fd)
    if problem is None:
        return
    quarantine = f".{final.name}.rejected-{secrets.token_hex(6)}"
    try:
        rename_noreplace(parent_fd, final.name, parent_fd, quarantine)
    except Exception as exc:
        raise PublicationError(f"{final}: {problem}; moving it out also failed ({exc})") from exc
    raise PublicationError(f"{final}: {problem}; moved out to {final.parent / quarantine}")


@contextmanager
def staged_publication(
    final: Path,
    *,
    validate: Validator | None = None,
    manifest_location: str = CONTENT_MANIFEST_NAME,
    progress: OnProgress | None = None,
    keep_failed: bool = False,
    readable_by: ReadableBy = "owner",
) -> Iterator[Path]:
    """Yield a fresh sibling staging directory; publish it to *final* on a clean exit.

    The manifest is written last at *manifest_location*, and the tree is sealed readable by
    *readable_by* (see :func:`publish_tree`).

    On an exception in the block, or a failed publication, the staging directory is
    removed (``keep_failed=True`` keeps it for audit) and *final* is untouched. Staging
    trees of *final* abandoned by killed builders are removed first; live ones are kept.
    """
    final = path_argument(final, "final").absolute()
    check_readable_by(readable_by)  # before anything is built
    remove_stale_staging(final)  # what killed builders of this name left behind
    staging = new_staging_dir(final)
    try:
        yield staging
        publish_tree(
            staging,
            final,
            validate=validate,
            manifest_location=manifest_location,
            progress=progress,
            readable_by=readable_by,
            user_staging=False,
        )
    except BaseException:
        if not keep_failed:
            remove_staging(staging)
        raise
