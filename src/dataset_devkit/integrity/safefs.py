"""No-follow filesystem primitives: pinned directory descriptors and exclusive leaves.

Every path string is resolved once, one component at a time, relative to a directory
descriptor opened with ``O_NOFOLLOW``; after that only descriptors are used, so a symlink
or directory swapped in later cannot redirect a read or a write. Descriptors held at once
are bounded by the depth of the path being walked.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import BinaryIO, Final

from dataset_devkit.errors import (
    ConfigError,
    DestinationExistsError,
    MissingPathError,
    UnsafePathError,
)
from dataset_devkit.integrity.oserrors import naming, naming_in
from dataset_devkit.integrity.reads import FdReader, fill

__all__ = [
    "COPY_BLOCK_SIZE",
    "SafeDir",
    "check_relative_path",
    "describe_mode",
    "open_dir_nofollow",
    "path_argument",
]

#: Block size for streaming reads and copies: large enough that syscalls and hashing
#: overhead vanish, small enough that memory stays flat whatever the file size.
COPY_BLOCK_SIZE: Final = 1 << 20

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CREATE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def describe_mode(mode: int) -> str:
    """Name the kind of file a ``st_mode`` describes, for error messages."""
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "unknown file type"


def path_argument(value: object, name: str = "root") -> Path:
    """*value* as a :class:`Path`, or a :class:`ConfigError` naming the argument.

    Every public entry point that takes a path from user code checks it with this.

    ``Path("")`` is the working directory and ``Path(None)`` a ``TypeError``: neither is
    what a caller who passed a wrong value meant, so both are refused here.
    """
    text = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if not isinstance(text, str) or not text:
        raise ConfigError(f"{name} must be a non-empty str or Path, found {value!r}", key=name)
    return Path(text)


def check_relative_path(rel: str | PurePosixPath) -> tuple[str, ...]:
    """Split a relative POSIX path into safe components, or raise :class:`UnsafePathError`.

    Rejects absolute paths, empty components, ``.`` and ``..``, NUL and backslashes, so a
    name can never step outside the directory it is resolved against.
    """
    text = str(rel)
    if not text or text.startswith("/") or "\\" in text or "\x00" in text:
        raise UnsafePathError(f"not a safe relative POSIX path: {text!r}")
    parts = tuple(text.split("/"))
    for part in parts:
        if part in ("", ".", ".."):
            raise UnsafePathError(f"not a safe relative POSIX path: {text!r}")
    return parts


def open_dir_nofollow(
    name: str | os.PathLike[str], *, dir_fd: int | None = None, shown: Path | None = None
) -> int:
    """Open a directory without following a symlink in its last component.

    Raises :class:`UnsafePathError` when *name* is a symlink or not a directory, and
    :class:`FileNotFoundError` when it does not exist. Messages name *shown* (the full
    path) when *name* is relative to *dir_fd*.
    """
    where = os.fspath(shown if shown is not None else name)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise MissingPathError("no such directory", path=where) from exc
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            raise UnsafePathError(f"cannot open directory: {exc.strerror}", path=where) from exc
        hint = ""
        if stat.S_ISLNK(st.st_mode):  # name the target so the user can pass it instead
            hint = f" to {os.readlink(name, dir_fd=dir_fd)!r} (links are not followed)"
        raise UnsafePathError(
            f"expected a real directory, found a {describe_mode(st.st_mode)}{hint}", path=where
        ) from exc


class SafeDir:
    """A pinned directory: every operation is relative to its descriptor, never re-resolved.

    Use :meth:`open` for an existing real directory or :meth:`create` for a new one; close
    it (or use it as a context manager) when done.
    """

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SafeDir:
        """Pin an existing directory (its last component must not be a symlink)."""
        return cls(open_dir_nofollow(path), Path(path))

    @classmethod
    def create(cls, path: str | os.PathLike[str], mode: int = 0o755) -> SafeDir:
        """Create *path* (which must not exist) inside its real parent and pin it."""
        target = Path(path)
        with cls.open(target.parent) as parent:
            return parent.mkdir(target.name, mode)

    def __enter__(self) -> SafeDir:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the descriptor; further use raises ``OSError``."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _parent_of(self, rel: str | PurePosixPath) -> tuple[SafeDir, str, bool]:
        """Pin the parent of *rel*; return it, the leaf name and whether it is a new handle."""
        parts = check_relative_path(rel)
        if len(parts) == 1:
            return self, parts[0], False
        return self.opendir("/".join(parts[:-1])), parts[-1], True

    def opendir(self, rel: str | PurePosixPath) -> SafeDir:
        """Pin an existing subdirectory, walking one no-follow component at a time."""
        return self._walk(rel, None)

    def _walk(self, rel: str | PurePosixPath, create_mode: int | None) -> SafeDir:
        """Pin *rel* one no-follow component at a time, creating missing ones if asked."""
        current = self
        for part in check_relative_path(rel):
            try:
                if create_mode is not None:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, create_mode, dir_fd=current.fd)
                fd = open_dir_nofollow(part, dir_fd=current.fd, shown=current.path / part)
            finally:
                if current is not self:
                    current.close()
            current = SafeDir(fd, current.path / part)
        return current

    def mkdir(self, rel: str | PurePosixPath, mode: int = 0o755) -> SafeDir:
        """Create a new subdirectory exclusively (its parent must exist) and pin it."""
        parent, leaf, owned = self._parent_of(rel)
        try:
            try:
                os.mkdir(leaf, mode, dir_fd=parent.fd)
            except FileExistsError as exc:
                raise DestinationExistsError(
                    f"{parent.path / leaf}: already exists; nothing is ever replaced"
                ) from exc
            return SafeDir(open_dir_nofollow(leaf, dir_fd=parent.fd), parent.path / leaf)
        finally:
            if owned:
                parent.close()

    def makedirs(self, rel: str | PurePosixPath, mode: int = 0o755) -> SafeDir:
        """Pin *rel*, creating missing components; an existing symlink is refused."""
        return self._walk(rel, mode)

    def open_write(self, rel: str | PurePosixPath, mode: int = 0o644) -> BinaryIO:
        """Create a new file exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``) for writing."""
        parent, leaf, owned = self._parent_of(rel)
        try:
            fd = _create_leaf(parent, leaf, mode)
        finally:
            if owned:
                parent.close()
        return os.fdopen(fd, "wb")

    def write_bytes(self, rel: str | PurePosixPath, data: bytes, mode: int = 0o644) -> None:
        """Create a new file exclusively holding *data* (a failed write names the file)."""
        with naming_in(self.path, rel), self.open_write(rel, mode) as handle:
            handle.write(data)

    def open_read(self, rel: str | PurePosixPath) -> BinaryIO:
        """Open an existing single-link regular file for reading without following links."""
        parent, leaf, owned = self._parent_of(rel)
        try:
            fd = _open_regular(leaf, parent.fd, parent.path / leaf)
        finally:
            if owned:
                parent.close()
        return os.fdopen(fd, "rb")

    def read_bytes(self, rel: str | PurePosixPath) -> bytes:
        """Read a whole regular file without following links."""
        with self.open_read(rel) as handle:
            return handle.read()

    def exists(self, rel: str | PurePosixPath) -> bool:
        """Whether *rel* names anything (a dangling symlink counts), without following it."""
        parent, leaf, owned = self._parent_of(rel)
        try:
            os.stat(leaf, dir_fd=parent.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        except NotADirectoryError:
            return False
        finally:
            if owned:
                parent.close()
        return True

    def unlink(self, rel: str | PurePosixPath) -> bool:
        """Remove the file (or link) *rel*, walking no link on the way; False if absent.

        A directory is never removed. A link in a parent component raises
        :class:`UnsafePathError`, so nothing outside this directory is ever touched.
        """
        try:
            parent, leaf, owned = self._parent_of(rel)
        except MissingPathError:
            return False
        try:
            os.unlink(leaf, dir_fd=parent.fd)
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            where = parent.path / leaf
            raise UnsafePathError("expected a file, found a directory", path=where) from None
        finally:
            if owned:
                parent.close()
        return True

    def listdir(self) -> list[str]:
        """The names in this directory, sorted."""
        with os.scandir(self.fd) as entries:
            return sorted(entry.name for entry in entries)

    def copy_from(
        self, source: str | os.PathLike[str], rel: str | PurePosixPath
    ) -> tuple[int, str]:
        """Copy a regular file into a new exclusive leaf, hashing while copying.

        The source's last component must be a single-link regular file, and its identity
        and size must not change during the copy. Returns ``(size, sha256 hex)``.
        """
        src = Path(source)
        fd = _open_regular(src, None, src)
        digest = hashlib.sha256()
        size = 0
        try:
            before = os.fstat(fd)
            view = memoryview(bytearray(COPY_BLOCK_SIZE))
            reader = FdReader(fd)
            with naming(self.path / rel), self.open_write(rel) as out:
                while count := fill(reader, view):
                    chunk = view[:count]
                    digest.update(chunk)
                    out.write(chunk)
                    size += count
                    if count < len(view):
                        break  # the end
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if _identity(before) != _identity(after) or size != after.st_size:
            raise UnsafePathError("file changed while it was copied", path=src)
        return size, digest.hexdigest()

    def iter_files(self) -> Iterator[str]:
        """Relative POSIX paths of regular files below this directory (no links followed)."""
        yield from _iter_files(self.fd, "")


def _iter_files(dir_fd: int, prefix: str) -> Iterator[str]:
    with os.scandir(dir_fd) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            sub = open_dir_nofollow(entry.name, dir_fd=dir_fd)
            try:
                yield from _iter_files(sub, f"{prefix}{entry.name}/")
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode):
            yield prefix + entry.name


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _create_leaf(parent: SafeDir, leaf: str, mode: int) -> int:
    """Create *leaf* in *parent* with ``O_CREAT | O_EXCL | O_NOFOLLOW``; return its descriptor."""
    try:
        return os.open(leaf, _CREATE_FLAGS, mode, dir_fd=parent.fd)
    except FileExistsError as exc:
        raise DestinationExistsError(
            f"{parent.path / leaf}: already exists; nothing is ever overwritten"
        ) from exc


def _open_regular(name: str | os.PathLike[str], dir_fd: int | None, shown: Path) -> int:
    """Open a single-link regular file for reading, refusing links and special files."""
    fd, _ = _open_regular_stat(name, dir_fd, lambda: shown)
    os.set_blocking(fd, True)
    return fd


def _open_regular_stat(
    name: str | os.PathLike[str], dir_fd: int | None, shown: Callable[[], Path]
) -> tuple[int, os.stat_result]:
    """:func:`_open_regular` returning the descriptor's ``fstat`` too, left non-blocking.

    The opening ``O_NONBLOCK`` only keeps a FIFO's open from hanging; once the file is
    known to be regular it changes nothing (``open(2)``: the flag "has no effect for
    regular files"), so a caller reading it at once may skip the two ``fcntl`` calls of
    ``os.set_blocking``. *shown* builds the path for an error message only when one is
    raised: exports open thousands of frames, and a ``Path`` per frame costs more than the
    system calls.
    """
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise MissingPathError("no such file", path=shown()) from exc
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            raise UnsafePathError(f"cannot open: {exc.strerror}", path=shown()) from exc
        raise UnsafePathError(
            f"expected a regular file, found a {describe_mode(st.st_mode)}", path=shown()
        ) from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafePathError(
            f"expected a regular file, found a {describe_mode(st.st_mode)}", path=shown()
        )
    if st.st_nlink > 1:
        os.close(fd)
        raise UnsafePathError(f"is a hard link ({st.st_nlink} links)", path=shown())
    return fd, st
