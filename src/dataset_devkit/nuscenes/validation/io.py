"""No-follow, identity-checked reads of files inside a dataroot.

The validator and the SDK never re-resolve a path string through a symlink: every read walks
the relative path one component at a time from a pinned root descriptor with ``O_NOFOLLOW``,
rejects anything that is not a single-link regular file, and compares the file's identity
before and after the read so a concurrent replacement is reported instead of trusted.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from types import TracebackType

from dataset_devkit.errors import FormatError, UnsafePathError
from dataset_devkit.integrity import path_argument
from dataset_devkit.integrity.reads import read_expected

__all__ = ["DatarootReader", "check_relative_name", "dataroot_path"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def check_relative_name(name: str) -> str | None:
    """Return why *name* is not a safe relative POSIX path inside a dataroot, or None."""
    if not name or "\\" in name or "\x00" in name:
        return f"unsafe file name {name!r}"
    # Plain string tests: a PurePosixPath per checked file interns its parts, and the
    # interpreter's table of interned strings grows with a dataroot's files for good.
    if name.startswith("/") or any(part in ("", ".", "..") for part in name.split("/")):
        return f"unsafe file name {name!r}: must be a relative path without '.' or '..'"
    return None


def dataroot_path(dataroot: object) -> Path:
    """*dataroot* as a Path; a ConfigError unless it is a non-empty ``str`` or ``PathLike``.

    ``Path("")`` is the working directory: an empty name must not silently open it.
    """
    return path_argument(dataroot, "dataroot")


class DatarootReader:
    """A pinned, read-only handle on a dataroot directory.

    Parameters
    ----------
    root
        The dataroot. It must be a real directory, not a symlink.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        try:
            st = os.lstat(self.root)
        except FileNotFoundError:
            raise FormatError("dataroot does not exist", path=self.root) from None
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePathError("dataroot is a symlink; refusing to follow it", path=self.root)
        if not stat.S_ISDIR(st.st_mode):
            raise FormatError("dataroot is not a directory", path=self.root)
        self._fd = os.open(self.root, _DIR_FLAGS)
        self._dirs: dict[str, int] = {"": os.dup(self._fd)}
        self._lock = threading.Lock()

    def __enter__(self) -> DatarootReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the pinned root and directory descriptors."""
        with self._lock:
            for fd in self._dirs.values():
                os.close(fd)
            self._dirs.clear()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _pinned_parent(self, rel: str) -> tuple[int, str]:
        """The pinned directory holding *rel* (opened once per directory) and the leaf name.

        Directories are pinned on first use and kept for the reader's life, so thousands of
        images in one channel folder cost one no-follow walk, and every read of that folder
        sees the same directory even if a path component is swapped meanwhile.
        """
        head, _, leaf = rel.rpartition("/")
        with self._lock:
            cached = self._dirs.get(head)
        if cached is not None:
            problem = check_relative_name(rel)
            if problem is not None:
                raise UnsafePathError(problem, path=rel)
            return cached, leaf
        fd, leaf = self._open_parent(rel)
        with self._lock:
            if head in self._dirs:
                os.close(fd)
            else:
                self._dirs[head] = fd
            return self._dirs[head], leaf

    def _open_parent(self, rel: str) -> tuple[int, str]:
        problem = check_relative_name(rel)
        if problem is not None:
            raise UnsafePathError(problem, path=rel)
        *dirs, leaf = rel.split("/")
        fd = os.dup(self._fd)
        try:
            for part in dirs:
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    raise FormatError("missing directory", path=self.root / rel) from None
                except (NotADirectoryError, OSError) as exc:
                    raise UnsafePathError(
                        f"directory component {part!r} is a symlink or not a directory ({exc})",
                        path=self.root / rel,
                    ) from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd, leaf

    def read_bytes(self, rel: str) -> bytes:
        """Read the single-link regular file *rel*, checking its identity around the read."""
        dfd, leaf = self._pinned_parent(rel)
        try:
            fd = os.open(leaf, _FILE_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            raise FormatError("missing file", path=self.root / rel) from None
        except OSError as exc:
            raise UnsafePathError(
                f"not a regular file or a symlink ({exc.strerror})", path=self.root / rel
            ) from None
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise UnsafePathError("not a regular file", path=self.root / rel)
            if before.st_nlink != 1:
                raise UnsafePathError(
                    f"hard-linked file (st_nlink={before.st_nlink}, expected 1)",
                    path=self.root / rel,
                )
            # One read of the expected size (plus one byte to notice growth) in the common case.
            data = read_expected(fd, before.st_size)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        identity = ("st_dev", "st_ino", "st_size", "st_mtime_ns")
        if any(getattr(before, a) != getattr(after, a) for a in identity) or len(data) != (
            before.st_size
        ):
            raise UnsafePathError("file changed while it was read", path=self.root / rel)
        return data

    def list_dir(self, rel: str = "") -> list[tuple[str, str]]:
        """List ``(name, kind)`` in *rel*; kind is ``file``, ``dir``, ``link`` or ``other``."""
        if rel and (problem := check_relative_name(rel)) is not None:
            raise UnsafePathError(problem, path=rel)
        dfd = self._open_dir(rel)
        try:
            out = []
            # Listing by descriptor keeps the pinned identity; pathlib cannot list an fd.
            for name in sorted(os.listdir(dfd)):  # noqa: PTH208
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    kind = "link"
                elif stat.S_ISDIR(st.st_mode):
                    kind = "dir"
                elif stat.S_ISREG(st.st_mode):
                    kind = "file"
                else:
                    kind = "other"
                out.append((name, kind))
            return out
        finally:
            os.close(dfd)

    def _open_dir(self, rel: str) -> int:
        fd = os.dup(self._fd)
        if not rel:
            return fd
        try:
            for part in rel.split("/"):
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    raise FormatError("missing directory", path=self.root / rel) from None
                except OSError as exc:
                    raise UnsafePathError(
                        f"not a directory or a symlink ({exc.strerror})", path=self.root / rel
                    ) from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd
