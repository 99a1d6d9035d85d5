#!/usr/bin/env python3
"""Verify and restore a dataset-devkit release with nothing but the Python standard library.

This one file ships inside every release next to ``manifest.json``; it needs Python 3.9 or
newer and no third-party package. Typical use, from the release directory::

    python unpack.py --base --verify-only
    python unpack.py --base --output ./data
    python unpack.py --depth --output ./data      # later: add a family into the same output
    python unpack.py --all --output ./data

Why not ``tarfile.extractall``: Python's extraction filters could be made to write outside the
output on unpatched releases (CVE-2025-4517), GNU tar follows symlinks planted in the output,
and both tarfile and bsdtar stop or skip silently on a damaged header. This script never calls
``extract()``; it authenticates ``files.jsonl`` against ``manifest.json``, checks every chosen
package's size and SHA-256, parses each tar by hand (exactly the indexed members, regular files
only, no duplicates, valid checksums, no truncation, only zeros after the end marker, a member
cap), and writes every file itself through a temporary name, relative to directory descriptors
opened one level at a time without following links, moving it into place only after its
SHA-256 matched and only with a primitive that fails if the name exists (``renameat2``
``RENAME_NOREPLACE``, ``renameatx_np`` ``RENAME_EXCL`` or a hard link). Each file is fsynced
before it gets its name and each directory after its entries (``--no-fsync`` skips both).
Existing identical files are verified and skipped; an existing file that differs is reported
and kept. Any failure exits non-zero.

On platforms without ``dir_fd`` support (Windows) every path component is checked with
``lstat`` (links and reparse points refused) right before use; that is weaker against a
concurrent attacker in the output directory but still never follows a link it has seen.
"""

# dir_fd-relative os calls on str paths are the point here; pathlib has no equivalent.
# ruff: noqa: PTH100, PTH102, PTH103, PTH104, PTH105, PTH108, PTH116, PTH118, PTH119, PTH120, PTH208
from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import stat
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

FORMAT = "dataset-devkit-release"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
FILES_NAME = "files.jsonl"
STATE_SUFFIX = ".unpack-state.json"
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
    """Return the content-manifest root hash of ``(path, size, sha256)`` entries."""
    rows = [{"path": p, "size": s, "sha256": h} for p, s, h in sorted(entries)]
    return hashlib.sha256(canonical_json(rows)).hexdigest()


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


def _relpath_problem(path: str) -> str:
    if not path:
        return "empty path"
    if path.startswith("/"):
        return "absolute path"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return f"component {part!r} is not allowed"
        bad = sorted(set(part) & _WINDOWS_BAD_CHARS)
        if bad:
            return f"component {part!r} has characters Windows rejects: {bad!r}"
        if part[-1] in ". ":
            return f"component {part!r} ends with a dot or a space (Windows drops it)"
        if part.split(".")[0].rstrip(" ").upper() in _WINDOWS_RESERVED:
            return f"component {part!r} is a reserved device name on Windows"
    return ""


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def check_tree_names(paths: Iterable[str]) -> list[str]:
    """Return every name problem of a set of file paths, sorted (empty when fine).

    Besides :func:`check_relpath`, two entries of one directory must not differ only in
    case or Unicode normalization (they collide on Windows and macOS), and no path may be
    both a file and a directory.
    """
    issues = []
    files = set()
    seen: dict[tuple[str, str], str] = {}
    dirs = set()
    for path in paths:
        problem = _relpath_problem(path)
        if problem:
            issues.append(f"unsafe path {path!r}: {problem}")
            continue
        if path in files:
            issues.append(f"duplicate path {path!r}")
            continue
        files.add(path)
        parts = path.split("/")
        for depth in range(len(parts)):
            parent, name = "/".join(parts[:depth]), parts[depth]
            if depth < len(parts) - 1:
                dirs.add("/".join(parts[: depth + 1]))
            key = (_fold(parent), _fold(name))
            other = seen.setdefault(key, name)
            if other != name:
                where = parent or "the root"
                issues.append(
                    f"{other!r} and {name!r} in {where} collide on case-insensitive systems"
                )
    for path in sorted(files & dirs):
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
    """A release directory's authenticated metadata: manifest plus ``files.jsonl`` rows."""

    def __init__(self, directory: str, manifest: dict[str, Any], rows: list[FileRow]):
        self.directory = directory
        self.manifest = manifest
        self.rows = rows
        self.name: str = manifest["name"]
        self.snapshot_root: str = manifest["snapshot"]["root_sha256"]
        self.families: dict[str, dict[str, Any]] = {f["name"]: f for f in manifest["families"]}
        self.packages: dict[str, dict[str, Any]] = {p["name"]: p for p in manifest["packages"]}
        self._by_package: dict[str | None, dict[str, FileRow]] = {}
        for row in rows:
            self._by_package.setdefault(row.package, {})[row.path] = row

    def rows_of(self, package: str) -> dict[str, FileRow]:
        """The rows a package must hold, by path."""
        return self._by_package.get(package, {})

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
    return isinstance(value, str) and len(value) == 64 and set(value) <= set("0123456789abcdef")


def load_release(directory: str) -> Release:
    """Read ``manifest.json`` and ``files.jsonl``, and check that they agree.

    ``files.jsonl`` must hash to the manifest's ``files_jsonl_sha256``, its rows must give
    the snapshot's ``root_sha256``, every path must be portable, and each package's member
    count and family must match its rows.
    """
    problem = _not_a_directory(directory)
    if problem:
        raise UnpackError(f"release directory {directory}: {problem}")
    raw = _read_small(directory, MANIFEST_NAME)
    try:
        manifest = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # json recurses once per nesting level
        raise UnpackError(f"{MANIFEST_NAME}: not valid UTF-8 JSON ({exc})") from None
    where = MANIFEST_NAME
    if not isinstance(manifest, dict):
        raise UnpackError(f"{where}: expected a JSON object, found {type(manifest).__name__}")
    if _need(manifest, "format", str, where) != FORMAT:
        raise UnpackError(f"{where}: format is {manifest['format']!r}, expected {FORMAT!r}")
    version = _need(manifest, "format_version", int, where)
    if version != FORMAT_VERSION:
        raise UnpackError(f"{where}: format_version {version} is not supported (only 1)")
    name = _need(manifest, "name", str, where)
    if "/" in name or _relpath_problem(name):
        raise UnsafeNameError(f"{where}: release root name {name!r} is not a safe directory name")
    snapshot = _need(manifest, "snapshot", dict, where)
    root = _need(snapshot, "root_sha256", str, where + " snapshot")
    listed = _need(snapshot, "excluded", list, where + " snapshot")
    if not all(isinstance(path, str) for path in listed):
        raise UnpackError(f"{where} snapshot: field 'excluded' must list paths (strings)")
    excluded = set(listed)
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
    files_sha = _need(manifest, "files_jsonl_sha256", str, where)
    data = _read_small(directory, FILES_NAME, limit=1 << 34)
    if hashlib.sha256(data).hexdigest() != files_sha:
        raise UnpackError(
            f"{FILES_NAME}: SHA-256 {hashlib.sha256(data).hexdigest()} does not match "
            f"{MANIFEST_NAME} ({files_sha}); the metadata files are from different releases"
        )
    rows = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnpackError(f"{FILES_NAME}: not UTF-8 ({exc})") from None
    # Split on "\n" only: str.splitlines() would also split inside names holding U+2028,
    # U+0085 or other Unicode line breaks, which are legal file names.
    lines = text.split("\n")
    if lines[-1]:
        raise UnpackError(f"{FILES_NAME}: does not end with a newline (truncated?)")
    for number, line in enumerate(lines[:-1], 1):
        at = f"{FILES_NAME} line {number}"
        try:
            obj = json.loads(line, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise UnpackError(f"{at}: not valid JSON") from None
        pkg_name = obj.get("package") if isinstance(obj, dict) else None
        row = FileRow(
            _need(obj, "path", str, at),
            _need(obj, "size", int, at),
            _need(obj, "sha256", str, at),
            _need(obj, "family", str, at),
            pkg_name if pkg_name is None else _need(obj, "package", str, at),
        )
        if set(obj) != {"path", "size", "sha256", "family", "package"} or row.size < 0:
            raise UnpackError(f"{at}: expected exactly path, size, sha256, family, package")
        if row.family not in status:
            raise UnpackError(f"{at}: family {row.family!r} is not declared in {MANIFEST_NAME}")
        rows.append(row)
    issues = check_tree_names(r.path for r in rows)
    if issues:
        raise UnsafeNameError(f"{FILES_NAME} lists unsafe or colliding paths", issues)
    found = root_sha256((r.path, r.size, r.sha256) for r in rows if r.path not in excluded)
    if found != root:
        raise UnpackError(
            f"{FILES_NAME}: rows give root_sha256 {found}, {MANIFEST_NAME} says {root}"
        )
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


def _read_small(directory: str, name: str, limit: int = 1 << 26) -> bytes:
    path = os.path.join(directory, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise UnpackError(f"{path}: missing; download it next to unpack.py") from None
    except OSError as exc:
        raise UnpackError(f"{path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnpackError(f"{path}: not a regular file (links are not followed)")
    if st.st_size > limit:
        raise UnpackError(f"{path}: {st.st_size} bytes is larger than the {limit} allowed")
    with _open_read_path(path) as fh:
        return fh.read(limit + 1)


def _open_read_path(path: str) -> IO[bytes]:
    # O_NONBLOCK: a FIFO swapped in for a package must fail here, not block the open forever.
    flags = os.O_RDONLY | _O_BINARY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnpackError(f"{path}: not a regular file (links and special files are refused)")
    if flags & getattr(os, "O_NONBLOCK", 0):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb", buffering=0)


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
    """Exact reads from a package, optionally hashing every byte read."""

    def __init__(self, fh: IO[bytes], label: str, hasher: Any) -> None:
        self.fh, self.label, self.hasher, self.offset = fh, label, hasher, 0

    def read(self, n: int) -> bytes:
        data = self.fh.read(n)
        if len(data) != n:
            raise TarFormatError(
                f"{self.label}: truncated at byte {self.offset + len(data)} "
                f"(needed {n} more bytes, found {len(data)})"
            )
        self.offset += n
        if self.hasher is not None:
            self.hasher.update(data)
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


def _octal(field: bytes, what: str, label: str) -> int:
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
        at = f"{label} header at byte {stream.offset}"
        block = stream.read(BLOCK)
        if block == _ZERO_BLOCK:
            if pax is not None:
                raise TarFormatError(f"{at}: pax header not followed by a member")
            if stream.read(BLOCK) != _ZERO_BLOCK:
                raise TarFormatError(f"{at}: end-of-archive marker is a single zero block")
            break
        checksum = _octal(block[148:156], "checksum", at)
        if checksum != sum(block[:148]) + 256 + sum(block[156:]):
            raise TarFormatError(f"{at}: header checksum mismatch (damaged header)")
        if block[257:265] != _USTAR_MAGIC:
            raise TarFormatError(f"{at}: not a POSIX ustar/pax header (magic {block[257:265]!r})")
        kind = block[156:157]
        size = _octal(block[124:136], "size", at)
        if kind == b"x":
            if pax is not None or size > MAX_PAX_BYTES:
                raise TarFormatError(f"{at}: unexpected or oversized pax header")
            pax = _pax(stream.read(_padded(size))[:size], at)
            continue
        raw_name = _cstr(block[345:500]) + b"/" + _cstr(block[:100])
        raw_name = raw_name.lstrip(b"/") if not _cstr(block[345:500]) else raw_name
        try:
            name = pax["path"] if pax and "path" in pax else raw_name.decode("utf-8")
        except UnicodeDecodeError:
            raise TarFormatError(f"{at}: member name is not UTF-8") from None
        if pax and "size" in pax:
            if not pax["size"].isdigit():
                raise TarFormatError(f"{at}: pax size {pax['size']!r} is not a number")
            size = int(pax["size"])
        pax = None
        if kind not in _REGULAR:
            what = _TYPE_NAMES.get(kind, f"type {kind!r}")
            raise TarFormatError(
                f"{label}: member {name!r} is a {what}; only regular files are accepted"
            )
        if _cstr(block[157:257]):
            raise TarFormatError(f"{label}: regular member {name!r} carries a link target")
        if not name.startswith(root_name + "/"):
            raise UnsafeNameError(f"{label}: member {name!r} is not under {root_name + '/'!r}")
        if len(seen) >= len(expected):
            raise TarFormatError(f"{label}: more members than the {len(expected)} listed")
        rel = name[len(root_name) + 1 :]
        check_relpath(rel)
        row = expected.get(rel)
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

    def __init__(self) -> None:
        self.packages = 0
        self.package_bytes = 0
        self.written = 0
        self.skipped = 0
        self.families: list[str] = []
        self.output: str | None = None


def _package_path(release: Release, name: str) -> str:
    return os.path.join(release.directory, *name.split("/"))


def _extra_packages(release: Release, packages: list[dict[str, Any]]) -> list[str]:
    issues: list[str] = []
    for fam in sorted({p["family"] for p in packages}):
        listed = {p["name"].split("/", 1)[1] for p in release.packages_of([fam])}
        try:
            present = set(os.listdir(os.path.join(release.directory, fam)))
        except OSError:
            present = set()
        issues.extend(
            f"extra package {fam}/{x} is not listed in {MANIFEST_NAME} (from another release?)"
            for x in sorted(present - listed)
        )
    return issues


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


def check_packages(release: Release, packages: list[dict[str, Any]], workers: int = 2) -> None:
    """Check that every package is present as a regular file with its size and SHA-256."""

    def check(pkg: dict[str, Any]) -> str:
        problem = _stat_package(release, pkg)
        if problem:
            return problem
        with _open_read_path(_package_path(release, pkg["name"])) as fh:
            digest = _hash_open(fh)[1]
        if digest != pkg["sha256"]:
            return f"package {pkg['name']} SHA-256 is {digest}, expected {pkg['sha256']}"
        return ""

    issues = _extra_packages(release, packages)
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

    with _open_read_path(path) as fh:
        scan_package(fh, label, root_name, rows, member, hasher)
    return hasher.hexdigest(), bad


def verify_release(
    release_dir: str,
    families: Sequence[str] = (),
    everything: bool = False,
    log: Callable[[str], None] = lambda _m: None,
) -> Summary:
    """Verify the chosen families' packages and every member against ``files.jsonl``.

    Reads each package once: the package SHA-256 and every member's SHA-256 are computed
    from the same bytes while the tar is parsed strictly. Nothing is written.
    """
    release = load_release(release_dir)
    chosen = choose_families(release, families, everything)
    packages = release.packages_of(chosen)
    issues = _extra_packages(release, packages)

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
_NO_HARD_LINKS = _UNSUPPORTED | {errno.EPERM, errno.EMLINK, errno.EXDEV}
_RENAMEAT_FLAGS = {"linux": ("renameat2", 1), "darwin": ("renameatx_np", 4)}
_renameat_cache: list[Any] = []


def _renameat_noreplace() -> Callable[[int, str, str], None] | None:
    """``renameat2(RENAME_NOREPLACE)`` (Linux) or ``renameatx_np(RENAME_EXCL)`` (macOS).

    Loaded through :mod:`ctypes` from the C library on first use; ``None`` where neither
    exists (other systems, old glibc, no ctypes). The call raises :class:`OSError` with the
    C ``errno``; ``EEXIST`` means the name is taken and nothing was renamed.
    """
    if _renameat_cache:
        return _renameat_cache[0]  # type: ignore[no-any-return]
    call = None
    name, flag = _RENAMEAT_FLAGS.get(
        "linux" if sys.platform.startswith("linux") else sys.platform, ("", 0)
    )
    try:
        import ctypes

        func = getattr(ctypes.CDLL(None, use_errno=True), name) if name else None
    except (ImportError, OSError, AttributeError, TypeError):
        func = None
    if func is not None:
        func.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        func.restype = ctypes.c_int

        def call(dir_fd: int, src: str, dst: str) -> None:
            if func(dir_fd, os.fsencode(src), dir_fd, os.fsencode(dst), flag) != 0:
                code = ctypes.get_errno()
                raise OSError(code, os.strerror(code), dst)

    _renameat_cache.append(call)
    return call


def _place_noreplace(dir_fd: int | None, src: str, dst: str) -> None:
    """Rename *src* to *dst* (names in *dir_fd*, or paths) so that an existing *dst* is kept.

    Raises :class:`FileExistsError` when *dst* exists, whenever it appeared. The primitive
    is atomic with respect to the name, tried in this order: ``renameat2`` with
    ``RENAME_NOREPLACE`` (Linux) / ``renameatx_np`` with ``RENAME_EXCL`` (macOS); a hard
    link to the new name (fails when the name exists; Linux, macOS, NTFS) followed by
    unlinking the temporary name; on Windows without descriptors, ``os.rename`` (which
    never replaces there). Only on a filesystem with none of these (e.g. exFAT on macOS)
    the name is first claimed with ``O_CREAT|O_EXCL`` and the temporary file then renamed
    over that empty placeholder: a concurrent creator still fails or makes this fail.
    """
    if dir_fd is not None:
        renameat = _renameat_noreplace()
        if renameat is not None:
            try:
                renameat(dir_fd, src, dst)
                return
            except OSError as exc:
                if exc.errno == errno.EEXIST:
                    raise FileExistsError(errno.EEXIST, "exists", dst) from None
                if exc.errno not in _UNSUPPORTED:
                    raise
    elif os.name == "nt":
        os.rename(src, dst)  # MoveFileExW without REPLACE_EXISTING: FileExistsError
        return
    fds = {} if dir_fd is None else {"src_dir_fd": dir_fd, "dst_dir_fd": dir_fd}
    at = {} if dir_fd is None else {"dir_fd": dir_fd}
    if hasattr(os, "link") and (dir_fd is None or os.link in os.supports_dir_fd):
        nofollow = {"follow_symlinks": False} if os.link in os.supports_follow_symlinks else {}
        try:
            os.link(src, dst, **fds, **nofollow)  # type: ignore[arg-type]
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
        else:
            os.unlink(src, **at)
            return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | getattr(os, "O_NOFOLLOW", 0)
    os.close(os.open(dst, flags, 0o644, **at))
    if dir_fd is not None:
        os.replace(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    else:
        os.replace(src, dst)


def _fsync_dir(fd: int) -> None:
    """Make a directory's new entries durable; a filesystem that cannot is not an error."""
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED and exc.errno != errno.EBADF:
            raise


class PinnedDir:
    """A directory of the output, pinned by descriptor (POSIX) or checked path (Windows)."""

    def __init__(self, path: str, fd: int | None, sync: bool = False) -> None:
        self.path, self.fd, self.sync = path, fd, sync
        self.dirty = False  # entries were added: with sync, fsync the directory on close

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

    def child(self, name: str, create: bool) -> PinnedDir:
        where = self._at(name)
        st = self.lstat(name)
        if st is None and create:
            try:
                if self.fd is not None:
                    os.mkdir(name, 0o777, dir_fd=self.fd)
                else:
                    os.mkdir(where)
            except FileExistsError:
                pass
            else:
                self.dirty = True
            st = self.lstat(name)
        if st is None:
            raise UnpackError(f"{where}: directory is missing")
        if stat.S_ISLNK(st.st_mode) or getattr(st, "st_file_attributes", 0) & _REPARSE_POINT:
            raise UnsafeNameError(f"{where}: is a link in the output; it is never followed")
        if not stat.S_ISDIR(st.st_mode):
            raise UnpackError(f"{where}: exists and is not a directory")
        if self.fd is None:
            return PinnedDir(where, None, self.sync)
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        try:
            fd = os.open(name, flags, dir_fd=self.fd)
        except OSError as exc:
            raise UnsafeNameError(
                f"{where}: cannot open without following links ({exc.strerror})"
            ) from None
        if os.fstat(fd).st_ino != st.st_ino:
            os.close(fd)
            raise UnsafeNameError(f"{where}: replaced while being opened")
        return PinnedDir(where, fd, self.sync)

    def open_new(self, name: str) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | getattr(os, "O_NOFOLLOW", 0)
        if self.fd is not None:
            return os.open(name, flags, 0o644, dir_fd=self.fd)
        return os.open(self._at(name), flags, 0o644)

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
    """The open directories from the release root down to the current member's parent."""

    def __init__(self, root: PinnedDir) -> None:
        self.parts: list[str] = []
        self.dirs = [root]

    def goto(self, parts: list[str], create: bool) -> PinnedDir:
        common = 0
        while common < min(len(parts), len(self.parts)) and parts[common] == self.parts[common]:
            common += 1
        while len(self.parts) > common:
            self.parts.pop()
            self.dirs.pop().close()
        for part in parts[common:]:
            self.dirs.append(self.dirs[-1].child(part, create))
            self.parts.append(part)
        return self.dirs[-1]

    def close(self) -> None:
        while len(self.dirs) > 1:
            self.dirs.pop().close()


def _hash_open(fh: IO[bytes]) -> tuple[int, str]:
    hasher, size = hashlib.sha256(), 0
    for data in iter(lambda: fh.read(CHUNK), b""):
        hasher.update(data)
        size += len(data)
    return size, hasher.hexdigest()


def _existing_tree(root: PinnedDir) -> Iterator[tuple[str, os.stat_result, PinnedDir]]:
    """Walk an existing output root without following links: ``(relpath, lstat, parent)``."""
    stack: list[tuple[str, PinnedDir]] = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        try:
            for name, st in folder.entries():
                rel = prefix + name
                if stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
                    stack.append((rel + "/", folder.child(name, False)))
                else:
                    yield rel, st, folder
        finally:
            if folder is not root:
                folder.close()


def _preflight(
    release: Release, root: PinnedDir, chosen: list[str], state: dict[str, Any] | None
) -> list[str]:
    """Check what the output already holds before anything is written."""
    rows = {r.path: r for r in release.rows}
    issues = []
    for rel, st, folder in _existing_tree(root):
        where = f"{release.name}/{rel}"
        row = rows.get(rel)
        if not stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            issues.append(f"{where}: exists in the output and is not a regular file; kept")
        elif row is None and os.path.basename(rel).startswith(".unpack-"):
            issues.append(f"{where}: temporary file left by an interrupted run; delete it")
        elif row is None:
            issues.append(
                f"{where}: exists in the output but is not part of snapshot "
                f"{release.snapshot_root[:16]}; never mix snapshots"
            )
        elif st.st_size != row.size:
            issues.append(
                f"{where}: existing file has {st.st_size} bytes, this release has {row.size}; kept"
            )
        elif state is None and row.family not in chosen:
            with folder.open_read(os.path.basename(rel)) as fh:
                if _hash_open(fh)[1] != row.sha256:
                    issues.append(f"{where}: existing file differs from this snapshot; kept")
    return issues


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


def _write_state(output: PinnedDir, release: Release, families: list[str], fsync: bool) -> None:
    name = release.name + STATE_SUFFIX
    tmp = f".{name}.{os.getpid()}.tmp"
    body = canonical_json(
        {
            "name": release.name,
            "snapshot_root_sha256": release.snapshot_root,
            "families": sorted(families),
        }
    )
    fd = output.open_new(tmp)
    try:
        os.write(fd, body + b"\n")
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    output.replace(tmp, name)


def unpack_release(
    release_dir: str,
    output: str,
    families: Sequence[str] = (),
    everything: bool = False,
    only_packages: Sequence[str] | None = None,
    log: Callable[[str], None] = lambda _m: None,
    fsync: bool = True,
) -> Summary:
    """Verify the chosen families' packages, then restore them into ``output/NAME``.

    Files are written through a temporary name and moved into place only after their
    SHA-256 matched ``files.jsonl``. Re-runs verify and skip identical files; a differing
    existing file is an error and is kept. *only_packages* restricts the run to some
    packages (the packer's sample restore test); the structure check then covers their files.
    With *fsync* (the default) every file is fsynced before it is moved into place and every
    directory that gained entries is fsynced after them, so a success message survives a
    power cut; ``fsync=False`` trades that for speed (scratch restores, fast disks).
    """
    release = load_release(release_dir)
    chosen = choose_families(release, families, everything)
    packages = release.packages_of(chosen)
    if only_packages is not None:
        packages = [p for p in packages if p["name"] in set(only_packages)]
    check_packages(release, packages, workers=min(4, os.cpu_count() or 1))
    log(f"{len(packages)} packages present with the expected size and SHA-256")
    out = PinnedDir.open_root(output, create=True, sync=fsync)
    summary = Summary()
    summary.families, summary.output = chosen, os.path.join(output, release.name)
    try:
        state = _read_state(out, release)
        root = out.child(release.name, create=True)
        try:
            issues = _preflight(release, root, chosen, state)
            if issues:
                raise UnpackError(
                    "the output already holds conflicting files; nothing was written", issues
                )
            issues = _restore_packages(release, root, packages, summary, fsync, log)
            if issues:
                raise UnpackError(
                    "restore incomplete: existing files differ or appeared meanwhile (kept)", issues
                )
            wanted = {r.path: r for r in release.rows if r.package in {p["name"] for p in packages}}
            _check_structure(release, root, wanted)
        finally:
            root.close()
        done = set(chosen) | set(state.get("families", []) if state else [])
        if only_packages is None:
            _write_state(out, release, sorted(done), fsync)
    finally:
        out.close()
    summary.packages = len(packages)
    summary.package_bytes = sum(p["size"] for p in packages)
    return summary


class _Placer:
    """Fsync verified temporary files and move them into place, many at a time.

    One ``fsync`` per small file is a disk round trip; done one after another they dominate
    a restore. With *fsync*, each verified file goes to a worker thread that fsyncs it and
    only then places it (no-replace), while the main thread parses the next members; the
    filesystem journal commits concurrent fsyncs together. :meth:`drain` waits for every
    file, then fsyncs each directory that received entries. Without *fsync* files are placed
    inline. At most ``2 * workers`` files are in flight (flat memory and descriptors).
    """

    def __init__(self, fsync: bool, workers: int = 8) -> None:
        self.fsync = fsync
        self.limit = 2 * workers
        self.pool = ThreadPoolExecutor(max_workers=workers) if fsync else None
        self.pending: list[Any] = []
        self.dirs: dict[tuple[int, int], int] = {}  # (st_dev, st_ino) -> our own descriptor
        self.written = 0
        self.issues: list[str] = []

    def submit(self, folder: PinnedDir, fd: int, tmp: str, leaf: str, where: str) -> None:
        """Take over *fd* (the verified temporary file *tmp* in *folder*) and place it."""
        dir_fd = None
        if folder.fd is not None and self.fsync:
            st = os.fstat(folder.fd)
            dir_fd = self.dirs.get((st.st_dev, st.st_ino))
            if dir_fd is None:
                dir_fd = self.dirs[(st.st_dev, st.st_ino)] = os.dup(folder.fd)
        elif folder.fd is not None:
            dir_fd = folder.fd
        prefix = "" if dir_fd is not None else folder.path
        if self.pool is None:
            self._collect(self._place(dir_fd, prefix, fd, tmp, leaf, where))
            return
        # Queue this file first: should an older job have failed, drain() still finishes it.
        self.pending.append(self.pool.submit(self._place, dir_fd, prefix, fd, tmp, leaf, where))
        while len(self.pending) > self.limit:
            self._collect(self.pending.pop(0).result())

    def _place(
        self, dir_fd: int | None, prefix: str, fd: int, tmp: str, leaf: str, where: str
    ) -> str:
        try:
            if self.fsync:
                os.fsync(fd)  # the data is durable before its name is
        except BaseException:
            _unlink(dir_fd, os.path.join(prefix, tmp))
            raise
        finally:
            os.close(fd)
        src, dst = os.path.join(prefix, tmp), os.path.join(prefix, leaf)
        try:
            _place_noreplace(dir_fd, src, dst)
        except FileExistsError:
            _unlink(dir_fd, src)
            return f"{where}: appeared while restoring (another writer?); kept, not replaced"
        except BaseException:
            _unlink(dir_fd, src)
            raise
        return ""

    def _collect(self, issue: str) -> None:
        if issue:
            self.issues.append(issue)
        else:
            self.written += 1

    def drain(self) -> None:
        """Wait for every file in flight, then fsync the directories that gained entries."""
        failure: BaseException | None = None
        for future in self.pending:
            try:
                self._collect(future.result())
            except BaseException as exc:  # every job must finish; report the first failure
                failure = failure or exc
        self.pending = []
        for dir_fd in self.dirs.values():
            try:
                if failure is None:
                    _fsync_dir(dir_fd)
            finally:
                os.close(dir_fd)
        self.dirs = {}
        if failure is not None:
            raise failure

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def _unlink(dir_fd: int | None, path: str) -> None:
    if dir_fd is not None:
        os.unlink(path, dir_fd=dir_fd)
    else:
        os.unlink(path)


def _restore_packages(
    release: Release,
    root: PinnedDir,
    packages: list[dict[str, Any]],
    summary: Summary,
    fsync: bool,
    log: Callable[[str], None],
    workers: int = 2,
) -> list[str]:
    """Restore *packages* on *workers* threads, each taking the next package in turn.

    Packages hold disjoint files, so each worker has its own directory chain, placer and
    tallies (merged at the end); hashing and writing then use both cores. After a failure
    no worker starts another package. Returns the kept-file issues; raises the first error.
    """
    todo = list(packages)
    lock = threading.Lock()
    failed: list[BaseException] = []
    tallies: list[tuple[Summary, list[str]]] = []

    def worker() -> None:
        mine = Summary()
        issues: list[str] = []
        with lock:
            tallies.append((mine, issues))
        chain, placer = DirChain(root), _Placer(fsync)
        try:
            while True:
                with lock:
                    if failed or not todo:
                        return
                    pkg = todo.pop(0)
                try:
                    _restore_package(release, pkg, chain, mine, issues, placer)
                except BaseException as exc:
                    with lock:
                        failed.append(exc)
                    raise
                log(f"restored {pkg['name']}")
        finally:
            placer.close()
            chain.close()

    count = max(1, min(workers, len(todo)))
    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(worker) for _ in range(count)]
    issues: list[str] = []
    for mine, found in tallies:
        summary.written += mine.written
        summary.skipped += mine.skipped
        issues.extend(found)
    for future in futures:
        future.result()  # re-raises a worker's error (the first one in submission order)
    return issues


def _restore_package(
    release: Release,
    pkg: dict[str, Any],
    chain: DirChain,
    summary: Summary,
    issues: list[str],
    placer: _Placer,
) -> None:
    def member(m: Member, row: FileRow, stream: _Stream) -> None:
        parts = m.path.split("/")
        folder = chain.goto(parts[:-1], create=True)
        leaf = parts[-1]
        where = f"{release.name}/{m.path}"
        st = folder.lstat(leaf)
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                issues.append(f"{where}: exists and is not a regular file; kept")
            else:
                with folder.open_read(leaf) as fh:
                    if _hash_open(fh) != (row.size, row.sha256):
                        issues.append(f"{where}: existing file differs from {FILES_NAME}; kept")
                    else:
                        summary.skipped += 1
            stream.skip(m.size)
            return
        tmp = f".unpack-{os.urandom(6).hex()}.tmp"
        fd = folder.open_new(tmp)
        try:
            digest = _hash_member(stream, m.size, lambda data: _write_all(fd, data))
            if digest != row.sha256:
                raise UnpackError(
                    f"{pkg['name']}: member {m.path!r} SHA-256 {digest} differs from {FILES_NAME}"
                )
        except BaseException:
            os.close(fd)
            folder.unlink(tmp)
            raise
        placer.submit(folder, fd, tmp, leaf, where)

    written, found = placer.written, len(placer.issues)
    try:
        with _open_read_path(_package_path(release, pkg["name"])) as fh:
            scan_package(fh, pkg["name"], release.name, release.rows_of(pkg["name"]), member)
    finally:
        try:
            placer.drain()
        finally:
            summary.written += placer.written - written
            issues.extend(placer.issues[found:])


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _check_structure(release: Release, root: PinnedDir, wanted: dict[str, FileRow]) -> None:
    rows = {r.path: r for r in release.rows}
    issues = []
    present = set()
    for rel, st, _folder in _existing_tree(root):
        row = rows.get(rel)
        if row is None or not stat.S_ISREG(st.st_mode):
            issues.append(f"{release.name}/{rel}: not part of this release")
        elif st.st_size != row.size:
            issues.append(f"{release.name}/{rel}: size {st.st_size}, expected {row.size}")
        present.add(rel)
    issues.extend(
        f"{release.name}/{p}: missing after restore" for p in sorted(set(wanted) - present)
    )
    if issues:
        raise UnpackError("restored tree does not match the release", issues)


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
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


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

    def log(message: str) -> None:
        if not args.quiet:
            sys.stderr.write(message + "\n")

    try:
        if args.verify_only:
            s = verify_release(args.release_dir, families, args.all, log)
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
            )
            sys.stdout.write(
                f"OK: {', '.join(s.families)} restored into {s.output}: {s.written} files written, "
                f"{s.skipped} already present and verified\n"
            )
    except UnpackError as exc:
        sys.stderr.write(f"FAILED: {exc}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"FAILED: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
