"""Still images at the pipeline's edges: JPEG checks, the one JPEG encoder, PNG decoding.

JPEG header dimensions without decoding and a real (reduced-scale) decode; every frame the
pipeline writes as JPEG leaves through :func:`encode_jpeg` (a PIL image) or
:func:`encode_pixels` (an array), which give the same bytes for the same pixels; PNG camera
frames are checked chunk by chunk and decoded to the arrays :func:`encode_pixels` takes.
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
import tempfile
import threading
import zlib
from collections.abc import Iterator
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import FormatError, MissingDependencyError
from dataset_devkit.nuscenes.common.pixels import mono16_to_mono8

__all__ = [
    "decode_jpeg",
    "encode_jpeg",
    "encode_pixels",
    "jpeg_dimensions",
    "png_dimensions",
    "png_to_pixels",
]

_DCT_SCALE = 8  # libjpeg's smallest scale: 1/8


def _simplejpeg() -> Any:
    try:
        import simplejpeg
    except ImportError as exc:  # pragma: no cover - simplejpeg ships with every extra that reads
        raise MissingDependencyError("simplejpeg", extra="nuscenes", purpose="JPEG checks") from exc
    return simplejpeg


def jpeg_dimensions(data: bytes | memoryview, what: str = "image") -> tuple[int, int]:
    """``(width, height)`` from the frame header, without decoding; FormatError if not a JPEG.

    libjpeg-turbo reads the header (``simplejpeg.decode_jpeg_header``): the same parser
    that :func:`decode_jpeg` and every consumer of the image use, so the size we record is
    the size they see. The SOI check first only gives foreign bytes (a PNG) a clear message.
    """
    view = memoryview(data)
    if len(view) < 4 or view[0] != 0xFF or view[1] != 0xD8:
        raise FormatError(f"{what} is not a JPEG (no SOI marker)")
    try:
        height, width, _, _ = _simplejpeg().decode_jpeg_header(view)
    except (ValueError, TypeError) as exc:
        raise FormatError(f"{what} is a malformed JPEG (header: {exc})") from exc
    if width <= 0 or height <= 0:
        raise FormatError(f"{what} is a JPEG with zero dimensions")
    return (int(width), int(height))


def decode_jpeg(
    data: bytes | memoryview, what: str = "image", *, header: tuple[int, int] | None = None
) -> tuple[int, int]:
    """Decode *data* for real and return its ``(width, height)``.

    Why this decode: verification has to prove that every entropy-coded block of the frame
    decodes, but it does not need the pixels. libjpeg-turbo (through simplejpeg, which
    releases the GIL) decodes at its smallest DCT scale (1/8) to grayscale, so the inverse
    transform, upsampling and colour conversion run on 1/64 of the pixels while the Huffman
    decoding of the whole stream still happens. The decode is strict: a stream libjpeg has
    to repair (premature end, extraneous bytes, corrupt data) is refused rather than
    silently patched, and the decoded size must be the full frame at 1/8 scale.

    *header* is the ``(width, height)`` that :func:`jpeg_dimensions` read from these very
    bytes (a copy proven equal by its hash counts): the header is then not parsed a second
    time, which costs a fifth of the decode of a small frame.
    """
    simplejpeg = _simplejpeg()
    try:
        if header is None:
            height, width, _, _ = simplejpeg.decode_jpeg_header(data)
        else:
            width, height = header
        pixels = simplejpeg.decode_jpeg(
            data, colorspace="GRAY", min_width=1, min_height=1, strict=True
        )
    except (ValueError, TypeError) as exc:
        raise FormatError(f"{what} does not decode ({exc})") from exc
    if width <= 0 or height <= 0:
        raise FormatError(f"{what} is a JPEG with zero dimensions")
    expected = (-(-height // _DCT_SCALE), -(-width // _DCT_SCALE))
    if tuple(pixels.shape[:2]) != expected:
        raise FormatError(
            f"{what} decoded to {pixels.shape[1]}x{pixels.shape[0]} pixels at 1/8 scale, "
            f"expected {expected[1]}x{expected[0]} for a {width}x{height} frame"
        )
    return (int(width), int(height))


def encode_jpeg(image: object, quality: int) -> bytes:
    """Encode a PIL image as baseline JPEG at *quality* (deterministic for the same pixels).

    Settings: 4:4:4 (no chroma subsampling), baseline, standard Huffman tables (no
    optimize pass), libjpeg's default accurate integer DCT, a JFIF header without density;
    Pillow's libjpeg-turbo encodes it. Pillow releases the GIL for the whole encode only
    when it writes to a file descriptor (``ImageFile._save`` with a ``fileno()``; into a
    ``BytesIO`` each 64 KiB block is encoded holding the GIL), so the JPEG is written to an
    anonymous in-memory file and read back: frames encode in parallel on threads. The files
    are reused (a new one per frame cost 7% more CPU than the encode into a ``BytesIO``, a
    reused one 2.5%).
    """
    with _SCRATCH.lend() as fd:
        with io.FileIO(fd, "w", closefd=False) as scratch:
            scratch.seek(0)
            image.save(scratch, format="JPEG", quality=quality, optimize=False, subsampling=0)  # type: ignore[attr-defined]
            size = scratch.tell()
        data = os.pread(fd, size, 0)
    if len(data) != size:  # pragma: no cover - a memfd reads back whole
        raise OSError(f"read {len(data)} of the {size} JPEG bytes just written")
    return data


def encode_pixels(pixels: npt.NDArray[np.uint8], quality: int) -> bytes:
    """Encode ``uint8`` RGB ``(H, W, 3)`` or grey ``(H, W)`` pixels as JPEG at *quality*.

    The same bytes as :func:`encode_jpeg` of a PIL image holding the same pixels (it is that
    encoder), so a frame gives one JPEG whether it came as an array (raw, PNG, video
    packets) or as an image. Strided views (padding, BGR order) are accepted and copied
    once into Pillow's image.

    Why not simplejpeg, although it is libjpeg-turbo too and takes arrays without a copy:
    its encoder's entropy-coded data differ from Pillow's (same markers and quantization
    tables, different coefficients) at every setting it exposes, and decoded videos have
    been re-encoded through Pillow, so their bytes would change.

    Raises
    ------
    ValueError
        *pixels* is not a non-empty ``uint8`` grey or RGB array, or *quality* is not 1..100.
    """
    from PIL import Image

    array = np.asarray(pixels)
    shape_ok = array.ndim == 2 or (array.ndim == 3 and array.shape[2] == 3)
    if array.dtype != np.uint8 or not shape_ok or array.size == 0:
        raise ValueError(
            f"pixels must be uint8 of shape (H, W) or (H, W, 3), got {array.dtype} {array.shape}"
        )
    if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be an integer in 1..100, got {quality!r}")
    # ``Image.fromarray`` of a 3-byte-pixel array first fills a new image with zeros, then
    # unpacks the pixels over them; an image made uninitialized takes them directly (the
    # same image, 20% less of the conversion's CPU).
    contiguous = _contiguous(array)
    mode = "L" if contiguous.ndim == 2 else "RGB"
    image = Image.new(mode, (contiguous.shape[1], contiguous.shape[0]), None)
    image.frombytes(contiguous.data, "raw", mode, 0, 1)
    return encode_jpeg(image, quality)


def _contiguous(array: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """*array* in C order, copied fast from the views raw frames give.

    A BGR or 4-byte-pixel view (bgr8, rgba8, bgra8) has an inner axis of 3 elements that are
    not adjacent in memory; numpy copies it element group by element group, 3.5 times slower
    (20 ms CPU for a 1920x1080 bgr8 frame) than the three colour planes one by one.
    """
    if array.ndim == 2 or array.strides[1:] == (3, 1):  # padding at row ends only: rows copy
        return np.ascontiguousarray(array)
    out = np.empty(array.shape, dtype=np.uint8)
    for channel in range(3):
        out[:, :, channel] = array[:, :, channel]
    return out


class _ScratchFiles:
    """Unnamed in-memory files (memfds) for the encoder, each lent to one thread at a time.

    A free list under a lock rather than thread-local storage: a forked child frees the
    other threads' locals, and on Python 3.13 a finalizer run there (closing the file) hangs
    the child. So there is no finalizer; the files live as long as the process, one per
    encode that ran at the same time as others (never one per thread that ever encoded), and
    a forked child drops the parent's (they share the file) and its lock
    (:func:`os.register_at_fork`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._all: list[int] = []

    @contextlib.contextmanager
    def lend(self) -> Iterator[int]:
        """A scratch file's descriptor, this thread's until the block ends."""
        with self._lock:
            fd = self._free.pop() if self._free else None
        if fd is None:
            fd = _new_scratch_file()
            with self._lock:
                self._all.append(fd)
        try:
            yield fd
        finally:
            with self._lock:
                self._free.append(fd)

    def forget_in_child(self) -> None:
        """In a forked child: close the parent's files and start afresh."""
        for fd in self._all:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._lock = threading.Lock()
        self._free = []
        self._all = []


def _new_scratch_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("dataset-devkit-jpeg", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as file:  # pragma: no cover - Linux has memfd_create
        return os.dup(file.fileno())


_SCRATCH = _ScratchFiles()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_SCRATCH.forget_in_child)


# ----------------------------------------------------------------------------------- PNG
_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_CHUNK_HEAD: Final = struct.Struct(">I4s")
_IHDR: Final = struct.Struct(">IIBBBBB")
_MAX_SIDE: Final = 2**31 - 1  # the PNG spec's limit on width and height
_GREY_TYPES: Final = (0, 4)  # IHDR colour types: greyscale, greyscale with alpha


def png_dimensions(data: bytes | memoryview, what: str) -> tuple[int, int]:
    """``(width, height)`` from the IHDR chunk, without decoding; FormatError if not a PNG."""
    width, height, _ = _png_header(memoryview(data), what)
    return (width, height)


def _png_header(view: memoryview, what: str) -> tuple[int, int, int]:
    """Width, height and colour type of the IHDR chunk, checked (its CRC too)."""
    if bytes(view[:8]) != _PNG_SIGNATURE:
        raise FormatError(f"{what} is not a PNG (no PNG signature)")
    if len(view) < 8 + 12 + _IHDR.size:
        raise FormatError(f"{what} is a PNG cut short before its IHDR chunk ends")
    length, kind = _CHUNK_HEAD.unpack_from(view, 8)
    if kind != b"IHDR" or length != _IHDR.size:
        raise FormatError(
            f"{what} is a malformed PNG: first chunk is {_chunk_name(kind)} of {length} bytes, "
            f"expected IHDR of {_IHDR.size}"
        )
    _check_crc(view, 8, length, kind, what)
    width, height, _depth, colour_type, *_ = _IHDR.unpack_from(view, 16)
    if not (1 <= width <= _MAX_SIDE and 1 <= height <= _MAX_SIDE):
        raise FormatError(f"{what} is a PNG of {width}x{height} pixels; expected 1..2^31-1 each")
    return (int(width), int(height), int(colour_type))


def png_to_pixels(data: bytes | memoryview, what: str) -> npt.NDArray[np.uint8]:
    """Decode a PNG fully to ``uint8`` RGB ``(H, W, 3)`` or grey ``(H, W)`` pixels.

    Every chunk's CRC is checked and the file must end with its IEND chunk before Pillow
    decodes it: Pillow skips the CRCs of the image data and stops once it has every row, so a
    flipped byte could otherwise decode to wrong pixels without a word. Modes map
    deterministically: grey stays grey (at any bit depth, with or without alpha), 16-bit
    samples keep their high byte (as mono16 does; Pillow itself keeps the high byte of
    16-bit colour), palette images expand to RGB, bilevel to grey 0/255, and alpha is
    dropped, not blended (as for rgba8).

    Raises
    ------
    FormatError
        Not a PNG, truncated, a chunk failing its CRC, data after IEND, or image data
        Pillow cannot decode; the message names *what* and the chunk.
    """
    view = memoryview(data)
    width, height, colour_type = _png_header(view, what)
    _check_chunks(view, what)
    image = _open_png(view, what)
    if image.size != (width, height):  # pragma: no cover - Pillow reads the same IHDR
        raise FormatError(f"{what} decoded to {image.size}, its IHDR says {width}x{height}")
    pixels = _png_pixels(image, what)
    if colour_type in _GREY_TYPES and pixels.ndim == 3:
        # Pillow opens 16-bit grey with alpha as RGBA (high bytes, grey copied to R, G, B).
        return np.ascontiguousarray(pixels[:, :, 0])
    return pixels


def _open_png(view: memoryview, what: str) -> Any:
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(view), formats=["PNG"])
        image.load()
    except Image.DecompressionBombError as exc:
        raise FormatError(f"{what} is a PNG too large to decode ({exc})") from None
    except (OSError, SyntaxError, ValueError, EOFError, zlib.error) as exc:
        raise FormatError(f"{what} is a PNG whose image data does not decode ({exc})") from None
    return image


def _png_pixels(image: Any, what: str) -> npt.NDArray[np.uint8]:
    mode = image.mode
    if mode in ("I;16", "I;16B", "I;16L", "I"):  # 16-bit grey (Pillow's I for older files)
        return mono16_to_mono8(np.asarray(image))
    if mode == "L":
        return np.asarray(image)
    if mode == "LA":
        return np.ascontiguousarray(np.asarray(image)[:, :, 0])
    if mode == "1":
        return np.asarray(image.convert("L"))
    if mode == "RGB":
        return np.asarray(image)
    if mode == "RGBA":
        return np.ascontiguousarray(np.asarray(image)[:, :, :3])
    if mode in ("P", "PA"):
        return np.asarray(image.convert("RGB"))
    raise FormatError(  # pragma: no cover - the PNG plugin opens no other mode
        f"{what} is a PNG in mode {mode!r}, which has no RGB or grey form here"
    )


def _check_chunks(view: memoryview, what: str) -> None:
    """Walk the chunks: each complete, each CRC right, IEND last and nothing after it."""
    offset = len(_PNG_SIGNATURE)
    while True:
        if offset + _CHUNK_HEAD.size > len(view):
            raise FormatError(f"{what} is a truncated PNG: it ends at byte {len(view)} before IEND")
        length, kind = _CHUNK_HEAD.unpack_from(view, offset)
        end = offset + _CHUNK_HEAD.size + length + 4
        if end > len(view):
            raise FormatError(
                f"{what} is a truncated PNG: chunk {_chunk_name(kind)} at byte {offset} needs "
                f"{end - offset} bytes, {len(view) - offset} are left"
            )
        _check_crc(view, offset, length, kind, what)
        if kind == b"IEND":
            break
        offset = end
    if end != len(view):
        raise FormatError(f"{what} is a malformed PNG: {len(view) - end} bytes after IEND")


def _check_crc(view: memoryview, offset: int, length: int, kind: bytes, what: str) -> None:
    body = view[offset + 4 : offset + 8 + length]  # the CRC covers type and data
    (stored,) = struct.unpack_from(">I", view, offset + 8 + length)
    if zlib.crc32(body) != stored:
        raise FormatError(
            f"{what} is a corrupt PNG: chunk {_chunk_name(kind)} at byte {offset} fails its CRC"
        )


def _chunk_name(kind: bytes) -> str:
    return kind.decode("latin-1") if kind.isalpha() else repr(kind)
