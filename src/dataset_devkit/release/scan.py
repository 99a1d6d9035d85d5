"""List the source tree without following links, refusing what a release cannot carry.

The walk holds one descriptor per level of the tree, whatever its size. Given worker
processes, the packer's scan lists the first levels itself and hands out the subtrees below
them: on a tree of small files the walk is Python work per directory and per file (a
listing, an ``lstat`` per file, an open per directory), which one process does on one core
while the others wait for the plan. The files and problems found are the same sets either
way, and both are sorted before anything else sees them.
"""

from __future__ import annotations

import os
import stat
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dataset_devkit.release import unpack
from dataset_devkit.release.errors import UnsafeTreeError

__all__ = [
    "NAME_MAX",
    "PATH_MAX",
    "SCAN_TASKS",
    "SourceFile",
    "length_problem",
    "scan_tree",
]


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One regular file of the source tree, by relative POSIX path."""

    path: str
    size: int


#: Longest file name (one path component) in bytes that Linux, macOS and Windows create.
NAME_MAX: Final = 255
#: Longest path in bytes a POSIX system accepts (``PATH_MAX`` 4096 with its final NUL).
PATH_MAX: Final = 4095
#: With worker processes, the scan lists levels itself until it has this many subtrees (or
#: :data:`SPLIT_DEPTH` levels), then hands them out in at most this many runs of
#: neighbours; the scanning process takes runs from the end while the workers start with
#: the first, so an uneven tree still keeps every core busy.
SCAN_TASKS: Final = 16
SPLIT_DEPTH: Final = 4


def length_problem(path: str) -> str:
    """Why a member path (``root name/relative path``) is too long to restore, or ``""``.

    Each component must fit ``NAME_MAX`` and the whole path ``PATH_MAX`` bytes in UTF-8:
    a release holding a longer name packs fine and then cannot be restored anywhere.
    """
    size = len(path.encode("utf-8", "surrogateescape"))
    if size <= NAME_MAX:  # no component can be longer than the whole path
        return ""
    if size > PATH_MAX:
        return f"path is {size} bytes; restorable paths have at most {PATH_MAX}"
    for part in path.split("/"):
        length = len(part.encode("utf-8", "surrogateescape"))
        if length > NAME_MAX:
            shown = part[:40] + "..."
            return f"component {shown!r} is {length} bytes; names have at most {NAME_MAX}"
    return ""


def scan_tree(
    root: Path, name: str | None = None, *, pool: Executor | None = None
) -> list[SourceFile]:
    """List every file of *root*, sorted; refuse links, special files and unportable names.

    Dotfiles are ordinary files (Zarr's ``.zgroup`` must survive); nothing is skipped.
    Every problem is collected and reported at once. With *name* (the release's root folder)
    every member path ``name/path`` is also checked against :data:`NAME_MAX` and
    :data:`PATH_MAX`, so a release that could not be restored is refused here.

    The walk is depth first and holds one descriptor per level of the tree, whatever the
    number of directories or siblings: a directory's listing is read whole before any of
    its subdirectories is opened, and each subdirectory is closed before the next.

    With *pool* (worker processes that import this module), subtrees are walked there as
    well as here; the result and every error are the same as without it. A pool that
    breaks leaves its part to this process.
    """
    try:
        top = unpack.PinnedDir.open_root(str(root), create=False)
    except unpack.UnpackError as exc:  # names the path itself
        raise UnsafeTreeError(f"cannot open the tree: {exc}") from None
    files: list[SourceFile] = []
    issues: list[str] = []
    try:
        if pool is None:
            _walk(top, "", files, issues)
            files.sort(key=lambda f: f.path)
            issues.extend(unpack.check_tree_names(f.path for f in files))
        else:
            _walk_split(top, str(root), pool, files, issues)
            files.sort(key=lambda f: f.path)
    finally:
        top.close()
    if name is not None:
        issues.extend(
            f"{f.path}: {problem}" for f in files if (problem := length_problem(f"{name}/{f.path}"))
        )
    if issues:
        raise UnsafeTreeError(
            "the tree cannot be released:\n" + "\n".join(f"  - {i}" for i in sorted(issues)),
            path=root,
        )
    return files


def _listing(folder: unpack.PinnedDir) -> list[tuple[str, os.stat_result | None]]:
    """The entries of *folder*, sorted by name, each with its ``lstat`` (None for a
    directory).

    ``os.scandir`` tells a directory by the entry's type, with no ``stat`` call (the walk
    opens it ``O_NOFOLLOW | O_DIRECTORY``, which refuses anything else atomically); only the
    other entries are stat'ed, through the listing's own descriptor, never following a link.
    The stats are taken while the listing is open: an entry's ``stat`` needs its descriptor.
    """
    out: list[tuple[str, os.stat_result | None]] = []
    with os.scandir(folder.fd if folder.fd is not None else folder.path) as listing:
        for entry in listing:
            try:
                if entry.is_dir(follow_symlinks=False):
                    out.append((entry.name, None))
                else:
                    out.append((entry.name, entry.stat(follow_symlinks=False)))
            except FileNotFoundError:  # removed since it was listed: as entries() skips it
                continue
    out.sort()
    return out


def _list_folder(
    folder: unpack.PinnedDir, prefix: str, files: list[SourceFile], issues: list[str]
) -> list[str]:
    """Add the files of *folder* (whose path is *prefix*) and the problems of its entries;
    return the names of its subdirectories, in order."""
    try:
        entries = _listing(folder)
    except OSError as exc:
        issues.append(f"{prefix.rstrip('/') or '.'}: cannot be listed ({exc.strerror})")
        return []
    folders = []
    for name, st in entries:
        rel = prefix + name
        if not name.isascii():
            try:
                name.encode("utf-8")  # os.scandir keeps undecodable bytes as surrogates
            except UnicodeEncodeError:
                shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
                issues.append(f"{shown}: name is not valid UTF-8; tar members need UTF-8")
                continue
        if st is None:
            folders.append(name)
        elif stat.S_ISREG(st.st_mode):
            files.append(SourceFile(rel, st.st_size))
        else:
            kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a special file"
            issues.append(f"{rel}: is {kind}; a release carries regular files only")
    return folders


def _walk(
    folder: unpack.PinnedDir, prefix: str, files: list[SourceFile], issues: list[str]
) -> None:
    """Collect the files below *folder*, opening one subdirectory at a time."""
    for name in _list_folder(folder, prefix, files, issues):
        try:
            child = folder.child(name, create=False)
        except unpack.UnpackError as exc:  # names the full path
            issues.append(str(exc))
            continue
        try:
            _walk(child, f"{prefix}{name}/", files, issues)
        finally:
            child.close()


@dataclass(frozen=True, slots=True)
class Walked:
    """What a walk of some subtrees found: the files (as two lists, cheap to send between
    processes), the problems of the walk, and those of the names check of these files."""

    paths: list[str]
    sizes: list[int]
    problems: list[str]
    names: list[str]


def walk_subtrees(root: str, prefixes: list[str]) -> Walked:
    """Walk and check the subtrees *prefixes* (directory paths relative to *root*) in a
    worker process: the tree is opened again there, by the same no-follow rules."""
    try:
        top = unpack.PinnedDir.open_root(root, create=False)
    except unpack.UnpackError as exc:  # the tree was moved or replaced since the listing
        return Walked([], [], [f"cannot open the tree: {exc}"], [])
    try:
        return _walk_subtrees_in(top, prefixes)
    finally:
        top.close()


def _walk_subtrees_in(top: unpack.PinnedDir, prefixes: list[str]) -> Walked:
    """Walk the subtrees *prefixes* of *top* and check the names of the files found."""
    files: list[SourceFile] = []
    problems: list[str] = []
    chain = unpack.DirChain(top)
    try:
        for prefix in prefixes:
            try:
                folder = chain.goto(prefix.split("/"), create=False)
            except unpack.UnpackError as exc:  # names the full path, as _walk's child()
                problems.append(str(exc))
                continue
            _walk(folder, prefix + "/", files, problems)
    finally:
        chain.close()
    paths = [f.path for f in files]
    return Walked(paths, [f.size for f in files], problems, unpack.check_tree_names(sorted(paths)))


def _split_points(top: unpack.PinnedDir, files: list[SourceFile], issues: list[str]) -> list[str]:
    """List the top levels here, breadth first, until there are :data:`SCAN_TASKS`
    subtrees below them (or :data:`SPLIT_DEPTH` levels are listed); return those subtrees'
    paths, sorted. The levels' files and problems are added as :func:`_walk` would."""
    frontier = [""]
    for depth in range(SPLIT_DEPTH):
        if not frontier or (depth and len(frontier) >= SCAN_TASKS):
            break
        deeper: list[str] = []
        chain = unpack.DirChain(top)
        try:
            for path in frontier:
                try:
                    folder = chain.goto(path.split("/") if path else [], create=False)
                except unpack.UnpackError as exc:  # names the full path
                    issues.append(str(exc))
                    continue
                prefix = f"{path}/" if path else ""
                deeper += [prefix + name for name in _list_folder(folder, prefix, files, issues)]
        finally:
            chain.close()
        frontier = deeper
    return sorted(frontier)


def _walk_split(
    top: unpack.PinnedDir,
    root: str,
    pool: Executor,
    files: list[SourceFile],
    issues: list[str],
) -> None:
    """:func:`_walk` of *top* and the names check of every file found, with subtrees
    shared between *pool* and this process.

    The names check compares the entries of each directory as case-insensitive systems
    see it, and each path's own name. When the levels listed here hold no problem and no
    two entries that collide (their files, and each subtree with a stand-in file), every
    subtree is a directory of its own on any system: each collision lies inside one
    subtree, so the checks of the subtrees, done where they are walked, give every
    problem. Otherwise (a tree that is refused anyway) the whole listing is checked here,
    as the one-process scan does, so the message is the same.
    """
    subtrees = _split_points(top, files, issues)
    stand_ins = [f.path for f in files] + [f"{path}/x" for path in subtrees]
    apart = not unpack.check_tree_names(sorted(stand_ins))
    names: set[str] = set()
    for found in _walk_runs(top, root, pool, subtrees):
        files.extend(map(SourceFile, found.paths, found.sizes))
        issues.extend(found.problems)
        names.update(found.names)
    if apart:
        issues.extend(sorted(names))
    else:
        issues.extend(unpack.check_tree_names(sorted(f.path for f in files)))


def _walk_runs(
    top: unpack.PinnedDir, root: str, pool: Executor, subtrees: list[str]
) -> list[Walked]:
    """Walk *subtrees* in runs of neighbours, on *pool* and here; return the runs' results
    in order."""
    if not subtrees:
        return []
    size = -(-len(subtrees) // SCAN_TASKS)
    runs = [subtrees[at : at + size] for at in range(0, len(subtrees), size)]
    found: dict[int, Walked] = {}
    futures: list[Future[Walked]] = []
    try:
        if len(runs) > 1:
            futures = [pool.submit(walk_subtrees, root, run) for run in runs]
    except BrokenProcessPool:
        futures = []
    try:
        # Runs no worker has taken yet are taken back and walked here, last first.
        for index in reversed(range(len(runs))):
            if futures and not futures[index].cancel():
                break
            found[index] = _walk_subtrees_in(top, runs[index])
        for index, run in enumerate(runs):
            if index not in found:
                try:
                    found[index] = futures[index].result()
                except BrokenProcessPool:  # the pack names the broken pool when it writes
                    found[index] = _walk_subtrees_in(top, run)
    finally:
        for future in futures:
            future.cancel()
    return [found[index] for index in range(len(runs))]
