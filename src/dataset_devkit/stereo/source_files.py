"""Reading export files byte for byte: no symlinks followed, hard links accepted.

A render export on NTFS holds hard-linked duplicates (the seed's export did). The dataset
stores plain copies of their bytes, so a hard link in the *source* is harmless; what matters
is that the bytes hashed are the bytes copied, which the identity check before and after
each copy proves. The integrity core's ``copy_from``/``hash_file`` refuse every multiply
linked file because they guard published trees; this module is their source-side sibling.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_devkit.errors import UnsafePathError
from dataset_devkit.integrity import SafeDir
from dataset_devkit.integrity.oserrors import naming_in
from dataset_devkit.integrity.reads import FdReader, fill
from dataset_devkit.stereo.errors import SourceError

if TYPE_CHECKING:
    import numpy.typing as npt

_BLOCK = 1 << 20
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _open(path: Path) -> tuple[int, os.stat_result]:
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if path.is_symlink():
            raise UnsafePathError("is a symbolic link; export the file itself", path=path) from exc
        raise SourceError(f"cannot be read ({exc.strerror})", path=path) from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafePathError("is not a regular file", path=path)
    return fd, st


def copy_and_hash(path: Path, folder: SafeDir | None, rel: str) -> tuple[int, str]:
    """Stream ``path`` (hashing it) into a new file ``rel`` of ``folder``, or only hash it.

    Returns ``(size, sha256 hex)``; raises :class:`UnsafePathError` when the source is a
    symlink or special file, or changed while it was read.
    """
    fd, before = _open(path)
    digest, size = hashlib.sha256(), 0
    view = memoryview(bytearray(_BLOCK))
    reader = FdReader(fd)
    # A full disk names the copy (a buffered write's error names no file).
    written = naming_in(folder.path, rel) if folder is not None else contextlib.nullcontext()
    try:
        with written:
            out = folder.open_write(rel) if folder is not None else None
            try:
                while count := fill(reader, view):
                    digest.update(view[:count])
                    if out is not None:
                        out.write(view[:count])
                    size += count
                    if count < len(view):
                        break  # the end
            finally:
                if out is not None:
                    out.close()
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if _identity(before) != _identity(after) or size != after.st_size:
        raise UnsafePathError("changed while it was read", path=path)
    return size, digest.hexdigest()


class StreamedNpy:
    """A ``.npy`` file read once, front to back, hashing every byte on the way.

    The depth encoder reads it frame range by frame range in increasing order, straight
    into its own buffers (:meth:`read_frames`), so the file is read exactly once for both
    the encoding and the source manifest's SHA-256, instead of once for each (a 241-frame
    720p float32 eye is 0.9 GB), and hashed where it landed. Use as a context
    manager; :meth:`finish` reads any bytes after the array, checks the file did not change,
    and returns ``(size, sha256 hex)``.
    """

    def __init__(self, path: Path) -> None:
        import numpy as np

        self.path = path
        self._fd, self._before = _open(path)
        self._digest = hashlib.sha256()
        self._size = 0
        self._next = 0
        try:
            version = np.lib.format.read_magic(self)  # type: ignore[no-untyped-call,unused-ignore]
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(self)  # type: ignore[no-untyped-call,unused-ignore]
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(self)  # type: ignore[no-untyped-call,unused-ignore]
            else:
                raise ValueError(f".npy format version {version} is not supported (1.0, 2.0)")
        except ValueError as exc:
            os.close(self._fd)
            raise SourceError(f"is not a .npy file ({exc})", path=path) from exc
        if fortran or dtype.hasobject or len(shape) != 3:
            os.close(self._fd)
            raise SourceError(
                f"holds {'a Fortran-ordered ' if fortran else ''}{dtype} {list(shape)}; "
                "depth must be a C-ordered float [frames, height, width] array",
                path=path,
            )
        self.shape: tuple[int, int, int] = shape
        self.dtype = dtype

    def read(self, count: int) -> bytes:
        """Read (and hash) exactly ``count`` bytes; fewer means a truncated file."""
        # Never more room than the file holds: a header may claim any shape.
        data = bytearray(max(0, min(count, self._before.st_size - self._size)))
        got = fill(FdReader(self._fd), memoryview(data))
        del data[got:]
        self._digest.update(data)
        self._size += got
        return bytes(data)

    def __getitem__(self, frames: slice) -> Any:
        """Frames ``start:stop`` (the next ones) in a new array; see :meth:`read_frames`."""
        import numpy as np

        start, stop, step = frames.indices(self.shape[0])
        if step != 1 or start != self._next:
            raise ValueError(f"{self.path}: frames must be read in order, from {self._next}")
        # Never more room than the file holds: a header may claim any shape.
        per_frame = self.shape[1] * self.shape[2] * self.dtype.itemsize
        if (stop - start) * per_frame > self._before.st_size - self._size:
            raise SourceError(
                f"is truncated inside frame range {start}..{stop - 1}", path=self.path
            )
        out = np.empty((stop - start, *self.shape[1:]), dtype=self.dtype)
        return self.read_frames(start, stop, out)

    def read_frames(self, start: int, stop: int, out: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Read (and hash) frames ``start:stop``, the next ones, into ``out``; return
        ``out[: stop - start]``.

        The bytes go from the file straight into ``out`` (a C-ordered array of this file's
        dtype and frame shape, with room for the frames), and are hashed there: no copy.
        """
        if start != self._next or stop < start:
            raise ValueError(f"{self.path}: frames must be read in order, from {self._next}")
        frames = out[: stop - start]
        if (
            frames.shape != (stop - start, *self.shape[1:])
            or frames.dtype != self.dtype
            or not frames.flags.c_contiguous
        ):
            raise ValueError(
                f"{self.path}: expected room for {stop - start} C-ordered {self.dtype} frames"
            )
        view = frames.reshape(-1).view("u1").data
        got = fill(FdReader(self._fd), view)
        self._digest.update(view[:got])
        self._size += got
        if got != len(view):
            raise SourceError(
                f"is truncated inside frame range {start}..{stop - 1}", path=self.path
            )
        self._next = stop
        return frames

    def finish(self) -> tuple[int, str]:
        """Hash the rest of the file, check it did not change, return ``(size, sha256)``."""
        while self.read(_BLOCK):
            pass
        after = os.fstat(self._fd)
        if _identity(self._before) != _identity(after) or self._size != after.st_size:
            raise UnsafePathError("changed while it was read", path=self.path)
        return self._size, self._digest.hexdigest()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> StreamedNpy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
