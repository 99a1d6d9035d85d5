#!/usr/bin/env python3
"""Verify and restore a dataset-devkit release with nothing but the Python standard library.

This one file ships inside every release next to ``manifest.json``; it needs Python 3.9 or
newer and no third-party package. Typical use, from the release directory::

    python unpack.py --base --verify-only
    python unpack.py --base --output ./data
    python unpack.py --depth --output ./data      # later: add a family into the same output
    python unpack.py --all --output ./data

Why hand-written, and why not ``tarfile.extractall``: the script must run on a bare
Python with nothing installed, so no third-party extractor can be used; Python's extraction
filters could be made to write outside the output on unpatched releases (CVE-2025-4517), GNU
tar follows symlinks planted in the output, and both tarfile and bsdtar stop or skip
silently on a damaged header. This script never calls ``extract()``; it authenticates
``files.jsonl`` against ``manifest.json``, checks every chosen package's size, parses each
tar by hand (exactly the indexed members, regular files only, no duplicates, valid
checksums, no truncation, only zeros after the end marker, a member cap) while hashing the
whole package in the same read, and writes every file itself at its final name, created
with ``O_CREAT|O_EXCL|O_NOFOLLOW`` relative to directory descriptors opened one level at a
time without following links (an existing name is never opened for writing). A file whose
SHA-256 differs from ``files.jsonl`` is removed at once, and every file of a package whose
own SHA-256 or structure fails is removed again. Before the first file is created, a small
journal (``OUTPUT/NAME.unpack-journal.json``, written whole and fsynced) names the packages
being written; it goes only once every file, name and directory is durable (one ``syncfs``
on Linux after the last file, with writeback started in the background as the files are
written; an fsync per file and directory elsewhere; ``--no-fsync`` skips it). A run killed
or cut off at any moment leaves that journal: the next run of the same command removes or
rewrites the files of those packages that are incomplete or differ, verifies the rest, and
finishes. Files it did not write (present before, or appearing meanwhile) are verified and
skipped when identical (untouched, their modes too), else reported and kept; folders it
finds get their modes back. Any failure exits non-zero, and a run that failed before
leaving a file behind removes the folders and the journal it created. Descriptors
stay bounded by the tree depth (58,000 files restore under ``ulimit -n 256``). One run at a
time writes into an output (an advisory lock). Modes come from ``--readable-by``
(owner-only by default), never from the archive.

Sections, in order: hashing, names, release metadata, family choice, tar parsing, packages,
output side (directories, placing, the lock, restore), command line.

On platforms without ``dir_fd`` support (Windows) every path component is checked with
``lstat`` (links and reparse points refused) right before use; that is weaker against a
concurrent attacker in the output directory but still never follows a link it has seen.
"""

# dir_fd-relative os calls on str paths are the point here; pathlib has no equivalent.
# ruff: noqa: PTH100, PTH102, PTH103, PTH105, PTH108, PTH116, PTH118, PTH119, PTH120, PTH208
from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import io
import json
import os
import re
import stat
import sys
import threading
import time
import unicodedata
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

FORMAT = "dataset-devkit-release"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
FILES_NAME = "files.jsonl"
STATE_SUFFIX = ".unpack-state.json"
MAX_NAME_BYTES = 255  # one path component (Linux, macOS, NTFS in UTF-16 units)
MAX_PATH_BYTES = 4095  # a whole path below the output (Linux PATH_MAX - 1)
INDEX_SUFFIX = ".unpack-index.jsonl"
LOCK_SUFFIX = ".unpack.lock"
JOURNAL_SUFFIX = ".unpack-journal.json"
#: --readable-by: (file mode, directory mode) of a restored tree.
READABLE_BY = {"owner": (0o400, 0o500), "group": (0o440, 0o550), "all": (0o444, 0o555)}
_UMASK = [0o022]  # the process umask, read when a restore starts
#: Temporary names earlier versions restored files through; a killed run of one may have
#: left some: removed on a re-run (under the output lock).
_TEMP_NAME = re.compile(r"\.unpack-[0-9a-f]{12}\.tmp\Z")
BLOCK = 512
CHUNK = 1 << 20
MAX_PAX_BYTES = 1 << 16
_ZERO_BLOCK = bytes(BLOCK)
_USTAR_MAGIC = b"ustar\x0000"
_REGULAR = (b"0", b"\x00")
_TYPE_NAMES = {
    b"1": "hard link",
    b"2": "symbolic link",
    b"3": "character device",
    b"4": "block device",
    b"5": "directory",
    b"6": "FIFO",
    b"7": "contiguous file",
    b"g": "global pax header",
    b"L": "GNU long name",
    b"K": "GNU long link name",
    b"S": "GNU sparse file",
    b"V": "volume label",
    b"M": "multi-volume continuation",
}
_WINDOWS_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{p}{i}" for p in ("COM", "LPT") for i in [*"123456789", "¹", "²", "³"]]
)
_WINDOWS_BAD_CHARS = frozenset('<>:"/\\|?*') | frozenset(chr(i) for i in range(32))
_REPARSE_POINT = 0x400
_DIR_FD = (
    hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    and os.open in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
    and os.rename in os.supports_dir_fd
    and os.scandir in os.supports_fd
)
_O_BINARY = getattr(os, "O_BINARY", 0)

__all__ = [
    "DirChain",
    "FileRow",
    "PinnedDir",
    "Release",
    "Summary",
    "TarFormatError",
    "UnpackError",
    "UnsafeNameError",
    "canonical_json",
    "check_packages",
    "check_relpath",
    "check_tree_names",
    "choose_families",
    "load_release",
    "main",
    "read_back_package",
    "root_sha256",
    "scan_package",
    "stat_packages",
    "unpack_release",
    "verify_release",
]


class UnpackError(Exception):
    """A release does not verify or cannot be restored; ``issues`` lists every problem."""

    def __init__(self, message: str, issues: Sequence[str] = ()) -> None:
        self.summary = message
        self.issues = sorted(issues)
        if len(self.issues) == 1 and "\n" not in self.issues[0]:
            text = f"{message}: {self.issues[0]}"  # one problem, one line
        else:
            text = message + "".join(f"\n  - {issue}" for issue in self.issues)
        super().__init__(text)


class UnsafeNameError(UnpackError):
    """A path is absolute, climbs with ``..``, or is not portable to Windows/macOS/Linux."""


class TarFormatError(UnpackError):
    """A package is not the strict plain tar the manifest promises."""


# --------------------------------------------------------------------------- hashing


def canonical_json(obj: Any) -> bytes:
    """Encode *obj* exactly as the integrity core does (sorted keys, compact, UTF-8)."""
    text = json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def root_sha256(entries: Iterable[tuple[str, int, str]]) -> str:
    """Return the content-manifest root hash of ``(path, size, sha256)`` entries.

    The canonical JSON of the sorted ``{"path", "sha256", "size"}`` list, written row by
    row without building a dict per row (58,000 rows: a tenth of the time); the bytes are
    those of :func:`canonical_json`.
    """
    hasher = hashlib.sha256(b"[")
    quote = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses
    parts: list[str] = []
    first = True
    for p, s, h in sorted(entries):
        if type(s) is not int or not isinstance(h, str):
            raise TypeError(f"entry {p!r}: size must be an int and sha256 a str")
        parts.append(f'{{"path":{quote(p)},"sha256":{quote(h)},"size":{s}}}')
        if len(parts) >= 4096:
            hasher.update(("" if first else ",").encode() + ",".join(parts).encode("utf-8"))
            parts, first = [], False
    if parts:
        hasher.update(("" if first else ",").encode() + ",".join(parts).encode("utf-8"))
    hasher.update(b"]")
    return hasher.hexdigest()


# --------------------------------------------------------------------------- names


def check_relpath(path: str) -> None:
    """Raise :class:`UnsafeNameError` unless *path* is a portable relative POSIX file path.

    Rejected: empty, absolute or drive paths, ``.``/``..``/empty components, backslashes,
    characters or names Windows cannot create (``<>:"|?*``, control characters, ``CON``,
    ``NUL``, ``COM1``... with any extension) and components ending in a dot or a space.
    """
    problem = _relpath_problem(path)
    if problem:
        raise UnsafeNameError(f"unsafe path {path!r}: {problem}")


def _relpath_problem(path: str, known: set[str] | None = None) -> str:
    """Why *path* is not a portable relative path ("" if it is). Components in *known*
    were checked before (a tree's directories repeat in every path below them); good new
    ones are added to it."""
    if not path:
        return "empty path"
    if path.startswith("/"):
        return "absolute path"
    problem = _text_problem(path)
    if problem:
        return problem
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        return f"path is longer than {MAX_PATH_BYTES} bytes (the Linux limit)"
    for part in path.split("/"):
        if known is not None and part in known:
            continue
        if part in ("", ".", ".."):
            return f"component {part!r} is not allowed"
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            return f"component {part[:40]!r}... is longer than {MAX_NAME_BYTES} bytes"
        bad = sorted(set(part) & _WINDOWS_BAD_CHARS)
        if bad:
            return f"component {part!r} has characters Windows rejects: {bad!r}"
        if part[-1] in ". ":
            return f"component {part!r} ends with a dot or a space (Windows drops it)"
        if part.split(".")[0].rstrip(" ").upper() in _WINDOWS_RESERVED:
            return f"component {part!r} is a reserved device name on Windows"
        if known is not None:
            known.add(part)
    return ""


def _text_problem(text: str) -> str:
    """Why *text* cannot be a file name on disk ("" if it can): a lone surrogate (JSON
    ``\\ud800``) has no UTF-8 encoding."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "not encodable as UTF-8 (lone surrogate)"
    return ""


def _fold(name: str) -> str:
    if name.isascii():
        return name.lower()  # NFC leaves ASCII alone; casefold of ASCII is lower()
    return unicodedata.normalize("NFC", name).casefold()


def check_tree_names(paths: Iterable[str]) -> list[str]:
    """Return every name problem of a set of file paths, sorted (empty when fine).

    Besides :func:`check_relpath`, two entries of one directory must not differ only in
    case or Unicode normalization (they collide on Windows and macOS), and no path may be
    both a file and a directory. A directory is checked once: the next file in a folder
    already seen costs the checks of its own name only.
    """
    issues = []
    files = set()
    seen: dict[tuple[str, str], str] = {}
    folded: dict[str, str] = {"": ""}  # directory -> its case/normalization-folded form
    known: set[str] = set()  # components already found portable
    for path in paths:
        parent, _, leaf = path.rpartition("/")
        in_known_folder = parent in folded and bool(path) and not path.startswith("/")
        if in_known_folder:
            problem = _text_problem(path)
            if not problem and len(path.encode("utf-8")) > MAX_PATH_BYTES:
                problem = f"path is longer than {MAX_PATH_BYTES} bytes (the Linux limit)"
            problem = problem or (_relpath_problem(leaf, known) if leaf not in known else "")
        else:
            problem = _relpath_problem(path, known)
        if problem:
            issues.append(f"unsafe path {path!r}: {problem}")
            continue
        if path in files:
            issues.append(f"duplicate path {path!r}")
            continue
        files.add(path)
        if in_known_folder:  # most paths: only the leaf is new, checked right here
            fold = leaf.lower() if leaf.isascii() else _fold(leaf)
            other = seen.setdefault((folded[parent], fold), leaf)
            if other != leaf:
                where = parent or "the root"
                issues.append(
                    f"{other!r} and {leaf!r} in {where} collide on case-insensitive systems"
                )
            continue
        if parent in folded:
            parts = [leaf]
        else:
            parts = path.split("/")
            parent = ""
        for depth, name in enumerate(parts):
            last = depth == len(parts) - 1
            full = f"{parent}/{name}" if parent else name
            if not last and full in folded:  # a directory seen before: checked then
                parent = full
                continue
            fold = _fold(name)
            other = seen.setdefault((folded[parent], fold), name)
            if other != name:
                where = parent or "the root"
                issues.append(
                    f"{other!r} and {name!r} in {where} collide on case-insensitive systems"
                )
            if not last:
                folded[full] = f"{folded[parent]}/{fold}"
                parent = full
    for path in sorted(files & set(folded)):
        issues.append(f"{path!r} is both a file and a directory")
    return sorted(set(issues))


# --------------------------------------------------------------------------- release


class FileRow:
    """One row of ``files.jsonl``."""

    __slots__ = ("family", "package", "path", "sha256", "size")

    def __init__(self, path: str, size: int, sha256: str, family: str, package: str | None):
        self.path, self.size, self.sha256 = path, size, sha256
        self.family, self.package = family, package


class Release:
    """A release directory's authenticated metadata: manifest plus ``files.jsonl`` rows.

    The rows are held once: a list in index order (by family, package, path: each
    package's rows are contiguous) and one dict by path over the same objects.
    """

    def __init__(self, directory: str, manifest: dict[str, Any], rows: list[FileRow]):
        self.directory = directory
        self.manifest = manifest
        self.rows = rows
        self.name: str = manifest["name"]
        self.snapshot_root: str = manifest["snapshot"]["root_sha256"]
        self.families: dict[str, dict[str, Any]] = {f["name"]: f for f in manifest["families"]}
        self.packages: dict[str, dict[str, Any]] = {p["name"]: p for p in manifest["packages"]}
        self.by_path: dict[str, FileRow] = {r.path: r for r in rows}
        self._spans: dict[str | None, tuple[int, int]] = {}
        for index, row in enumerate(rows):
            start = self._spans.get(row.package, (index, 0))[0]
            self._spans[row.package] = (start, index + 1)

    def rows_of(self, package: str) -> dict[str, FileRow]:
        """The rows a package must hold, by path (built on each call)."""
        start, end = self._spans.get(package, (0, 0))
        return {r.path: r for r in self.rows[start:end] if r.package == package}

    def packages_of(self, families: Iterable[str]) -> list[dict[str, Any]]:
        chosen = set(families)
        return [p for name, p in sorted(self.packages.items()) if p["family"] in chosen]


def _need(obj: Any, key: str, kind: Any, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise UnpackError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise UnpackError(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _is_sha(value: Any) -> bool:
    return isinstance(value, str) and _SHA_TEXT.match(value) is not None


def load_release(directory: str) -> Release:
    """Read ``manifest.json`` and ``files.jsonl``, and check that they agree.

    ``files.jsonl`` must hash to the manifest's ``files_jsonl_sha256``, its rows must give
    the snapshot's ``root_sha256`` and its totals, every path must be portable, and each
    package's member count and family must match its rows.
    """
    problem = _not_a_directory(directory)
    if problem:
        raise UnpackError(f"release directory {directory}: {problem}")
    raw = _read_small(directory, MANIFEST_NAME)
    try:
        manifest = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # json recurses once per nesting level
        raise UnpackError(f"{MANIFEST_NAME}: not valid UTF-8 JSON ({exc})") from None
    status = _check_manifest(manifest)
    files_sha = manifest["files_jsonl_sha256"]
    # Streamed: lines are hashed as they are parsed, so the index's text is never held
    # whole next to its rows; no row is used before the whole file's hash matched.
    _read_small(directory, FILES_NAME, limit=0, check_only=True)
    hasher = hashlib.sha256()
    with _open_read_path(os.path.join(directory, FILES_NAME), buffered=True) as fh:

        def hashed_lines() -> Iterator[bytes]:
            for line in fh:
                hasher.update(line)
                yield line

        def mismatch() -> UnpackError | None:
            for line in fh:  # the rest of the file, after a parse error
                hasher.update(line)
            if hasher.hexdigest() == files_sha:
                return None
            return UnpackError(
                f"{FILES_NAME}: SHA-256 {hasher.hexdigest()} does not match "
                f"{MANIFEST_NAME} ({files_sha}); the metadata files are from different releases"
            )

        try:
            rows = parse_index(hashed_lines(), FILES_NAME)
        except UnpackError:
            found = mismatch()
            if found is not None:
                raise found from None
            raise
        found = mismatch()
        if found is not None:
            raise found
    name = manifest["name"]
    room = MAX_PATH_BYTES - len(name.encode("utf-8")) - 1  # for the path below name/
    for r in rows:
        if r.family not in status:
            raise UnpackError(
                f"{_at_row(r)}: family {r.family!r} is not declared in {MANIFEST_NAME}"
            )
        # At most 4 UTF-8 bytes a character: most paths are short enough not to encode.
        if len(r.path) * 4 > room and len(r.path.encode("utf-8")) > room:
            raise UnsafeNameError(
                f"{_at_row(r)}: {name}/<path> is longer than {MAX_PATH_BYTES} bytes"
            )
    _check_snapshot(manifest, rows)
    release = Release(directory, manifest, rows)
    counts: dict[str | None, int] = {}
    for r in rows:
        counts[r.package] = counts.get(r.package, 0) + 1
        if r.package is not None and release.packages.get(r.package, {}).get("family") != r.family:
            raise UnpackError(f"{_at_row(r)}: package {r.package!r} is not a {r.family} package")
        if (r.package is None) != (status[r.family] == "pending"):
            raise UnpackError(f"{_at_row(r)}: package must be null exactly for pending families")
    for pname, pkg in release.packages.items():
        if counts.get(pname, 0) != pkg["member_count"]:
            raise UnpackError(
                f"{MANIFEST_NAME}: package {pname} declares {pkg['member_count']} members, "
                f"{FILES_NAME} assigns {counts.get(pname, 0)}"
            )
    return release


def _check_manifest(manifest: Any) -> dict[str, str]:
    """Check ``manifest.json``'s fields and types; return each family's status."""
    where = MANIFEST_NAME
    if not isinstance(manifest, dict):
        raise UnpackError(f"{where}: expected a JSON object, found {type(manifest).__name__}")
    bad_text = _first_bad_text(manifest)
    if bad_text:
        raise UnpackError(f"{where}: {bad_text}")
    if _need(manifest, "format", str, where) != FORMAT:
        raise UnpackError(f"{where}: format is {manifest['format']!r}, expected {FORMAT!r}")
    version = _need(manifest, "format_version", int, where)
    if version != FORMAT_VERSION:
        raise UnpackError(f"{where}: format_version {version} is not supported (only 1)")
    name = _need(manifest, "name", str, where)
    if "/" in name or _relpath_problem(name):
        raise UnsafeNameError(f"{where}: release root name {name!r} is not a safe directory name")
    snapshot = _need(manifest, "snapshot", dict, where)
    for key in ("root_sha256",):
        if not _is_sha(_need(snapshot, key, str, where + " snapshot")):
            raise UnpackError(f"{where} snapshot: {key} is not 64 lowercase hex digits")
    listed = _need(snapshot, "excluded", list, where + " snapshot")
    if not all(isinstance(path, str) for path in listed):
        raise UnpackError(f"{where} snapshot: field 'excluded' must list paths (strings)")
    families = _need(manifest, "families", list, where)
    status = {}
    for fam in families:
        fname = _need(fam, "name", str, where + " families[]")
        status[fname] = _need(fam, "status", str, f"{where} family {fname}")
        if status[fname] not in ("delivered", "pending"):
            raise UnpackError(f"{where}: family {fname} has unknown status {status[fname]!r}")
    packages = _need(manifest, "packages", list, where)
    for pkg in packages:
        pname = _need(pkg, "name", str, where + " packages[]")
        fam = _need(pkg, "family", str, f"{where} package {pname}")
        for key in ("size", "member_count"):
            if _need(pkg, key, int, f"{where} package {pname}") < 0:
                raise UnpackError(f"{where} package {pname}: field {key!r} must be >= 0")
        if not _is_sha(_need(pkg, "sha256", str, f"{where} package {pname}")):
            raise UnpackError(f"{where}: package {pname} sha256 is not 64 lowercase hex digits")
        if status.get(fam) != "delivered":
            raise UnpackError(f"{where}: package {pname} belongs to undelivered family {fam!r}")
        if pname.count("/") != 1 or not pname.startswith(fam + "/") or _relpath_problem(pname):
            raise UnsafeNameError(f"{where}: package name {pname!r} is not FAMILY/NAME.tar")
    if not _is_sha(_need(manifest, "files_jsonl_sha256", str, where)):
        raise UnpackError(f"{where}: files_jsonl_sha256 is not 64 lowercase hex digits")
    return status


def _first_bad_text(obj: Any, at: str = "") -> str:
    """The first string (key or value) of a JSON document with no UTF-8 encoding."""
    if isinstance(obj, str):
        problem = _text_problem(obj)
        return f"{at or 'value'}: {problem}" if problem else ""
    items: Iterable[tuple[Any, Any]] = ()
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)
    for key, value in items:
        here = f"{at}[{key!r}]" if at else repr(key)
        found = _first_bad_text(key, here) if isinstance(key, str) else ""
        found = found or _first_bad_text(value, here)
        if found:
            return found
    return ""


_ROW_KEYS = frozenset(["path", "size", "sha256", "family", "package"])
_SHA_TEXT = re.compile(r"[0-9a-f]{64}\Z")
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
#: A row as the packer writes it whose strings hold no escape, quote or control character
#: and whose size is a plain decimal: the JSON decoder would return exactly these groups,
#: which pass every check of a row, so they are taken without it (the whole index of a
#: small-file release is such rows; any other line takes the decoder and its checks).
_PLAIN_TEXT = r'"([^"\\\x00-\x1f]*)"'
_PLAIN_ROW = re.compile(
    rf'\{{"family":{_PLAIN_TEXT},"package":(?:{_PLAIN_TEXT}|(null)),"path":{_PLAIN_TEXT},'
    r'"sha256":"([0-9a-f]{64})","size":(0|[1-9][0-9]{0,17})\}\Z'
)


def parse_index(data: bytes | Iterable[bytes], label: str) -> list[FileRow]:
    """Parse ``files.jsonl``: canonical rows, strictly increasing (sorted, no duplicates),
    valid SHA-256 strings and sizes, portable paths within the platform limits.

    *data* is the whole file, or its lines as read from a binary file (each ending in
    ``\n``): then the text is never held whole, only the rows.
    """
    # Split on "\n" only: str.splitlines() would also split inside names holding U+2028,
    # U+0085 or other Unicode line breaks, which are legal file names (binary files'
    # line iteration splits on b"\n" only, too).
    lines = io.BytesIO(data) if isinstance(data, bytes) else data
    rows = []
    previous = ""
    shared: dict[str, str] = {}  # one string per family and package name, not one per row
    for number, raw in enumerate(lines, 1):
        if not raw.endswith(b"\n"):
            raise UnpackError(f"{label}: does not end with a newline (truncated?)")
        raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnpackError(f"{label}: not UTF-8 ({label} line {number}: {exc})") from None
        plain = _PLAIN_ROW.match(line)
        if plain is not None:
            family, package, null, path, sha, digits = plain.groups()
            if line <= previous:
                what = "a duplicate of" if line == previous else "out of order after"
                raise UnpackError(
                    f"{label} line {number}: {what} line {number - 1} (rows are sorted, each once)"
                )
            previous = line
            family = shared.setdefault(family, family)
            package = None if null else shared.setdefault(package, package)
            rows.append(FileRow(path, int(digits), sha, family, package))
            continue
        at = f"{label} line {number}"
        try:
            obj = _DECODER.decode(line)
        except (ValueError, RecursionError):
            raise UnpackError(f"{at}: not valid JSON") from None
        if type(obj) is not dict or obj.keys() != _ROW_KEYS:
            raise UnpackError(f"{at}: expected exactly path, size, sha256, family, package")
        path, size, sha, family, package = (
            obj["path"],
            obj["size"],
            obj["sha256"],
            obj["family"],
            obj["package"],
        )
        if type(path) is not str or type(sha) is not str or type(family) is not str:
            raise UnpackError(f"{at}: path, sha256 and family must be strings")
        if type(size) is not int or size < 0:
            raise UnpackError(f"{at}: size must be a whole number >= 0")
        if package is not None and type(package) is not str:
            raise UnpackError(f"{at}: package must be a string or null")
        # The text decoded as strict UTF-8: only a \\u escape can make a lone surrogate.
        bad_text = _first_bad_text(obj) if "\\u" in line else ""
        if bad_text:
            raise UnpackError(f"{at}: {bad_text}")
        if not _SHA_TEXT.match(sha):
            raise UnpackError(f"{at}: sha256 {sha[:80]!r} is not 64 lowercase hex digits")
        if line <= previous:
            what = "a duplicate of" if line == previous else "out of order after"
            raise UnpackError(f"{at}: {what} line {number - 1} (rows are sorted, each once)")
        previous = line
        family = shared.setdefault(family, family)
        package = package if package is None else shared.setdefault(package, package)
        rows.append(FileRow(path, size, sha, family, package))
    issues = check_tree_names(r.path for r in rows)
    if issues:
        raise UnsafeNameError(f"{label} lists unsafe or colliding paths", issues)
    return rows


def _check_snapshot(manifest: dict[str, Any], rows: list[FileRow]) -> None:
    """The snapshot root and totals, and each family's totals, must be the rows'."""
    where = f"{MANIFEST_NAME} snapshot"
    snapshot = manifest["snapshot"]
    listed = snapshot["excluded"]
    source = _need(snapshot, "source", str, where)
    wanted = 0 if source == "computed" else 1
    if source not in ("computed", "content_manifest") or len(listed) != wanted:
        raise UnpackError(
            f"{where}: excluded {listed!r} with source {source!r}: only a content manifest's "
            "own location may be excluded, and only when the source is content_manifest"
        )
    paths = {r.path for r in rows} if listed else set()
    for path in listed:
        if path.rsplit("/", 1)[-1] != "content_manifest.json" or path not in paths:
            raise UnpackError(
                f"{where}: excluded {path!r} is not a content_manifest.json listed in {FILES_NAME}"
            )
    covered = [r for r in rows if r.path not in listed]
    found = root_sha256((r.path, r.size, r.sha256) for r in covered)
    if found != snapshot["root_sha256"]:
        raise UnpackError(
            f"{FILES_NAME}: rows give root_sha256 {found}, "
            f"{MANIFEST_NAME} says {snapshot['root_sha256']}"
        )
    totals = {"file_count": len(covered), "total_bytes": sum(r.size for r in covered)}
    for key, value in totals.items():
        if _need(snapshot, key, int, where) != value:
            raise UnpackError(f"{where}: {key} {snapshot[key]}, the {FILES_NAME} rows give {value}")
    files: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for r in rows:  # one pass for every family's totals
        files[r.family] = files.get(r.family, 0) + 1
        sizes[r.family] = sizes.get(r.family, 0) + r.size
    for fam in manifest["families"]:
        packages = [p for p in manifest["packages"] if p["family"] == fam["name"]]
        totals = {
            "file_count": files.get(fam["name"], 0),
            "total_bytes": sizes.get(fam["name"], 0),
            "package_count": len(packages),
        }
        for key, value in totals.items():
            if _need(fam, key, int, f"{MANIFEST_NAME} family {fam['name']}") != value:
                raise UnpackError(
                    f"{MANIFEST_NAME} family {fam['name']}: {key} {fam[key]}, "
                    f"the release gives {value}"
                )


def _at_row(row: FileRow) -> str:
    return f"{FILES_NAME} row {row.path!r}"


def _not_a_directory(path: str) -> str:
    """Why an existing *path* cannot serve as a directory ("" if it can or does not exist)."""
    try:
        st = os.stat(path)  # the user's own path: a link to a directory is fine
    except FileNotFoundError:
        try:
            os.lstat(path)
        except OSError:
            return ""
        return "is a symbolic link to a missing target, not a directory"
    except OSError:
        return ""  # reported with its reason where the path is used
    return "" if stat.S_ISDIR(st.st_mode) else "exists and is not a directory"


def _read_small(directory: str, name: str, limit: int = 1 << 26, check_only: bool = False) -> bytes:
    """Read *name* whole (a regular file, no link followed, at most *limit* bytes); with
    *check_only*, only check that it is there as a regular file."""
    path = os.path.join(directory, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise UnpackError(f"{path}: missing; download it next to unpack.py") from None
    except OSError as exc:
        raise UnpackError(f"{path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnpackError(f"{path}: not a regular file (links are not followed)")
    if check_only:
        return b""
    if st.st_size > limit:
        raise UnpackError(f"{path}: {st.st_size} bytes is larger than the {limit} allowed")
    with _open_read_path(path) as fh:
        return fh.read(limit + 1)


def _open_read_path(path: str, buffered: bool = False) -> IO[bytes]:
    """Open a regular file for reading without following a link; *buffered*: through a
    1 MiB buffer (a package of small members then costs one read per MiB, not three
    per member)."""
    # O_NONBLOCK: a FIFO swapped in for a package must fail here, not block the open forever.
    flags = os.O_RDONLY | _O_BINARY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnpackError(f"{path}: not a regular file (links and special files are refused)")
    if flags & getattr(os, "O_NONBLOCK", 0):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb", buffering=CHUNK if buffered else 0)


# --------------------------------------------------------------------------- family choice


def choose_families(release: Release, families: Sequence[str], everything: bool) -> list[str]:
    """Resolve ``--base/--depth/--family`` or ``--all`` to delivered family names."""
    wanted = sorted(release.families) if everything else sorted(set(families))
    if not wanted:
        raise UnpackError("choose what to restore: --base, --depth, --family NAME or --all")
    issues = []
    for fam in wanted:
        info = release.families.get(fam)
        if info is None:
            issues.append(
                f"family {fam!r} is not part of this release (it has {sorted(release.families)})"
            )
        elif info["status"] != "delivered":
            issues.append(
                f"family {fam!r} is declared but not delivered in this release (pending); "
                "download the later release of the same snapshot that delivers it"
            )
    if issues:
        raise UnpackError("cannot restore the chosen families", issues)
    return wanted


# --------------------------------------------------------------------------- tar parsing


class Member:
    """One regular-file member as parsed: its path below the release root and its size."""

    __slots__ = ("path", "size")

    def __init__(self, path: str, size: int) -> None:
        self.path, self.size = path, size


class _Stream:
    """Exact reads from a package, optionally hashing every byte read.

    This script's own bounded read (a buffered reader's ``read(n)`` continues short reads
    until *n* bytes or the end), not ``dataset_devkit.integrity.reads``, which the rest of
    the toolkit shares: this file ships alone and runs on a bare Python, so it imports
    nothing but the standard library.
    """

    def __init__(self, fh: IO[bytes], label: str, hasher: Any) -> None:
        self.fh, self.label, self.hasher, self.offset = fh, label, hasher, 0

    def read(self, n: int) -> bytes:
        data = self.fh.read(n)
        if self.hasher is not None:
            self.hasher.update(data)  # also a short read: the package digest covers it
        if len(data) != n:
            raise TarFormatError(
                f"{self.label}: truncated at byte {self.offset + len(data)} "
                f"(needed {n} more bytes, found {len(data)})"
            )
        self.offset += n
        return data

    def skip(self, n: int) -> None:
        if self.hasher is not None:
            while n:
                n -= len(self.read(min(n, CHUNK)))
            return
        end = self.fh.seek(0, os.SEEK_END)
        if end < self.offset + n:
            raise TarFormatError(f"{self.label}: truncated at byte {end} (member data cut off)")
        self.offset = self.fh.seek(self.offset + n)


def byte_sum(data: bytes) -> int:
    """``sum(data)`` at C speed (a tar header checksum; ``sum`` of 512 bytes was a third of
    checking a package of small members): the low 16 bits of Adler-32 are 1 + the byte sum
    modulo 65521, exact for up to 256 bytes (at most 65,280), so it is taken 256 at a time."""
    if len(data) <= 256:
        return (zlib.adler32(data) & 0xFFFF) - 1
    view = memoryview(data)
    total = 0
    for at in range(0, len(view), 256):
        total += (zlib.adler32(view[at : at + 256]) & 0xFFFF) - 1
    return total


def _header_at(label: str, offset: int) -> str:
    """Where a header is, for an error message (made only when one is raised)."""
    return f"{label} header at byte {offset}"


def _octal(field: bytes, what: str, label: str, offset: int) -> int:
    digits = field.rstrip(b"\x00 ")
    if digits and not digits.strip(b"01234567"):  # the common case (base-256 is not octal)
        return int(digits, 8)
    label = _header_at(label, offset)
    if field[:1] and field[0] & 0x80:
        raise TarFormatError(f"{label}: base-256 {what} field is not accepted (negative or huge)")
    digits = field.rstrip(b"\x00 ")
    if not digits or digits.strip(b"01234567"):
        raise TarFormatError(f"{label}: {what} field {field!r} is not an octal number")
    return int(digits, 8)


def _cstr(field: bytes) -> bytes:
    return field.split(b"\x00", 1)[0]


def _pax(data: bytes, label: str) -> dict[str, str]:
    records: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos, pos + 21)
        if space < 0 or not data[pos:space].isdigit():
            raise TarFormatError(f"{label}: malformed pax record at byte {pos}")
        length = int(data[pos:space])
        record = data[pos : pos + length]
        if length < 5 or len(record) != length or not record.endswith(b"\n") or b"=" not in record:
            raise TarFormatError(f"{label}: malformed pax record at byte {pos}")
        key, value = record[space - pos + 1 : -1].split(b"=", 1)
        try:
            text_key, text = key.decode("utf-8"), value.decode("utf-8")
        except UnicodeDecodeError:
            raise TarFormatError(f"{label}: pax record is not UTF-8") from None
        if text_key not in ("path", "size") or text_key in records:
            raise TarFormatError(f"{label}: pax keyword {text_key!r} is not accepted here")
        records[text_key] = text
        pos += length
    return records


def scan_package(
    fh: IO[bytes],
    label: str,
    root_name: str,
    expected: dict[str, FileRow],
    on_member: Callable[[Member, FileRow, _Stream], None],
    hasher: Any = None,
) -> None:
    """Parse one package strictly and hand each member's data stream to *on_member*.

    *on_member* must consume exactly ``member.size`` bytes (``stream.read``/``stream.skip``).
    The members must be exactly the *expected* rows, each once, as regular files under
    ``root_name/``; the archive must end with two zero blocks followed by zeros only.
    """
    stream = _Stream(fh, label, hasher)
    seen: set[str] = set()
    pax: dict[str, str] | None = None
    while True:
        start = stream.offset
        block = stream.read(BLOCK)
        if block == _ZERO_BLOCK:
            at = _header_at(label, start)
            if pax is not None:
                raise TarFormatError(f"{at}: pax header not followed by a member")
            if stream.read(BLOCK) != _ZERO_BLOCK:
                raise TarFormatError(f"{at}: end-of-archive marker is a single zero block")
            break
        # Error messages name the header by its offset; the text is made only to raise one.
        checksum = _octal(block[148:156], "checksum", label, start)
        if checksum != byte_sum(block) - byte_sum(block[148:156]) + 256:
            at = _header_at(label, start)
            raise TarFormatError(f"{at}: header checksum mismatch (damaged header)")
        if block[257:265] != _USTAR_MAGIC:
            at = _header_at(label, start)
            raise TarFormatError(f"{at}: not a POSIX ustar/pax header (magic {block[257:265]!r})")
        kind = block[156:157]
        size = _octal(block[124:136], "size", label, start)
        if kind == b"x":
            at = _header_at(label, start)
            if pax is not None or size > MAX_PAX_BYTES:
                raise TarFormatError(f"{at}: unexpected or oversized pax header")
            pax = _pax(stream.read(_padded(size))[:size], at)
            continue
        prefix = _cstr(block[345:500]) if block[345] else b""
        raw_name = prefix + b"/" + _cstr(block[:100]) if prefix else _cstr(block[:100])
        try:
            name = pax["path"] if pax and "path" in pax else raw_name.decode("utf-8")
        except UnicodeDecodeError:
            raise TarFormatError(f"{_header_at(label, start)}: member name is not UTF-8") from None
        if pax and "size" in pax:
            # Only ASCII digits: str.isdigit() and int() also take "²" or Arabic-Indic "٢".
            if not pax["size"] or pax["size"].strip("0123456789"):
                raise TarFormatError(
                    f"{label}: member {name!r}: pax size {pax['size']!r} is not a decimal "
                    "number of ASCII digits"
                )
            size = int(pax["size"])
        pax = None
        if kind not in _REGULAR:
            what = _TYPE_NAMES.get(kind, f"type {kind!r}")
            raise TarFormatError(
                f"{label}: member {name!r} is a {what}; only regular files are accepted"
            )
        if block[157]:  # a link target: its first byte is not NUL
            raise TarFormatError(f"{label}: regular member {name!r} carries a link target")
        if name.startswith("/"):
            raise UnsafeNameError(f"{label}: member {name!r} is an absolute path (refused)")
        if not name.startswith(root_name + "/"):
            raise UnsafeNameError(f"{label}: member {name!r} is not under {root_name + '/'!r}")
        if len(seen) >= len(expected):
            raise TarFormatError(f"{label}: more members than the {len(expected)} listed")
        rel = name[len(root_name) + 1 :]
        row = expected.get(rel)  # index paths passed every name rule when it was loaded
        problem = _relpath_problem(rel) if row is None else ""
        if problem:
            raise UnsafeNameError(f"{label}: member {name[:300]!r}: {problem}")
        if row is None:
            raise TarFormatError(
                f"{label}: member {name!r} is not listed for this package in {FILES_NAME}"
            )
        if rel in seen:
            raise TarFormatError(f"{label}: duplicate member {name!r}")
        if size != row.size:
            raise TarFormatError(
                f"{label}: member {name!r} has {size} bytes, {FILES_NAME} says {row.size}"
            )
        seen.add(rel)
        start = stream.offset
        on_member(Member(rel, size), row, stream)
        if stream.offset != start + size:
            raise TarFormatError(f"{label}: internal error: member {name!r} not fully consumed")
        padding = _padded(size) - size
        if padding and stream.read(padding) != bytes(padding):
            raise TarFormatError(f"{label}: non-zero padding after member {name!r}")
    while True:
        tail = fh.read(CHUNK)
        if not tail:
            break
        if hasher is not None:
            hasher.update(tail)
        if tail.count(0) != len(tail):
            raise TarFormatError(f"{label}: data after the end-of-archive marker")
    missing = sorted(set(expected) - seen)
    if missing:
        raise TarFormatError(f"{label}: {len(missing)} listed members are missing", missing[:20])


def _padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _hash_member(stream: _Stream, size: int, sink: Callable[[bytes], Any] | None) -> str:
    if size <= CHUNK:  # one read (most members)
        data = stream.read(size)
        if sink is not None and size:
            sink(data)
        return hashlib.sha256(data).hexdigest()
    hasher = hashlib.sha256()
    left = size
    while left:
        data = stream.read(min(left, CHUNK))
        hasher.update(data)
        if sink is not None:
            sink(data)
        left -= len(data)
    return hasher.hexdigest()


# --------------------------------------------------------------------------- packages


class Summary:
    """What a verify or unpack run did, for the final message."""

    @property
    def placed(self) -> int:
        """Files this run created that are still on disk, while it runs (each worker counts
        its own as they are created and removed, so no lock is taken per file)."""
        return sum(job.placed for job in self.jobs)

    def __init__(self) -> None:
        self.packages = 0
        self.package_bytes = 0
        self.written = 0
        self.skipped = 0
        self.leftovers = 0  # files of a failed restore left in place (named by the journal)
        #: The restore workers' tallies, registered as each starts: :attr:`placed` reads
        #: them even when a run stops in the middle of a package.
        self.jobs: list[Any] = []
        self.families: list[str] = []
        self.output: str | None = None


def _package_path(release: Release, name: str) -> str:
    return os.path.join(release.directory, *name.split("/"))


def _note_unlisted(
    release: Release, packages: list[dict[str, Any]], log: Callable[[str], None]
) -> None:
    """Say which files of the chosen family folders are ignored (``base/.DS_Store``, a
    package of another release): only the packages ``manifest.json`` names are ever read."""
    for fam in sorted({p["family"] for p in packages}):
        listed = {p["name"].split("/", 1)[1] for p in release.packages_of([fam])}
        try:
            present = set(os.listdir(os.path.join(release.directory, fam)))
        except OSError:
            present = set()
        for extra in sorted(present - listed):
            log(f"notice: ignoring {fam}/{extra}: not a package of this release ({MANIFEST_NAME})")


def _stat_package(release: Release, pkg: dict[str, Any]) -> str:
    path = _package_path(release, pkg["name"])
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"package {pkg['name']} is missing (download every package of the family)"
    except OSError as exc:  # e.g. the family folder is a file
        return (
            f"package {pkg['name']} cannot be read ({exc.strerror}: "
            f"{pkg['family']}/ must be a folder)"
        )
    if not stat.S_ISREG(st.st_mode):
        return f"package {pkg['name']} is not a regular file (links are not followed)"
    if st.st_size != pkg["size"]:
        return (
            f"package {pkg['name']} has {st.st_size} bytes, expected {pkg['size']} "
            "(truncated or a different file)"
        )
    return ""


def stat_packages(release: Release, packages: list[dict[str, Any]]) -> list[str]:
    """Problems of presence, type and size of *packages*, without reading them (cheap)."""
    return [msg for msg in (_stat_package(release, p) for p in packages) if msg]


def _byte_counter(
    total: int, progress: Callable[[int, int], None] | None
) -> Callable[[int], None] | None:
    """``advance(n)`` adding to a running count, reported as ``progress(done, total)``."""
    if progress is None:
        return None
    lock, done = threading.Lock(), [0]

    def advance(n: int) -> None:
        with lock:
            done[0] += n
            progress(done[0], total)

    return advance


def check_packages(
    release: Release,
    packages: list[dict[str, Any]],
    workers: int = 2,
    log: Callable[[str], None] = lambda _m: None,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Check that every package is present as a regular file with its size and SHA-256.

    *progress* is called with ``(bytes hashed, bytes of all packages)`` as they are read.
    """
    advance = _byte_counter(sum(int(p["size"]) for p in packages), progress)

    def check(pkg: dict[str, Any]) -> str:
        problem = _stat_package(release, pkg)
        if problem:
            return problem
        with _open_read_path(_package_path(release, pkg["name"])) as fh:
            digest = _hash_open(fh, advance)[1]
        if digest != pkg["sha256"]:
            return f"package {pkg['name']} SHA-256 is {digest}, expected {pkg['sha256']}"
        return ""

    _note_unlisted(release, packages, log)
    issues: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        issues.extend(msg for msg in pool.map(check, packages) if msg)
    if issues:
        raise UnpackError("packages do not verify", issues)


def read_back_package(
    path: str, label: str, root_name: str, rows: dict[str, FileRow]
) -> tuple[str, list[str]]:
    """Parse one package strictly, hashing it whole and every member, in a single read.

    Returns the package's SHA-256 and the members whose SHA-256 differs from *rows*;
    structural problems raise :class:`TarFormatError`.
    """
    hasher = hashlib.sha256()
    bad: list[str] = []

    def member(m: Member, row: FileRow, stream: _Stream) -> None:
        if _hash_member(stream, m.size, None) != row.sha256:
            bad.append(f"{label}: member {m.path!r} SHA-256 differs from {FILES_NAME}")

    with _open_read_path(path, buffered=True) as fh:  # one read per MiB, not 3 per member
        scan_package(fh, label, root_name, rows, member, hasher)
    return hasher.hexdigest(), bad


def verify_release(
    release_dir: str | Release,
    families: Sequence[str] = (),
    everything: bool = False,
    log: Callable[[str], None] = lambda _m: None,
    expect_root: str | None = None,
) -> Summary:
    """Verify the chosen families' packages and every member against ``files.jsonl``.

    Reads each package once: the package SHA-256 and every member's SHA-256 are computed
    from the same bytes while the tar is parsed strictly. Nothing is written.
    """
    release = release_dir if isinstance(release_dir, Release) else load_release(release_dir)
    check_expected_root(release, expect_root)
    chosen = choose_families(release, families, everything)
    packages = release.packages_of(chosen)
    _note_unlisted(release, packages, log)
    issues: list[str] = []

    def verify_one(pkg: dict[str, Any]) -> list[str]:
        problem = _stat_package(release, pkg)
        if problem:
            return [problem]
        try:
            path = _package_path(release, pkg["name"])
            digest, bad = read_back_package(
                path, pkg["name"], release.name, release.rows_of(pkg["name"])
            )
        except UnpackError as exc:
            return [str(exc)]
        if digest != pkg["sha256"]:
            bad.append(f"package {pkg['name']} SHA-256 is {digest}, expected {pkg['sha256']}")
        log(f"verified {pkg['name']}")
        return bad

    # hashlib releases the GIL on large buffers: packages verify in parallel on every core.
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        for found in pool.map(verify_one, packages):
            issues.extend(found)
    if issues:
        raise UnpackError("release does not verify", issues)
    summary = Summary()
    summary.families, summary.packages = chosen, len(packages)
    summary.package_bytes = sum(p["size"] for p in packages)
    return summary


# --------------------------------------------------------------------------- output side


# errno values meaning "this filesystem or kernel lacks the primitive", not "name taken".
_UNSUPPORTED = frozenset(
    getattr(errno, n) for n in ("ENOSYS", "EINVAL", "ENOTSUP", "EOPNOTSUPP") if hasattr(errno, n)
)


def _fsync_dir(fd: int) -> None:
    """Make a directory's new entries durable; a filesystem that cannot is not an error."""
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED and exc.errno != errno.EBADF:
            raise


class PinnedDir:
    """A directory of the output, pinned by descriptor (POSIX) or checked path (Windows)."""

    def __init__(
        self, path: str, fd: int | None, sync: bool = False, made: list[str] | None = None
    ) -> None:
        self.path, self.fd, self.sync = path, fd, sync
        self.dirty = False  # entries were added: with sync, fsync the directory on close
        self._ino: int | None = None
        #: Shared by a walk's directories: the paths of those it created (a failed restore
        #: that leaves no file removes them again).
        self.made = made

    @classmethod
    def open_root(cls, path: str, create: bool, sync: bool = False) -> PinnedDir:
        """Open an existing directory (or create it and its parents) as the top of a walk.

        With *sync*, every directory opened below it is fsynced on :meth:`close` when
        entries were added to it, and so is the parent of a newly created root.
        """
        made = create and not os.path.lexists(path)
        problem = _not_a_directory(path)
        if problem:
            raise UnpackError(f"{path}: {problem}")
        try:
            if create:
                os.makedirs(path, exist_ok=True)
            st = os.stat(path)
        except FileNotFoundError:
            raise UnpackError(f"{path}: no such directory") from None
        except OSError as exc:  # e.g. a regular file or a read-only parent on the way
            raise UnpackError(
                f"{path}: cannot open or create the directory ({exc.strerror})"
            ) from None
        if not stat.S_ISDIR(st.st_mode):
            raise UnpackError(f"{path}: exists and is not a directory")
        if made and sync and _DIR_FD:
            parent = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
            try:
                _fsync_dir(parent)
            finally:
                os.close(parent)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY) if _DIR_FD else None
        return cls(path, fd, sync)

    def _at(self, name: str) -> str:
        return os.path.join(self.path, name)

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            if self.fd is not None:
                return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return os.lstat(self._at(name))
        except FileNotFoundError:
            return None

    @property
    def ino(self) -> int:
        """The pinned directory's inode number (read once, on first use)."""
        if self._ino is None:
            self._ino = os.fstat(self.fd).st_ino if self.fd is not None else 0
        return self._ino

    def child(self, name: str, create: bool) -> PinnedDir:
        """Open (with *create*, first make) the subdirectory *name*, never through a link.

        With descriptors, ``O_NOFOLLOW | O_DIRECTORY`` makes the open itself refuse a link or
        a non-directory at the name, atomically: no ``lstat`` before it is needed (one is
        made only to explain a refusal).
        """
        if self.fd is None:
            return self._child_by_path(name, create)
        where = self._at(name)
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        try:
            fd = os.open(name, flags, dir_fd=self.fd)
        except FileNotFoundError:
            if not create:
                raise UnpackError(f"{where}: directory is missing") from None
            try:
                os.mkdir(name, 0o777, dir_fd=self.fd)
            except FileExistsError:
                pass
            except OSError as exc:
                raise _named(exc, where) from None
            else:
                self.dirty = True
                if self.made is not None:
                    self.made.append(where)
            try:
                fd = os.open(name, flags, dir_fd=self.fd)
            except OSError as exc:
                raise self._refusal(name, exc) from None
        except OSError as exc:
            raise self._refusal(name, exc) from None
        return PinnedDir(where, fd, self.sync, self.made)

    def _refusal(self, name: str, exc: OSError) -> UnpackError:
        """Why *name* could not be opened as a directory without following links."""
        where = self._at(name)
        st = self.lstat(name) if exc.errno in (errno.ELOOP, errno.ENOTDIR) else None
        if st is not None and stat.S_ISLNK(st.st_mode):
            return UnsafeNameError(f"{where}: is a link in the output; it is never followed")
        if st is not None and not stat.S_ISDIR(st.st_mode):
            return UnpackError(f"{where}: exists and is not a directory")
        if isinstance(exc, FileNotFoundError):
            return UnpackError(f"{where}: directory is missing")
        return UnsafeNameError(f"{where}: cannot open without following links ({exc.strerror})")

    def _child_by_path(self, name: str, create: bool) -> PinnedDir:
        """Without descriptors (Windows): check the name with ``lstat`` right before use."""
        where = self._at(name)
        st = self.lstat(name)
        if st is None and create:
            try:
                os.mkdir(where)
            except FileExistsError:
                pass
            except OSError as exc:
                raise _named(exc, where) from None
            else:
                self.dirty = True
                if self.made is not None:
                    self.made.append(where)
            st = self.lstat(name)
        if st is None:
            raise UnpackError(f"{where}: directory is missing")
        if stat.S_ISLNK(st.st_mode) or getattr(st, "st_file_attributes", 0) & _REPARSE_POINT:
            raise UnsafeNameError(f"{where}: is a link in the output; it is never followed")
        if not stat.S_ISDIR(st.st_mode):
            raise UnpackError(f"{where}: exists and is not a directory")
        return PinnedDir(where, None, self.sync, self.made)

    def open_new(self, name: str, mode: int = 0o644) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | getattr(os, "O_NOFOLLOW", 0)
        if self.fd is not None:
            return os.open(name, flags, mode, dir_fd=self.fd)
        return os.open(self._at(name), flags, mode)

    def open_rw(self, name: str) -> int:
        """Open or create *name* for reading and writing (a lock file), never a link."""
        flags = os.O_RDWR | os.O_CREAT | _O_BINARY | getattr(os, "O_NOFOLLOW", 0)
        where = self._at(name)
        try:
            fd = os.open(name, flags, 0o644, dir_fd=self.fd) if self.fd is not None else None
            fd = os.open(where, flags, 0o644) if fd is None else fd
        except OSError as exc:
            raise UnpackError(f"{where}: cannot open ({exc.strerror})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UnpackError(f"{where}: not a regular file")
        return fd

    def open_read(self, name: str) -> IO[bytes]:
        flags = os.O_RDONLY | _O_BINARY | getattr(os, "O_NOFOLLOW", 0)
        if self.fd is not None:
            fd = os.open(name, flags, dir_fd=self.fd)
        else:
            fd = os.open(self._at(name), flags)
        return os.fdopen(fd, "rb", buffering=0)

    def replace(self, src: str, dst: str) -> None:
        self.dirty = True
        if self.fd is not None:
            os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        else:
            os.replace(self._at(src), self._at(dst))

    def unlink(self, name: str) -> None:
        if self.fd is not None:
            os.unlink(name, dir_fd=self.fd)
        else:
            os.unlink(self._at(name))

    def rmdir(self, name: str) -> None:
        """Remove the empty directory *name* (never a link: ``rmdir`` refuses one)."""
        if self.fd is not None and os.rmdir in os.supports_dir_fd:
            os.rmdir(name, dir_fd=self.fd)
        else:
            os.rmdir(self._at(name))  # noqa: PTH106 - str paths, as every call here

    def entries(self) -> list[tuple[str, os.stat_result]]:
        names = sorted(os.listdir(self.fd if self.fd is not None else self.path))
        out = []
        for name in names:
            st = self.lstat(name)
            if st is not None:
                out.append((name, st))
        return out

    def close(self) -> None:
        """Close the descriptor; first fsync it if entries were added and *sync* is on."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            try:
                if self.dirty and self.sync:
                    _fsync_dir(fd)
            finally:
                os.close(fd)


class DirChain:
    """The open directories from the release root down to the current member's parent.

    Descriptors held: one per level of the current path, never one per directory of the
    tree. A directory the chain leaves is handed to *on_leave* (default: closed), which may
    keep it open a little longer (files still being placed in it).
    """

    def __init__(self, root: PinnedDir, on_leave: Callable[[PinnedDir], None] | None = None):
        self.parts: list[str] = []
        self.dirs = [root]
        self.on_leave = on_leave or PinnedDir.close

    def goto(self, parts: list[str], create: bool) -> PinnedDir:
        common = 0
        while common < min(len(parts), len(self.parts)) and parts[common] == self.parts[common]:
            common += 1
        while len(self.parts) > common:
            self.parts.pop()
            self.on_leave(self.dirs.pop())
        for part in parts[common:]:
            self.dirs.append(self.dirs[-1].child(part, create))
            self.parts.append(part)
        return self.dirs[-1]

    def close(self) -> None:
        while len(self.dirs) > 1:
            self.parts.pop()
            self.on_leave(self.dirs.pop())


def _hash_open(fh: IO[bytes], advance: Callable[[int], None] | None = None) -> tuple[int, str]:
    hasher, size = hashlib.sha256(), 0
    for data in iter(lambda: fh.read(CHUNK), b""):
        hasher.update(data)
        size += len(data)
        if advance is not None:
            advance(len(data))
    return size, hasher.hexdigest()


def _existing_tree(
    root: PinnedDir, on_dir: Callable[[PinnedDir], None] | None = None
) -> Iterator[tuple[str, os.stat_result, PinnedDir]]:
    """Walk an existing output root without following links: ``(relpath, lstat, parent)``.

    Depth first, holding one descriptor per level of the current path (a directory is
    opened when its turn comes, not when its parent is listed): a tree of 10,000
    directories walks in a handful of descriptors. *on_dir* sees every directory, the
    root included, before its entries.
    """
    if on_dir is not None:
        on_dir(root)
    stack: list[tuple[str, PinnedDir, Iterator[tuple[str, os.stat_result]]]] = [
        ("", root, iter(root.entries()))
    ]
    try:
        while stack:
            prefix, folder, names = stack[-1]
            entry = next(names, None)
            if entry is None:
                stack.pop()
                if folder is not root:
                    folder.close()
                continue
            name, st = entry
            if stat.S_ISDIR(st.st_mode):
                child = folder.child(name, False)
                try:
                    if on_dir is not None:
                        on_dir(child)
                    listing = iter(child.entries())
                except BaseException:
                    child.close()
                    raise
                stack.append((prefix + name + "/", child, listing))
            else:
                yield prefix + name, st, folder
    finally:
        for _prefix, folder, _names in stack:
            if folder is not root:
                folder.close()


def _preflight(
    release: Release,
    root: PinnedDir,
    chosen: list[str],
    state: dict[str, Any] | None,
    log: Callable[[str], None],
    writable: bool,
    present: set[str] | None = None,
    ours: frozenset[str] = frozenset(),
    kept: Sequence[str] = (),
    found_dirs: dict[str, int] | None = None,
) -> list[str]:
    """Check what the output already holds before anything is written.

    Runs under the output lock, so a ``.unpack-<12 hex>.tmp`` file (an earlier version's
    temporary name) is a leftover of a killed run, never a live peer's: it is removed, and
    so is a file of a package in *ours* (the journal's: packages an interrupted run was
    writing) whose size differs, or that differs and is not restored now: that run's
    partial file. Paths in *kept* were found by that run and are never removed. With
    *writable*, directories sealed read-only by an earlier run are opened for the owner
    again (sealed at the end of this run). The paths of release files found (right size,
    to be verified) are added to *present*: the restore then looks at no other name before
    writing it. With *found_dirs*, every directory's mode before it was opened is recorded
    there by relative path (``""``: the top): they are the user's, and get it back.
    """
    rows = release.by_path
    issues = []
    removed = partial = 0
    foreign = set(kept)

    def unseal(folder: PinnedDir) -> None:
        if folder.fd is not None and (writable or found_dirs is not None):
            mode = stat.S_IMODE(os.fstat(folder.fd).st_mode)
            if found_dirs is not None:
                found_dirs[_rel_dir(root, folder)] = mode
            if writable and mode & 0o700 != 0o700:
                _fchmod(folder.fd, mode | 0o700)

    for rel, st, folder in _existing_tree(root, unseal):
        where = f"{release.name}/{rel}"
        row = rows.get(rel)
        if row is None and stat.S_ISREG(st.st_mode) and _TEMP_NAME.match(os.path.basename(rel)):
            folder.unlink(os.path.basename(rel))
            removed += 1
        elif not stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            issues.append(f"{where}: exists in the output and is not a regular file; kept")
        elif row is None:
            issues.append(
                f"{where}: exists in the output but is not part of snapshot "
                f"{release.snapshot_root[:16]}; never mix snapshots"
            )
        elif (
            row.package in ours
            and rel not in foreign
            and (
                st.st_size != row.size or (row.family not in chosen and not _same(folder, rel, row))
            )
        ):
            folder.unlink(os.path.basename(rel))
            partial += 1
        elif st.st_size != row.size:
            issues.append(
                f"{where}: existing file has {st.st_size} bytes, this release has {row.size}; kept"
            )
        else:
            if present is not None:
                present.add(rel)
            if state is None and row.family not in chosen and not _same(folder, rel, row):
                issues.append(f"{where}: existing file differs from this snapshot; kept")
    if removed:
        log(f"removed {removed} temporary files left by an interrupted run")
    if partial:
        log(f"removed {partial} partly written files left by an interrupted run")
    return issues


def _rel_dir(root: PinnedDir, folder: PinnedDir) -> str:
    """*folder*'s path below *root* as a release path (``""`` for the root itself)."""
    return folder.path[len(root.path) + 1 :].replace(os.sep, "/")


def _same(folder: PinnedDir, rel: str, row: FileRow) -> bool:
    """Whether the file *rel* (in *folder*) holds exactly *row*'s bytes."""
    with folder.open_read(os.path.basename(rel)) as fh:
        return _hash_open(fh) == (row.size, row.sha256)


def _read_state(output: PinnedDir, release: Release) -> dict[str, Any] | None:
    name = release.name + STATE_SUFFIX
    st = output.lstat(name)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise UnpackError(f"{output.path}/{name}: not a regular file")
    with output.open_read(name) as fh:
        try:
            state = json.loads(fh.read(1 << 20).decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise UnpackError(
                f"{output.path}/{name}: unreadable restore state, expected UTF-8 JSON ({exc}); "
                "remove it to restore again (existing files are then hashed)"
            ) from None
    if not isinstance(state, dict) or not _is_sha(state.get("snapshot_root_sha256")):
        raise UnpackError(
            f"{output.path}/{name}: unreadable restore state, expected an object with "
            "snapshot_root_sha256; remove it to restore again (existing files are then hashed)"
        )
    if state.get("snapshot_root_sha256") != release.snapshot_root:
        found = state.get("snapshot_root_sha256")
        raise UnpackError(
            f"{output.path}/{release.name} holds files of snapshot {found}, this release is "
            f"snapshot {release.snapshot_root}; refusing to mix packages of different "
            "source snapshots"
        )
    return state


def _write_small(output: PinnedDir, name: str, body: bytes | Iterable[bytes], fsync: bool) -> str:
    """Write *name* in *output* through a temporary name (``.NAME.PID.tmp``) and a rename;
    return the SHA-256 of what was written. *body* is bytes or an iterable of chunks."""
    tmp = f".{name}.{os.getpid()}.tmp"
    fd = output.open_new(tmp)
    hasher = hashlib.sha256()
    try:
        for chunk in [body] if isinstance(body, bytes) else body:
            hasher.update(chunk)
            _write_all(fd, chunk, os.path.join(output.path, name))
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    output.replace(tmp, name)
    return hasher.hexdigest()


def _write_state(output: PinnedDir, release: Release, families: list[str], fsync: bool) -> None:
    """Record what ``output/NAME`` holds: ``NAME.unpack-index.jsonl`` (a copy of
    ``files.jsonl``, streamed) and ``NAME.unpack-state.json`` (snapshot, families restored
    and absent, the index's SHA-256), in that order, so that ``dataset-devkit verify`` can
    check a partial restore family by family without the release directory."""
    expected = release.manifest["files_jsonl_sha256"]
    with _open_read_path(os.path.join(release.directory, FILES_NAME)) as fh:
        chunks = iter(lambda: fh.read(CHUNK), b"")
        copied = _write_small(output, release.name + INDEX_SUFFIX, chunks, fsync)
    if copied != expected:
        output.unlink(release.name + INDEX_SUFFIX)
        raise UnpackError(f"{FILES_NAME}: changed while restoring")
    body = canonical_json(
        {
            "name": release.name,
            "snapshot_root_sha256": release.snapshot_root,
            "families": sorted(families),
            "release_families": sorted(release.families),
            "files_jsonl_sha256": expected,
        }
    )
    _write_small(output, release.name + STATE_SUFFIX, body + b"\n", fsync)


def _remove_stale_metadata(output: PinnedDir, release: Release) -> None:
    """Remove ``.NAME.unpack-state.json.PID.tmp`` files of killed runs (under the lock)."""
    prefixes = tuple(
        f".{release.name}{suffix}." for suffix in (STATE_SUFFIX, INDEX_SUFFIX, JOURNAL_SUFFIX)
    )
    for name, st in output.entries():
        if name.startswith(prefixes) and name.endswith(".tmp") and stat.S_ISREG(st.st_mode):
            output.unlink(name)


def check_expected_root(release: Release, expect_root: str | None) -> None:
    """Refuse a release whose snapshot root is not the one the user pinned."""
    if expect_root is None:
        return
    if not _is_sha(expect_root.lower()):
        raise UnpackError(f"--expect-root {expect_root!r}: expected 64 hexadecimal digits")
    if expect_root.lower() != release.snapshot_root:
        raise UnpackError(
            f"release {release.name} is snapshot root_sha256 {release.snapshot_root}, "
            f"not the expected {expect_root.lower()} (--expect-root); nothing was written"
        )


def file_modes(readable_by: str | None) -> tuple[int, int] | None:
    """``(file mode, directory mode)`` for ``--readable-by owner|group|all`` (None: leave)."""
    if readable_by is None:
        return None
    if readable_by not in READABLE_BY:
        raise UnpackError(f"readable_by {readable_by!r}: expected one of {sorted(READABLE_BY)}")
    return READABLE_BY[readable_by]


def _seal(folder: PinnedDir, mode: int) -> None:
    if folder.fd is not None and stat.S_IMODE(os.fstat(folder.fd).st_mode) != mode:
        _fchmod(folder.fd, mode)


def unpack_release(
    release_dir: str | Release,
    output: str,
    families: Sequence[str] = (),
    everything: bool = False,
    only_packages: Sequence[str] | None = None,
    log: Callable[[str], None] = lambda _m: None,
    fsync: bool = True,
    readable_by: str | None = "owner",
    expect_root: str | None = None,
    wait: bool = True,
    progress: Callable[[int, int], None] | None = None,
    check_progress: Callable[[int, int], None] | None = None,
) -> Summary:
    """Verify the chosen families' packages, then restore them into ``output/NAME``.

    Files are written at their final names, each hashed as it is written; one whose
    SHA-256 differs from ``files.jsonl``, and every file of a package that does not verify,
    is removed again. ``OUTPUT/NAME.unpack-journal.json`` names the packages being written
    from before the first file is created until all is durable: a re-run after a kill or a
    crash rewrites their incomplete files. Re-runs verify and skip identical files; a
    differing file this restore did not write is an error and is kept. *only_packages*
    restricts the run to some packages (the packer's sample restore test); the structure
    check then covers their files. With *fsync* (the default) every file, name and
    directory is durable before the journal goes and before the return (one ``syncfs`` on
    Linux, else an fsync per file and per directory), so a success message survives a power
    cut; ``fsync=False`` trades that for speed (scratch restores, fast disks).

    One run at a time writes into an output: an advisory lock on ``OUTPUT/NAME.unpack.lock``
    makes a second run wait (or, with ``wait=False``, fail naming the first one's pid). Under
    the lock, the journal of a killed run is read and its partial files are removed or
    rewritten, so re-running the same command finishes an interrupted restore.
    *readable_by* (``owner``, ``group``, ``all``) sets the modes of the files and
    directories the run creates (0400/0500, 0440/0550, 0444/0555); ``None`` leaves the modes
    the umask gives (scratch restores that are deleted right after). What was there before
    keeps its modes (identical files are skipped untouched; directories the run writes into
    get their modes back). Modes are never taken from the archive (no setuid, setgid or
    sticky bit is ever restored). A run that fails before leaving any file of its own
    removes the directories it created and its journal.
    *expect_root* fails the run, before anything is written, unless the release is the
    snapshot with that root hash. *progress* is called with ``(bytes done, bytes in all)``
    once per member as its data is restored or verified; *check_progress* is kept for
    callers of earlier versions and no longer called (each package is hashed in the read
    that restores it, never in a pass of its own).
    """
    modes = file_modes(readable_by)
    _UMASK[0] = os.umask(0o022)  # read it (no call only reads it); set it back at once
    os.umask(_UMASK[0])
    release = release_dir if isinstance(release_dir, Release) else load_release(release_dir)
    check_expected_root(release, expect_root)
    chosen = choose_families(release, families, everything)
    packages = release.packages_of(chosen)
    if only_packages is not None:
        packages = [p for p in packages if p["name"] in set(only_packages)]
    # Each package is hashed in the read that restores it; a package that does not match
    # has its files removed again (_Job): one read instead of two.
    _note_unlisted(release, packages, log)
    problems = stat_packages(release, packages)
    if problems:
        raise UnpackError("packages do not verify", problems)
    log(f"{len(packages)} packages present with the expected size")
    above = _missing_parents(output)
    out = PinnedDir.open_root(output, create=True, sync=fsync)
    out.made = []
    summary = Summary()
    summary.families, summary.output = chosen, os.path.join(output, release.name)
    clean = False  # a failure that left nothing of this run: remove what it created
    try:
        with _OutputLock(out, release.name + LOCK_SUFFIX, output, log, wait):
            _remove_stale_metadata(out, release)
            state = _read_state(out, release)
            journal = _read_journal(out, release)
            ours = frozenset(journal["writing"]) if journal else frozenset()
            existed = out.lstat(release.name) is not None
            root = out.child(release.name, create=True)
            kept: list[str] = list(journal["kept"]) if journal else []
            # What was in the output before this restore began (before the interrupted run
            # it finishes, with a journal) is left as it was: identical files are verified
            # and not touched, folders are opened for writing and get their modes back.
            # Modes are set only on what the restore creates.
            found: frozenset[str] = frozenset(journal["found"]) if journal else frozenset()
            found_dirs: dict[str, int] = dict(journal["found_dirs"]) if journal else {}
            finished = set(state.get("families", []) if state else [])
            # Packages of families an earlier run finished are not journaled: a file of
            # theirs that differs now was changed by someone else and is kept. What the
            # journal cannot tell apart: a file someone placed, identical to the release's,
            # in a tree restored before, then changed between a kill and the re-run; it is
            # taken for that run's partial file and rewritten with the release's bytes.
            writing = ours | {p["name"] for p in packages if p["family"] not in finished}
            try:
                present: set[str] = set()
                issues = _preflight(
                    release,
                    root,
                    chosen,
                    state,
                    log,
                    modes is not None,
                    present,
                    ours,
                    [*kept, *found],
                    found_dirs if existed and journal is None else None,
                )
                if issues:
                    clean = journal is None
                    raise UnpackError(
                        "the output already holds conflicting files; nothing was written", issues
                    )
                # Every file found is the user's, except in the packages an interrupted run
                # was writing: there, only those its journal says it found.
                rows = release.by_path
                found = frozenset(p for p in present if rows[p].package not in ours or p in found)
                # The journal names the files found in its packages (the others are not
                # looked at again) and every folder found: a re-run tells them from its own.
                found_rows = sorted(p for p in found if rows[p].package in writing)
                if writing != ours:
                    # Durable before the first file is created: after a crash at any moment
                    # the next run knows which files may be its own partial ones.
                    _write_journal(out, release, writing, kept, fsync, found_rows, found_dirs)
                try:
                    issues = _restore_packages(
                        release,
                        root,
                        packages,
                        summary,
                        fsync,
                        log,
                        modes and modes[0],
                        progress,
                        present=present,
                        ours=ours,
                        kept=kept,
                        found=found,
                    )
                except BaseException:
                    clean = journal is None and not summary.placed
                    raise
                del present
                if issues:
                    clean = journal is None and not summary.placed
                    if not clean:
                        _write_journal(out, release, writing, kept, fsync, found_rows, found_dirs)
                    raise UnpackError(
                        "restore incomplete: existing files differ or appeared meanwhile (kept)",
                        issues,
                    )
                names: set[str | None] = {p["name"] for p in packages}
                _check_structure(release, root, names, modes and modes[1], found_dirs)
            except BaseException:
                _give_back_modes(root, found_dirs)  # the user's folders, as they were
                raise
            finally:
                root.close()
                if clean:
                    _remove_journal(out, release)
                    _remove_made(out)
            if only_packages is None:
                done = set(chosen) | finished
                _write_state(out, release, sorted(done), fsync)
            left = writing - {p["name"] for p in packages}
            if left:
                if left != writing:
                    _write_journal(out, release, left, kept, fsync, found_rows, found_dirs)
            else:
                _remove_journal(out, release)
    finally:
        out.close()
        if clean:
            for path in above:  # the output folder and the parents made for it, if empty
                with contextlib.suppress(OSError):
                    os.rmdir(path)  # noqa: PTH106 - str paths, as every call here
    summary.jobs.clear()  # they hold the run's listings: not kept past its end
    summary.packages = len(packages)
    summary.package_bytes = sum(p["size"] for p in packages)
    return summary


def _missing_parents(path: str) -> list[str]:
    """*path* and its ancestors that do not exist yet, deepest first (``makedirs`` makes them)."""
    missing = []
    current = os.path.abspath(path)
    while not os.path.lexists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return missing


def _give_back_modes(root: PinnedDir, modes: dict[str, int]) -> None:
    """Set each directory of *modes* (relative path -> mode) back to its mode, deepest
    first, so that every parent is still open while its children are done."""
    for rel in sorted(modes, key=lambda r: (-r.count("/") - bool(r), r)):
        chain = DirChain(root)
        try:
            folder = chain.goto(rel.split("/") if rel else [], create=False)
            if folder.fd is not None and stat.S_IMODE(os.fstat(folder.fd).st_mode) != modes[rel]:
                _fchmod(folder.fd, modes[rel])
        except (OSError, UnpackError):
            pass  # gone, or replaced: nothing of the user's to give back
        finally:
            chain.close()


def _remove_made(out: PinnedDir) -> None:
    """Remove the directories this run created below *out*, deepest first, where empty: a
    restore that failed and left no file of its own leaves no folder either."""
    # Deepest first: two workers may append a parent and its child in either order.
    made = [path[len(out.path) + 1 :].split(os.sep) for path in out.made or []]  # noqa: PTH206
    for parts in sorted(made, key=len, reverse=True):
        chain = DirChain(out)
        try:
            chain.goto(parts[:-1], create=False).rmdir(parts[-1])
        except (OSError, UnpackError):
            pass  # not empty (someone else's file), or gone: kept as it is
        finally:
            chain.close()


def _read_journal(output: PinnedDir, release: Release) -> dict[str, Any] | None:
    """The journal of an interrupted run: the packages it was writing (their files at
    their final names may be partial), the paths it found and kept (someone else's), and
    what the output held before it: the files of those packages found in place and every
    folder (``found``, ``found_dirs``: path -> mode), which it leaves as they were."""
    name = release.name + JOURNAL_SUFFIX
    where = f"{output.path}/{name}"
    st = output.lstat(name)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise UnpackError(f"{where}: not a regular file")
    with output.open_read(name) as fh:
        raw = fh.read(1 << 26)
    try:
        journal = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        journal = None
    if (
        not isinstance(journal, dict)
        or not isinstance(journal.get("writing"), list)
        or not isinstance(journal.get("kept"), list)
        or not all(isinstance(x, str) for x in journal["writing"] + journal["kept"])
        or not _is_sha(journal.get("snapshot_root_sha256"))
        or not isinstance(journal.get("found", []), list)
        or not all(isinstance(x, str) for x in journal.get("found", []))
        or not isinstance(journal.get("found_dirs", {}), dict)
        or not all(type(m) is int for m in journal.get("found_dirs", {}).values())
    ):
        raise UnpackError(
            f"{where}: damaged restore journal (this script writes it whole through a "
            "temporary name, so something else changed it); to restore again, delete it and "
            f"the folder {release.name} it describes"
        )
    if journal["snapshot_root_sha256"] != release.snapshot_root:
        raise UnpackError(
            f"{output.path}/{release.name} holds an interrupted restore of snapshot "
            f"{journal['snapshot_root_sha256']}, this release is snapshot "
            f"{release.snapshot_root}; finish that restore with its own release, or "
            "restore into another folder"
        )
    return {
        "writing": journal["writing"],
        "kept": journal["kept"],
        "found": journal.get("found", []),
        "found_dirs": journal.get("found_dirs", {}),
    }


def _write_journal(
    output: PinnedDir,
    release: Release,
    writing: Iterable[str],
    kept: list[str],
    fsync: bool,
    found: Sequence[str] = (),
    found_dirs: dict[str, int] | None = None,
) -> None:
    """Write ``NAME.unpack-journal.json`` whole (temporary name, fsync, rename, directory
    fsync): it is never torn, and it is on disk before any file it covers is. *found* and
    *found_dirs* (files of its packages and folders that were there before) are recorded
    only when there are any: a restore into a new folder writes neither."""
    record: dict[str, Any] = {
        "snapshot_root_sha256": release.snapshot_root,
        "writing": sorted(writing),
        "kept": sorted(set(kept)),
    }
    if found:
        record["found"] = sorted(found)
    if found_dirs:
        record["found_dirs"] = found_dirs
    body = canonical_json(record)
    _write_small(output, release.name + JOURNAL_SUFFIX, body + b"\n", fsync)
    if fsync and output.fd is not None:
        _fsync_dir(output.fd)


def _remove_journal(output: PinnedDir, release: Release) -> None:
    """The restore it described finished (or never wrote a file): remove the journal."""
    with contextlib.suppress(FileNotFoundError):
        output.unlink(release.name + JOURNAL_SUFFIX)
        output.dirty = True


def _lock_fd(fd: int, blocking: bool) -> None:
    """Take an exclusive lock on *fd*; :class:`BlockingIOError` if busy and not *blocking*."""
    if sys.platform == "win32":  # pragma: no cover - Windows: lock a byte far past the pid
        import msvcrt

        os.lseek(fd, 1 << 30, os.SEEK_SET)
        try:
            while True:
                try:
                    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                    return
                except OSError:
                    if not blocking:
                        raise BlockingIOError from None
                    time.sleep(0.5)
        finally:
            os.lseek(fd, 0, os.SEEK_SET)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))


class _OutputLock:
    """An advisory lock on a file in the output: one restore writes into it at a time.

    ``flock`` (POSIX) or ``msvcrt.locking`` on a byte far past the pid (Windows); the kernel
    drops it when the process dies, however it dies, so a stale lock never blocks a re-run.
    The holder writes its pid into the file for the message a waiting run prints.
    """

    def __init__(
        self, out: PinnedDir, name: str, shown: str, log: Callable[[str], None], wait: bool
    ) -> None:
        self.out, self.name, self.shown, self.log, self.wait = out, name, shown, log, wait
        self.fd: int | None = None
        self.held = False

    def __enter__(self) -> _OutputLock:
        while True:
            fd = self.fd = self.out.open_rw(self.name)
            if not self._try(blocking=False):
                peer = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
                message = f"another restore is running into {self.shown} (pid {peer})"
                if not self.wait:
                    self.__exit__()
                    raise UnpackError(message + "; try again when it has finished")
                self.log(f"notice: {message}; waiting for it to finish")
                self._try(blocking=True)
            # The holder removes the file when it is done: a lock taken on a file that is no
            # longer at the name is worthless, so take the one at the name.
            st = self.out.lstat(self.name)
            if st is not None and st.st_ino == os.fstat(fd).st_ino:
                break
            self.__exit__()
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self.held = True
        return self

    def _try(self, blocking: bool) -> bool:
        assert self.fd is not None
        try:
            _lock_fd(self.fd, blocking)
        except BlockingIOError:
            return False
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise UnpackError(
                f"{self.shown}: cannot lock {self.name} ({exc.strerror}); restore into a "
                "local folder"
            ) from None
        return True

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            try:
                if self.held:
                    self.held = False
                    self.out.unlink(self.name)  # still holding it: waiters will retry
            finally:
                os.close(self.fd)  # closing the last descriptor releases the lock
                self.fd = None


_syncfs_cache: list[Any] = []


def _syncfs_function() -> Callable[[int, str], None] | None:
    """``syncfs(2)`` through :mod:`ctypes` on Linux (None elsewhere, or without it)."""
    if _syncfs_cache:
        return _syncfs_cache[0]  # type: ignore[no-any-return]
    call = None
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            func = ctypes.CDLL(None, use_errno=True).syncfs
            func.argtypes, func.restype = [ctypes.c_int], ctypes.c_int
        except (ImportError, OSError, AttributeError, TypeError):
            func = None
        if func is not None:

            def call(fd: int, where: str) -> None:
                if func(fd) != 0:
                    code = ctypes.get_errno()
                    raise OSError(code, os.strerror(code), where)

    _syncfs_cache.append(call)
    return call


#: With ``syncfs``, the restore starts writing its data to disk while it goes on restoring:
#: a background ``syncfs`` after every this many bytes written (one in flight at a time).
#: The final ``syncfs`` then finds little left: without this, a 512 MiB restore waited at
#: its end for the whole writeback (the kernel starts it only after 30 s or a tenth of the
#: memory). Bytes only: on a tree of tiny files a ``syncfs`` per 4,096 files made the
#: restore about 3x slower (each commits the filesystem's journal while files are created).
EARLY_SYNC_BYTES = 64 << 20


class _EarlySync:
    """``syncfs`` of the output in a background thread whenever :meth:`kick` asks.

    Only a head start for the disk: durability still comes from the one ``syncfs`` after
    every file (:func:`_restore_packages`), and the journal goes only after that. An error
    here is kept and returned by :meth:`close`, to be raised: ``syncfs`` reports a writeback
    error once per descriptor, so the final call would not see it again.
    """

    def __init__(self, syncfs: Callable[[int, str], None], fd: int, where: str) -> None:
        self._syncfs, self._fd, self._where = syncfs, fd, where
        self._cond = threading.Condition()
        self._wanted = self._stopped = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="unpack-early-sync", daemon=True)
        self._thread.start()

    def kick(self) -> None:
        """Ask for a ``syncfs`` (one more after the one in flight, if any); never waits."""
        with self._cond:
            self._wanted = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._wanted and not self._stopped:
                    self._cond.wait()
                if not self._wanted:
                    return
                self._wanted = False
            try:
                self._syncfs(self._fd, self._where)
            except BaseException as exc:  # raised by close(), in the restoring thread
                with self._cond:
                    self._error = self._error or exc
                    self._stopped = True
                return

    def close(self) -> BaseException | None:
        """Stop (a ``syncfs`` in flight is waited for); return the error one met, if any."""
        with self._cond:
            self._stopped, self._wanted = True, False
            self._cond.notify()
        self._thread.join()
        return self._error


def _restore_packages(
    release: Release,
    root: PinnedDir,
    packages: list[dict[str, Any]],
    summary: Summary,
    fsync: bool,
    log: Callable[[str], None],
    file_mode: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 2,
    present: set[str] | None = None,
    ours: frozenset[str] = frozenset(),
    kept: list[str] | None = None,
    found: frozenset[str] = frozenset(),
) -> list[str]:
    """Restore *packages* on *workers* threads, each taking the next package in turn.

    Packages hold disjoint files, so each worker has its own directory chain and tallies
    (merged at the end); hashing and writing then use both cores. After a failure no
    worker starts another package. *present* names the files the output held before (the
    preflight's listing; None: look at each name). *ours* names the packages the journal
    says an interrupted run was writing: a differing file of theirs is that run's partial
    file and is rewritten. Paths kept as found (not ours, differing) are added to *kept*.
    *found* names the files that were there before (the user's, or an earlier restore's):
    verified, never changed (not even their mode), never taken for partial files. With
    *fsync*, everything written is durable on return: one ``syncfs`` (Linux) or an fsync
    per file and per directory; with ``syncfs``, writeback starts in the background as the
    data is written (:class:`_EarlySync`). Returns the kept-file issues; raises the first
    error.
    """
    todo = deque(packages)
    lock = threading.Lock()
    names = {p["name"] for p in packages}
    total = sum(r.size for r in release.rows if r.package in names)
    done = [0]
    syncfs = _syncfs_function() if fsync and root.fd is not None else None
    each = fsync and syncfs is None  # fsync every file, and every directory after its entries

    def advance(n: int) -> None:
        if progress is not None:
            with lock:
                done[0] += n
                progress(done[0], total)

    def leave(folder: PinnedDir) -> None:
        folder.sync = each
        folder.close()

    failed: list[BaseException] = []
    jobs: list[_Job] = []
    foreign = frozenset(kept or ()) | found

    def worker() -> None:
        chain = DirChain(root, leave)
        job = _Job(release, root, chain, file_mode, advance, present, ours, foreign, each)
        job.found, job.early = found, early
        with lock:
            jobs.append(job)
            summary.jobs.append(job)
        try:
            while True:
                with lock:
                    if failed or not todo:
                        break
                    pkg = todo.popleft()
                job.restore(pkg)
                log(f"restored {pkg['name']}")
        except BaseException as exc:
            with lock:
                failed.append(exc)
            raise
        finally:
            chain.close()  # with per-file fsync: each directory fsynced after its entries

    count = max(1, min(workers, len(todo)))
    early = _EarlySync(syncfs, root.fd, root.path) if syncfs and root.fd is not None else None
    try:
        with ThreadPoolExecutor(max_workers=count) as pool:
            futures = [pool.submit(worker) for _ in range(count)]
    finally:
        early_error = early.close() if early is not None else None
    issues: list[str] = []
    for job in jobs:
        summary.written += job.written
        summary.skipped += job.skipped
        summary.leftovers += job.leftovers
        issues.extend(job.issues)
        if kept is not None:
            kept.extend(job.kept)
    for future in futures:
        future.result()  # re-raises a worker's error (the first one in submission order)
    if early_error is not None:
        raise early_error
    if syncfs is not None and packages and root.fd is not None:
        syncfs(root.fd, root.path)  # every file's data, every name, every new directory
    return issues


class _Job:
    """One worker's restore of packages, member by member (see :func:`_restore_packages`).

    Each file is created at its final name (``O_CREAT|O_EXCL|O_NOFOLLOW`` relative to its
    pinned directory: an existing name is never opened for writing) and written while its
    bytes are hashed. A file whose SHA-256 differs from ``files.jsonl`` is removed at once;
    if the package as a whole then fails (its SHA-256, its structure), every file this job
    created for it is removed again. A kill leaves at most the files of the packages in
    flight partly written; the journal (``NAME.unpack-journal.json``, written and made
    durable before the first file) lets the next run recognise them as its own.
    """

    def __init__(
        self,
        release: Release,
        root: PinnedDir,
        chain: DirChain,
        file_mode: int | None,
        advance: Callable[[int], None],
        present: set[str] | None,
        ours: frozenset[str],
        foreign: frozenset[str],
        fsync_each: bool,
    ) -> None:
        self.release, self.root, self.chain = release, root, chain
        self.file_mode, self.advance, self.present = file_mode, advance, present
        self.ours, self.foreign, self.fsync_each = ours, foreign, fsync_each
        # Created with its final mode when the umask keeps it whole (no fchmod: one
        # metadata update less per file); else 0600 and fchmod after the data.
        keeps = file_mode is not None and not file_mode & _UMASK[0]
        self.create_mode = file_mode if keeps else None
        if file_mode is None:
            self.create_mode = 0o644
        self.pkg_name = ""
        self.written = 0
        self.skipped = 0
        self.issues: list[str] = []
        self.kept: list[str] = []
        self.leftovers = 0  # files of failed packages that could not be removed
        self.created: list[tuple[list[str], int, str]] = []  # this package's new files
        self.found: frozenset[str] = frozenset()  # the user's files: verified, left as found
        self.placed = 0  # files created for this run and still there (+1 made, -1 removed)
        self.early: _EarlySync | None = None  # asked for a background syncfs now and then
        self.unsynced_bytes = 0  # written since this job last asked

    def restore(self, pkg: dict[str, Any]) -> None:
        """Restore one package, hashing it whole in the same read; on any failure remove
        the files created for it (none keeps a name unless its whole package matched)."""
        self.pkg_name = name = pkg["name"]
        hasher = hashlib.sha256()
        rows = self.release.rows_of(name)
        self.created = []
        try:
            with _open_read_path(_package_path(self.release, name), buffered=True) as fh:
                try:
                    scan_package(fh, name, self.release.name, rows, self.member, hasher)
                except UnpackError:  # a damaged download is the better diagnosis
                    for data in iter(lambda: fh.read(CHUNK), b""):
                        hasher.update(data)
                    _check_package_digest(pkg, hasher.hexdigest())
                    raise
            _check_package_digest(pkg, hasher.hexdigest())
        except BaseException:
            self._discard()
            raise
        self.written += len(self.created)
        self.created = []

    def _discard(self) -> None:
        """Remove the files created for the failed package (walking again from the root)."""
        chain = DirChain(self.root)
        try:
            for parts, ino, leaf in self.created:
                try:
                    folder = chain.goto(parts, create=False)
                    if folder.ino != ino:
                        raise UnpackError(f"{folder.path}: replaced while restoring")
                    folder.unlink(leaf)
                    self.placed -= 1
                except (OSError, UnpackError):
                    self.leftovers += 1  # the journal must stay to name them
        finally:
            chain.close()
            self.created = []

    def member(self, m: Member, row: FileRow, stream: _Stream) -> None:
        self.advance(m.size)
        parts = m.path.split("/")
        folder = self.chain.goto(parts[:-1], create=True)
        leaf = parts[-1]
        if (self.present is None or m.path in self.present) and not self._settle(
            folder, leaf, row, m.path, False
        ):
            stream.skip(m.size)
            return
        where = os.path.join(folder.path, leaf)
        try:
            fd = folder.open_new(leaf, 0o600 if self.create_mode is None else self.create_mode)
        except FileExistsError:  # appeared since the output was looked at: never replaced
            if not self._settle(folder, leaf, row, m.path, True):
                stream.skip(m.size)
                return
            try:
                fd = folder.open_new(leaf, 0o600 if self.create_mode is None else self.create_mode)
            except OSError as exc:
                raise _named(exc, where) from None
        except OSError as exc:
            raise _named(exc, where) from None
        self.created.append((parts[:-1], folder.ino, leaf))
        self.placed += 1
        folder.dirty = True
        try:
            digest = _hash_member(stream, m.size, lambda data: _write_all(fd, data, where))
            if digest != row.sha256:
                raise UnpackError(
                    f"{self.pkg_name}: member {m.path!r} SHA-256 {digest} differs from {FILES_NAME}"
                )
            if self.file_mode is not None and self.create_mode is None:
                _fchmod(fd, self.file_mode)
            if self.fsync_each:
                try:
                    os.fsync(fd)
                except OSError as exc:
                    raise _named(exc, where) from None
        finally:
            os.close(fd)
        if self.early is not None:
            self.unsynced_bytes += m.size
            if self.unsynced_bytes >= EARLY_SYNC_BYTES:
                self.unsynced_bytes = 0
                self.early.kick()

    def _settle(self, folder: PinnedDir, leaf: str, row: FileRow, rel: str, raced: bool) -> bool:
        """Deal with an existing *leaf*: True when it is (now) free to be written.

        An identical file is verified and skipped; a differing regular file of a package
        an interrupted run was writing (the journal's) is that run's and is removed; any
        other is kept and reported."""
        found = self._existing(folder, leaf, row)
        if found is None:
            return True
        if found == "":
            return False
        if row.package in self.ours and rel not in self.foreign and found == _DIFFERS and not raced:
            folder.unlink(leaf)
            folder.dirty = True
            return True
        where = os.path.join(folder.path, leaf)
        if raced:
            found = "appeared while restoring (another writer?)"
        self.issues.append(f"{where}: {found}; kept" + (", not replaced" if raced else ""))
        self.kept.append(rel)
        return False

    def _existing(self, folder: PinnedDir, leaf: str, row: FileRow) -> str | None:
        """None if *leaf* does not exist; else "" (verified, skipped) or what is wrong.

        A verified file gets the restore's mode, unless it is one the user had (*found*):
        skipping it leaves it untouched."""
        where = os.path.join(folder.path, leaf)
        flags = os.O_RDONLY | _O_BINARY | getattr(os, "O_NOFOLLOW", 0)
        flags |= getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block the open
        try:
            if folder.fd is not None:
                fd = os.open(leaf, flags, dir_fd=folder.fd)
            else:
                st = os.lstat(where)
                if stat.S_ISLNK(st.st_mode):
                    return "exists and is not a regular file"
                fd = os.open(where, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "exists and is not a regular file"
            raise _named(exc, where) from None
        with os.fdopen(fd, "rb", buffering=0) as fh:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return "exists and is not a regular file"
            if _hash_open(fh) != (row.size, row.sha256):
                return _DIFFERS
            self.skipped += 1
            if (
                self.file_mode is not None
                and stat.S_IMODE(st.st_mode) != self.file_mode
                and row.path not in self.found
            ):
                _fchmod(fd, self.file_mode)
        return ""


_DIFFERS = f"existing file differs from {FILES_NAME}"


def _check_package_digest(pkg: dict[str, Any], digest: str) -> None:
    if digest != pkg["sha256"]:
        raise UnpackError(
            "packages do not verify",
            [f"package {pkg['name']} SHA-256 is {digest}, expected {pkg['sha256']}"],
        )


def _write_all(fd: int, data: bytes, where: str) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise _named(exc, where) from None


def _named(exc: OSError, path: str) -> OSError:
    """The same error, naming *path* (calls relative to a descriptor know only a leaf)."""
    return OSError(exc.errno, exc.strerror or str(exc), path)


def _fchmod(fd: int, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)


def _check_structure(
    release: Release,
    root: PinnedDir,
    wanted: set[str | None],
    dir_mode: int | None,
    theirs: dict[str, int] | None = None,
) -> None:
    """The tree must hold only listed regular files of the listed sizes, and every file of
    the packages in *wanted*; with *dir_mode*, every directory is sealed to it on the way,
    except those of *theirs* (relative path -> mode: the user's, found before the restore),
    which get their own mode back. Found files are counted, not collected: the missing
    ones are listed only when the count falls short."""
    rows = release.by_path
    issues = []
    found = 0
    theirs = theirs or {}

    def seal(folder: PinnedDir) -> None:
        if dir_mode is not None and (not theirs or _rel_dir(root, folder) not in theirs):
            _seal(folder, dir_mode)

    for rel, st, _folder in _existing_tree(root, seal):
        row = rows.get(rel)
        if row is None or not stat.S_ISREG(st.st_mode):
            issues.append(f"{release.name}/{rel}: not part of this release")
        elif st.st_size != row.size:
            issues.append(f"{release.name}/{rel}: size {st.st_size}, expected {row.size}")
        if row is not None and row.package in wanted:
            found += 1
    if found < sum(1 for r in release.rows if r.package in wanted):
        issues.extend(
            f"{release.name}/{r.path}: missing after restore"
            for r in release.rows
            if r.package in wanted and not _exists(root, r.path)
        )
    if issues:
        raise UnpackError("restored tree does not match the release", issues)
    if dir_mode is not None:
        _give_back_modes(root, theirs)


def _exists(root: PinnedDir, path: str) -> bool:
    """Whether the regular file *path* exists below *root* (no link followed)."""
    parts = path.split("/")
    chain = DirChain(root)
    try:
        st = chain.goto(parts[:-1], create=False).lstat(parts[-1])
    except UnpackError:
        return False
    finally:
        chain.close()
    return st is not None and stat.S_ISREG(st.st_mode)


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(
        prog="unpack.py",
        description="Verify and restore this release (standard library only, Python >= 3.9).",
    )
    p.add_argument("--base", action="store_true", help="the base family")
    p.add_argument("--depth", action="store_true", help="the depth family")
    p.add_argument("--family", action="append", default=[], metavar="NAME", help="another family")
    p.add_argument("--all", action="store_true", help="every family of the release")
    p.add_argument("--output", metavar="DIR", help="restore into DIR/<release root>")
    p.add_argument("--verify-only", action="store_true", help="verify packages, write nothing")
    p.add_argument(
        "--release-dir", default=here, metavar="DIR", help="default: this script's folder"
    )
    p.add_argument(
        "--no-fsync",
        action="store_true",
        help="skip fsync of each file and directory (faster; not safe against power loss)",
    )
    p.add_argument(
        "--expect-root",
        metavar="HEX",
        help="fail unless the release is the snapshot with this root_sha256",
    )
    p.add_argument(
        "--readable-by",
        choices=sorted(READABLE_BY),
        default="owner",
        help="who may read the restored tree: owner 0400/0500 (default), group 0440/0550, "
        "all 0444/0555",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="fail instead of waiting when another restore is running into the same output",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


class _TtyProgress:
    """One self-overwriting line of bytes checked, then restored, at most five times a
    second (a terminal only: logs and pipes get no carriage returns)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream, self.last, self.shown, self.label = stream, 0.0, False, "restoring"
        self.lock = threading.Lock()  # packages are checked on several threads

    def checking(self, done: int, total: int) -> None:
        self.update(done, total, "checking")

    def update(self, done: int, total: int, label: str = "restoring") -> None:
        with self.lock:
            if label != self.label:  # a new phase starts on a clean line
                self.clear()
                self.label, self.last = label, 0.0
            now = time.monotonic()
            if now - self.last < 0.2 and done < total:
                return
            self.last, self.shown = now, True
            share = 100 * done // total if total else 100
            mib = f"{done / 2**20:.1f} of {total / 2**20:.1f} MiB"
            self.stream.write(f"\r{label}: {mib} ({share}%)")
            self.stream.flush()

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.shown = False


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 failure, 2 usage)."""
    parser = _parser()
    args = parser.parse_args(argv)
    families = (
        list(args.family) + (["base"] if args.base else []) + (["depth"] if args.depth else [])
    )
    if not families and not args.all:
        parser.error("choose --base, --depth, --family NAME or --all")
    if not args.verify_only and not args.output:
        parser.error("--output DIR is required unless --verify-only")
    if args.verify_only and args.output:
        parser.error("--verify-only writes nothing: drop --output DIR, or drop --verify-only")

    bar = _TtyProgress(sys.stderr) if not args.quiet and sys.stderr.isatty() else None

    def log(message: str) -> None:
        if not args.quiet or message.startswith("notice:"):  # notices show with --quiet
            if bar is not None:
                bar.clear()
            sys.stderr.write(message + "\n")

    try:
        if args.verify_only:
            s = verify_release(args.release_dir, families, args.all, log, args.expect_root)
            sys.stdout.write(
                f"OK: {s.packages} packages ({s.package_bytes} bytes) of "
                f"{', '.join(s.families)} verified\n"
            )
        else:
            s = unpack_release(
                args.release_dir,
                args.output,
                families,
                args.all,
                log=log,
                fsync=not args.no_fsync,
                readable_by=args.readable_by,
                expect_root=args.expect_root,
                wait=not args.no_wait,
                progress=bar.update if bar is not None else None,
                check_progress=bar.checking if bar is not None else None,
            )
            if bar is not None:
                bar.clear()
            sys.stdout.write(
                f"OK: {', '.join(s.families)} restored into {s.output}: {s.written} files written, "
                f"{s.skipped} already present and verified\n"
            )
    except UnpackError as exc:
        if bar is not None:
            bar.clear()
        sys.stderr.write(f"FAILED: {exc}\n")
        return 1
    except OSError as exc:
        if bar is not None:
            bar.clear()
        where = f": {exc.filename}" if exc.filename else ""
        sys.stderr.write(f"FAILED: {exc.strerror or exc}{where}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
