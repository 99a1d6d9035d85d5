"""Load a ``.npy`` array we wrote, checking its header before NumPy trusts it.

``np.load`` parses the header with ``ast.literal_eval`` and raises whatever that raises on a
damaged byte (``ValueError``, ``SyntaxError``, ``tokenize.TokenError``, ``MemoryError`` ...),
and it believes the header's shape: a flipped digit asks for terabytes. Every ``.npy`` file
of our formats is a plain little-endian array of one known dtype, so this loader reads the
header itself, requires exactly that dtype and C order, requires the file size to be the
header plus the data, and only then maps or reads the data. Any failure is one
:class:`~dataset_devkit.errors.FormatError` (or the caller's subclass) naming the file.
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity.reads import read_expected
from dataset_devkit.integrity.safefs import describe_mode

if TYPE_CHECKING:  # the integrity core imports no NumPy until an array is loaded
    import numpy.typing as npt

__all__ = ["load_npy"]

_MAX_HEADER = 10_000  # NumPy's own default limit for untrusted headers
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


#: The version 1.0 header NumPy writes for a plain array, in full: ``\x93NUMPY\x01\x00``,
#: its length (2 bytes, little-endian), then ``{'descr': '<i8', 'fortran_order': False,
#: 'shape': (1025,), }`` padded with spaces to a newline.
_PLAIN_HEADER = re.compile(
    rb"\{'descr': '([<>|][a-zA-Z]\d+)', 'fortran_order': (True|False), "
    rb"'shape': \(((?:(?:0|[1-9]\d*), )*(?:0|[1-9]\d*),?)?\), \} *\n"
)


def _plain_header(fd: int) -> Any:
    """``(shape, fortran, dtype), data offset`` of a header exactly as NumPy writes a plain
    array, read with one ``pread``; None for anything else (NumPy's parser then judges it).

    NumPy parses every header with ``ast.literal_eval`` (~0.1 ms): a reader opening a
    shard's offsets in each DataLoader worker pays it per shard.
    """
    import numpy as np

    head = os.pread(fd, 256, 0)
    if head[:8] != b"\x93NUMPY\x01\x00" or len(head) < 10:
        return None
    end = 10 + int.from_bytes(head[8:10], "little")
    found = _PLAIN_HEADER.fullmatch(head, 10, end) if end <= len(head) else None
    if found is None:
        return None
    descr, fortran, dims = found.groups()
    try:
        dtype = np.dtype(descr.decode("ascii"))
    except TypeError:
        return None
    shape = tuple(int(n) for n in dims.split(b",") if n.strip()) if dims else ()
    return (shape, fortran == b"True", dtype), end


def _read_header(fd: int, size: int, path: Path, what: str, error: type[FormatError]) -> Any:
    import numpy as np

    plain = _plain_header(fd)
    if plain is not None:
        return plain

    # NumPy's stubs lag its API (max_header_size exists since 1.24): call it untyped.
    fmt: Any = np.lib.format
    # A damaged header may take NumPy's Python 2 fallback, which warns; we judge the result.
    with os.fdopen(os.dup(fd), "rb") as stream, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            version = fmt.read_magic(stream)
            if version == (1, 0):
                header = fmt.read_array_header_1_0(stream, max_header_size=_MAX_HEADER)
            elif version in ((2, 0), (3, 0)):
                header = fmt.read_array_header_2_0(stream, max_header_size=_MAX_HEADER)
            else:
                raise ValueError(f"unsupported .npy version {version}")
        except Exception as exc:
            raise error(f"{what} is not a .npy array: {exc}", path=path) from None
        return header, stream.tell()


def load_npy(
    path: str | Path,
    *,
    dtype: str,
    ndim: int,
    what: str = "array",
    mmap: bool = False,
    error: type[FormatError] = FormatError,
) -> npt.NDArray[Any]:
    """Return the array of *path*, which must hold exactly *dtype* in *ndim* dimensions.

    Parameters
    ----------
    path
        The ``.npy`` file; a symlink, FIFO or directory is refused, never opened for reading.
    dtype, ndim
        What the format stores there (e.g. ``"<i8"``, 1).
    what
        How messages name the array ("index sidecar").
    mmap
        Map the data read-only instead of reading it (large indexes at open).
    error
        The :class:`FormatError` subclass to raise.
    """
    import numpy as np

    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = stat.S_IFREG  # the open below reports it
    if not stat.S_ISREG(mode):
        raise error(f"expected a regular file, found a {describe_mode(mode)}", path=path)
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise error(f"{what} is missing", path=path) from None
    except OSError as exc:
        raise error(f"{what} cannot be opened: {exc.strerror}", path=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"expected a regular file, found a {describe_mode(st.st_mode)}", path=path)
        (shape, fortran, found), offset = _read_header(fd, st.st_size, path, what, error)
        expected = np.dtype(dtype)
        ok_shape = (
            isinstance(shape, tuple)
            and len(shape) == ndim
            and all(isinstance(n, int) and n >= 0 for n in shape)
        )
        if found != expected or fortran or not ok_shape:
            order = " in Fortran order" if fortran else ""
            raise error(
                f"{what} must be {ndim}-D {expected.name}, found {found} {shape}{order}",
                path=path,
            )
        nbytes = int(np.prod(shape, dtype=object)) * expected.itemsize
        if offset + nbytes != st.st_size:
            raise error(
                f"{what} is not a .npy array: its header says {shape} ({nbytes} bytes of "
                f"data), the file holds {st.st_size - offset}",
                path=path,
            )
        if mmap and nbytes:
            values = np.memmap(path, dtype=expected, mode="r", offset=offset, shape=shape)
            return np.asarray(values)
        # one pread returns at most ~2 GiB on Linux: a larger array takes several
        data = read_expected(fd, nbytes, offset) if nbytes else b""
        if len(data) != nbytes:
            raise error(f"{what} changed while it was read", path=path)
        array: npt.NDArray[Any] = np.frombuffer(data, dtype=expected).reshape(shape)
        return array
    except OSError as exc:
        raise error(f"{what} is unreadable: {exc.strerror or exc}", path=path) from None
    finally:
        os.close(fd)
