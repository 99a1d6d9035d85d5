"""The library face of ``unpack.py``: the same verify and restore logic, devkit errors."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from dataset_devkit.errors import ConfigError, MissingPathError
from dataset_devkit.integrity import path_argument
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.release import unpack
from dataset_devkit.release.errors import ReleaseVerificationError
from dataset_devkit.release.spec import (
    FILES_NAME,
    MANIFEST_NAME,
    README_NAME,
    SUMS_NAME,
    UNPACK_NAME,
    VALIDATION_NAME,
)

__all__ = ["restore_release", "verify_release"]


def _families(families: Sequence[str]) -> tuple[list[str], bool]:
    if isinstance(families, str) or not all(isinstance(f, str) for f in families):
        raise ConfigError(f"families must be a list of names, found {families!r}", key="families")
    return [f for f in families if f != "all"], "all" in families


def _package_log(
    progress: OnProgress | None,
    stage: str,
    release: unpack.Release,
    families: list[str],
    log: Callable[[str], None],
) -> Callable[[str], None]:
    """Turn unpack's per-package log lines (``verified NAME``) into :class:`ProgressUpdate`.

    Verification reads each package once, whole, on several threads: the package is the
    unit it finishes, so a bar counts packages and their bytes.

    ``unpack.py`` is stdlib-only and reports through a ``log(str)`` hook; its package names
    map to sizes from the manifest, so a bar shows packages and bytes.
    """
    packages = release.packages_of(families)
    sizes = {p["name"]: int(p["size"]) for p in packages}
    report(
        progress,
        ProgressUpdate(
            stage,
            total_items=len(packages),
            total_bytes=sum(sizes.values()),
            unit="packages",
        ),
    )
    prefix = "verified "

    def log_and_report(message: str) -> None:
        log(message)
        name = message[len(prefix) :] if message.startswith(prefix) else None
        if name in sizes:
            report(progress, ProgressUpdate(stage, items=1, nbytes=sizes[name], unit="packages"))

    return log_and_report


def _file_progress(
    progress: OnProgress | None, release: unpack.Release, families: list[str]
) -> tuple[Callable[[int, int], None] | None, Callable[[int, int], None] | None]:
    """unpack's two byte counters as stages ``check packages`` and ``restore``.

    ``unpack.py`` first hashes every package (``(bytes hashed, bytes of the packages)``,
    from several threads under its lock), then calls the member counter once per file it
    restores with the running byte total: each such call is one file done, its bytes the
    difference from the previous call. The restore's totals come from ``files.jsonl``.
    """
    if progress is None:
        return None, None
    sink = progress
    rows = [r for p in release.packages_of(families) for r in release.rows_of(p["name"]).values()]
    checked, restored = [0], [-1]

    def check(done: int, total: int) -> None:
        sink(ProgressUpdate("check packages", nbytes=done - checked[0], total_bytes=total))
        checked[0] = done

    def member(done: int, _total: int) -> None:
        if restored[0] < 0:  # the restore's bar starts after the check's
            totals = sum(r.size for r in rows), len(rows)
            sink(ProgressUpdate("restore", total_bytes=totals[0], total_items=totals[1]))
            restored[0] = 0
        sink(ProgressUpdate("restore", nbytes=done - restored[0], items=1))
        restored[0] = done

    return check, member


def _named(release_dir: Path, summary: str) -> str:
    """*summary* led by the release directory, unless it names that directory already."""
    return summary if str(release_dir) in summary else f"{release_dir}: {summary}"


def _existing(release_dir: Path) -> None:
    """A release directory that is not there is named as such, not by its first file."""
    if not os.path.lexists(release_dir):
        raise MissingPathError(
            "no such release directory (the folder that holds manifest.json, files.jsonl, "
            "unpack.py and the packages)",
            path=release_dir,
        )


def _chosen(
    release_dir: Path, names: list[str], everything: bool
) -> tuple[unpack.Release, list[str]]:
    release = unpack.load_release(str(release_dir))
    return release, unpack.choose_families(release, names, everything)


def verify_release(
    release_dir: Path,
    families: Sequence[str],
    *,
    expect_root: str | None = None,
    log: Callable[[str], None] = lambda _m: None,
    progress: OnProgress | None = None,
) -> unpack.Summary:
    """Verify the named families (or ``"all"``; none: every delivered one), writing nothing.

    With *expect_root*, the release must be the snapshot with that ``root_sha256``. Files
    in a family folder that the manifest does not name are ignored and reported to *log*.
    *progress* hears of each package verified (stage ``"verify"``, packages and bytes).

    Raises
    ------
    ReleaseVerificationError
        Listing every problem: missing, truncated or altered packages, members that
        are not exactly the indexed regular files, metadata that does not agree.
    """
    path_argument(release_dir, "release_dir")
    _existing(release_dir)
    names, everything = _families(families)
    try:
        release = unpack.load_release(str(release_dir))  # the index, held once
        if not names and not everything:
            names = [n for n, f in release.families.items() if f["status"] == "delivered"]
        chosen = unpack.choose_families(release, names, everything)
        package_log = _package_log(progress, "verify", release, chosen, log)
        summary = unpack.verify_release(
            release, names, everything, log=package_log, expect_root=expect_root
        )
        issues = check_shipped_files(release_dir, release.manifest)
    except unpack.UnpackError as exc:
        raise ReleaseVerificationError(_named(release_dir, exc.summary), exc.issues) from None
    except OSError as exc:
        raise ReleaseVerificationError(f"{release_dir}: {exc}") from None
    if issues:
        raise ReleaseVerificationError(f"{release_dir}: release does not verify", issues)
    return summary


#: Files every release ships next to its packages, each listed in SHA256SUMS.
_METADATA = (FILES_NAME, MANIFEST_NAME, README_NAME, UNPACK_NAME, VALIDATION_NAME)


def check_shipped_files(release_dir: Path, manifest: dict[str, Any] | None = None) -> list[str]:
    """Check ``unpack.py`` and ``SHA256SUMS`` against ``manifest.json``; return every issue.

    ``unpack.py`` is the program downloaders run, so a copy that differs from the one the
    manifest names must fail verification. ``SHA256SUMS`` must be exactly what the packer
    writes (:func:`sums_lines`); then the lines of small metadata files are hashed, and
    package lines are compared with the manifest (the packages were just hashed).
    """
    if manifest is None:
        manifest = unpack.load_release(str(release_dir)).manifest
    script = hashlib.sha256(unpack._read_small(str(release_dir), UNPACK_NAME)).hexdigest()
    issues = []
    if script != manifest.get("unpack_py_sha256"):
        issues.append(
            f"{UNPACK_NAME}: SHA-256 {script}, {MANIFEST_NAME} says "
            f"{manifest.get('unpack_py_sha256')!r}"
        )
    packages = {p["name"]: p["sha256"] for p in manifest["packages"]}
    known = set(packages) | set(_METADATA)
    lines, problems = sums_lines(unpack._read_small(str(release_dir), SUMS_NAME), known)
    issues.extend(problems)
    unlisted = known - {name for _, _, name in lines}
    for number, digest, name in lines:
        if name in packages:
            if digest != packages[name]:
                issues.append(
                    f"{SUMS_NAME} line {number}: {name} listed {digest}, "
                    f"{MANIFEST_NAME} says {packages[name]}"
                )
            continue
        # Only the metadata files are read here (names were checked against the release).
        try:
            found = hashlib.sha256(unpack._read_small(str(release_dir), name)).hexdigest()
        except unpack.UnpackError as exc:
            issues.append(f"{SUMS_NAME} line {number}: {exc}")
            continue
        if found != digest:
            issues.append(f"{SUMS_NAME} line {number}: {name} has SHA-256 {found}, listed {digest}")
    issues.extend(f"{SUMS_NAME}: no line for {name}" for name in sorted(unlisted))
    return issues


#: A line as the packer writes it: 64 lowercase hex digits, two spaces (text mode), a name.
_SUMS_LINE = re.compile(r"([0-9a-f]{64})  (.+)")


def _spelled(name: str) -> str:
    """*name* without what makes other spellings of one path: a binary-mode ``*``, ``./``
    components, repeated or trailing slashes (``./base//base-0001.tar``)."""
    return "/".join(part for part in name.removeprefix("*").split("/") if part not in ("", "."))


def sums_lines(data: bytes, known: set[str]) -> tuple[list[tuple[int, str, str]], list[str]]:
    """Parse ``SHA256SUMS`` strictly: ``(line number, digest, name)`` of each line that is
    well-formed and names a file of the release once, and an issue for every other line.

    ``sha256sum -c`` tolerates much (blank lines, CRLF, ``*name``, ``./name``, a name listed
    twice with two hashes, of which it checks both); a release's checksum file is written by
    the packer, one LF-terminated line per file, so anything else is damage or an edit, and
    a second line for a name could vouch for other bytes than the first. Each issue names
    the line.
    """
    issues: list[str] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = data.count(b"\n", 0, exc.start) + 1
        return [], [f"{SUMS_NAME} line {at}: not UTF-8 text ({exc.reason})"]
    if text and not text.endswith("\n"):
        issues.append(f"{SUMS_NAME}: the last line has no line feed; expected LF-terminated lines")
    if "\r" in text:
        at = text.count("\n", 0, text.index("\r")) + 1
        issues.append(f"{SUMS_NAME} line {at}: CR in a line (CRLF line endings?); expected LF")
    seen: dict[str, tuple[int, str]] = {}
    lines = []
    pieces = text.split("\n")
    if pieces[-1] == "":
        pieces.pop()  # what follows the last line feed
    for number, raw in enumerate(pieces, 1):
        line = raw.rstrip("\r")
        shown = repr(line[:120])
        match = _SUMS_LINE.fullmatch(line)
        if not line.strip():
            issues.append(f"{SUMS_NAME} line {number}: blank line")
            continue
        if match is None:
            issues.append(
                f"{SUMS_NAME} line {number}: {shown} is malformed; expected 64 lowercase "
                "hexadecimal digits, two spaces and a file name"
            )
            continue
        digest, name = match.groups()
        canonical = _spelled(name)
        if canonical in seen:
            first, earlier = seen[canonical]
            hashed = "the same SHA-256" if digest == earlier else f"another SHA-256, {digest}"
            issues.append(
                f"{SUMS_NAME} line {number}: {canonical} listed again with {hashed} (first on "
                f"line {first}); expected one line per file"
            )
            continue
        seen[canonical] = (number, digest)
        # Only names of the release pass (a damaged one may hold a NUL byte, or point
        # anywhere): the metadata files are then read, never any other path.
        if name not in known:
            spelled = f"; that is {canonical}, spelled differently" if canonical in known else ""
            issues.append(f"{SUMS_NAME} line {number}: {shown} does not match the release{spelled}")
            continue
        lines.append((number, digest, name))
    return lines, issues


def restore_release(
    release_dir: Path,
    output: Path,
    families: Sequence[str],
    *,
    fsync: bool = True,
    readable_by: Literal["owner", "group", "all"] = "owner",
    expect_root: str | None = None,
    wait: bool = True,
    log: Callable[[str], None] = lambda _m: None,
    progress: OnProgress | None = None,
) -> unpack.Summary:
    """Restore the named families (or ``"all"``) into ``output/<release name>``.

    The same logic as the shipped ``unpack.py``: with *fsync* every restored file and every
    directory that gained entries is made durable; *readable_by* sets the restored modes
    (``owner`` 0400/0500, ``group`` 0440/0550, ``all`` 0444/0555); *expect_root* pins the
    snapshot; a run into an output another restore is writing waits for it (*wait*) or
    fails naming its pid. Re-running after any interruption finishes the restore.
    *progress* hears of the packages' bytes hashed first (stage ``"check packages"``),
    then of each file restored (stage ``"restore"``, files and bytes).

    Raises
    ------
    ReleaseVerificationError
        On any failure; files already correct stay, nothing pre-existing is replaced.
    OSError
        From the machine (full disk, permission denied), naming the file concerned.
    """
    path_argument(release_dir, "release_dir")
    path_argument(output, "output")
    _existing(release_dir)
    names, everything = _families(families)
    if readable_by not in unpack.READABLE_BY:
        raise ConfigError(
            f"readable_by must be one of {sorted(unpack.READABLE_BY)}, found {readable_by!r}",
            key="readable_by",
        )
    try:
        release, chosen = _chosen(release_dir, names, everything)
        check, member = _file_progress(progress, release, chosen)
        return unpack.unpack_release(
            release,  # loaded once: the index is not held twice
            str(output),
            names,
            everything,
            log=log,
            progress=member,
            check_progress=check,
            fsync=fsync,
            readable_by=readable_by,
            expect_root=expect_root,
            wait=wait,
        )
    except unpack.UnpackError as exc:
        raise ReleaseVerificationError(_named(release_dir, exc.summary), exc.issues) from None
    except OSError as exc:
        if exc.filename:
            raise  # the machine's error, naming the file: the CLI prints it in one line
        raise ReleaseVerificationError(f"{release_dir}: {exc}") from None
