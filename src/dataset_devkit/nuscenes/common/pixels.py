"""Raw camera pixels (``sensor_msgs/Image``, ``foxglove.RawImage``) to 8-bit RGB or grey arrays.

A raw frame is a buffer, an encoding name and a row layout (``width``, ``height``, ``step``,
``is_bigendian``). Every supported encoding becomes a ``uint8`` array of shape ``(H, W, 3)``
(RGB) or ``(H, W)`` (grey) that :func:`dataset_devkit.nuscenes.common.jpeg.encode_pixels`
turns into the dataroot's JPEG. The layout is checked before anything is read, so a frame
that lies about its size is refused with what was found and what was expected instead of
being read past its end.

Why numpy and no OpenCV: the conversions are a handful of array operations, OpenCV is not a
dependency of the library, and doing them here fixes their exact arithmetic (the same bytes
on every machine). Where a byte layout allows it the result is a *view* of the message
buffer (rgb8, rgba8, bgr8, bgra8, mono8, mono16 and their aliases): no copy at all, padding
bytes at the row ends skipped by the strides. Bayer and YUV 4:2:2 frames are computed.

Encoding names follow ROS's ``sensor_msgs/image_encodings.hpp``; the OpenCV type names
``8UC1``, ``8UC3`` and ``16UC1`` are aliases of ``mono8``, ``bgr8`` and ``mono16``. ROS gives
``8UC3`` no channel meaning; it is the type of an OpenCV ``Mat``, whose channel order is BGR,
and ``cv_bridge``-published ``8UC3`` frames are BGR, so it is read as ``bgr8`` (as Foxglove
and Webviz display it).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Final, SupportsIndex, cast

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import did_you_mean

__all__ = ["RAW_ENCODINGS", "mono16_to_mono8", "raw_to_pixels"]

Pixels = npt.NDArray[np.uint8]


@dataclass(frozen=True, slots=True)
class _Layout:
    """How one encoding stores a pixel: bytes per pixel and the conversion that reads it."""

    bytes_per_pixel: int
    kind: str  # "rgb", "mono8", "mono16", "bayer", "yuv422"
    order: str = ""  # channel order (rgb kinds), CFA pattern (bayer), byte order (yuv422)


_LAYOUTS: Final[dict[str, _Layout]] = {
    "rgb8": _Layout(3, "rgb", "rgb"),
    "bgr8": _Layout(3, "rgb", "bgr"),
    "8UC3": _Layout(3, "rgb", "bgr"),
    "rgba8": _Layout(4, "rgb", "rgba"),
    "bgra8": _Layout(4, "rgb", "bgra"),
    "mono8": _Layout(1, "mono8"),
    "8UC1": _Layout(1, "mono8"),
    "mono16": _Layout(2, "mono16"),
    "16UC1": _Layout(2, "mono16"),
    "bayer_rggb8": _Layout(1, "bayer", "rggb"),
    "bayer_bggr8": _Layout(1, "bayer", "bggr"),
    "bayer_gbrg8": _Layout(1, "bayer", "gbrg"),
    "bayer_grbg8": _Layout(1, "bayer", "grbg"),
    "uyvy": _Layout(2, "yuv422", "uyvy"),
    "yuv422": _Layout(2, "yuv422", "uyvy"),  # ROS's deprecated name of UYVY
    "yuyv": _Layout(2, "yuv422", "yuyv"),
    "yuv422_yuy2": _Layout(2, "yuv422", "yuyv"),  # ROS's deprecated name of YUYV
}

#: Every raw encoding :func:`raw_to_pixels` accepts (ROS / Foxglove names).
RAW_ENCODINGS: Final[frozenset[str]] = frozenset(_LAYOUTS)
#: Other names of the same layouts, as ROS defines them (listed apart in refusals).
_ALIASES: Final = {"8UC1": "mono8", "8UC3": "bgr8", "16UC1": "mono16"} | {
    "yuv422": "uyvy",
    "yuv422_yuy2": "yuyv",
}

# BT.601 limited range ("studio swing") in 20-bit fixed point: the constants and rounding of
# OpenCV's COLOR_YUV2RGB_UYVY / _YUY2 (imgproc color_yuv: ITUR_BT_601_*), so a frame converts
# to the same RGB values OpenCV gives.
_SHIFT: Final = 20
_CY: Final = 1220542  # 1.164 * 2**20
_CVR: Final = 1673527  # 1.596
_CVG: Final = -852492  # -0.813
_CUG: Final = -409993  # -0.391
_CUB: Final = 2116026  # 2.018
_HALF: Final = 1 << (_SHIFT - 1)


def raw_to_pixels(
    data: bytes | bytearray | memoryview,
    *,
    encoding: str,
    width: int,
    height: int,
    step: int,
    is_bigendian: bool,
    what: str,
) -> Pixels:
    """One raw frame as ``uint8`` RGB ``(height, width, 3)`` or grey ``(height, width)``.

    Parameters
    ----------
    data
        The frame's bytes: ``height`` rows of ``step`` bytes (the last row may stop right
        after its pixels). Bytes past a row's pixels (padding) are ignored.
    encoding
        One of :data:`RAW_ENCODINGS`.
    width, height
        Pixels per row and rows, each at least 1.
    step
        Bytes from one row to the next, at least ``width`` times the bytes per pixel.
    is_bigendian
        Byte order of 16-bit samples (mono16, 16UC1); ignored for 8-bit encodings.
    what
        Names the frame in errors (``"/cam/image_raw at 1700000000123456789 ns"``).

    Returns
    -------
    numpy.ndarray
        Grey for mono8, mono16 and their aliases, RGB for everything else (alpha dropped,
        not blended: the recorded colour is kept). For the byte-aligned encodings the array
        is a read-only view of *data* and shares its memory; copy it to keep it beyond the
        buffer's life or to write to it.

    Raises
    ------
    FormatError
        An unknown encoding (with the supported list), a size below 1, a step shorter than
        a row, too few bytes for the rows, an odd width for 4:2:2 or a Bayer mosaic smaller
        than 2x2; the message names *what*, what was found and what was expected.

    Notes
    -----
    mono16 maps to 8 bits by its high byte (``v >> 8``), not ``round(v * 255 / 65535)``.
    Both map 0 to 0, 65535 to 255 and undo the usual 8-to-16-bit widening (``v * 257``)
    exactly; the high byte is also what Pillow keeps of a 16-bit colour PNG (it has no
    16-bit colour mode), so every 16-bit source of this pipeline maps one way, and it is a
    zero-copy view (every other byte of the buffer). The price is that values round down
    (by less than one 8-bit step), which a JPEG at quality 95 cannot show anyway.

    Bayer mosaics are demosaiced bilinearly: a pixel's missing colours are the rounded mean
    of its nearest neighbours of that colour (2 or 4), integer arithmetic, the mosaic
    mirrored at the borders (which keeps the colour pattern), so the result is the same on
    every machine and exactly a flat image's colour on a flat image.

    YUV 4:2:2 (UYVY, YUYV) converts as OpenCV's ``COLOR_YUV2RGB_UYVY`` / ``_YUY2`` do:
    BT.601, limited range (Y in 16..235), both pixels of a pair sharing their U and V.
    """
    layout = _LAYOUTS.get(encoding)
    if layout is None:
        aliases = ", ".join(f"{alias} ({name})" for alias, name in sorted(_ALIASES.items()))
        raise FormatError(
            f"{what}: raw image encoding {encoding!r} is not supported"
            + did_you_mean(encoding, RAW_ENCODINGS - _ALIASES.keys(), known="supported")
            + f"; aliases: {aliases}"
        )
    width, height, step = (
        _count(what, name, value)
        for name, value in (("width", width), ("height", height), ("step", step))
    )
    row_bytes = width * layout.bytes_per_pixel
    if step < row_bytes:
        raise FormatError(
            f"{what}: step {step} bytes is shorter than a row of {width} {encoding} pixels "
            f"({row_bytes} bytes)"
        )
    buffer = np.frombuffer(data, dtype=np.uint8)
    needed = step * (height - 1) + row_bytes
    if buffer.size < needed:
        raise FormatError(
            f"{what}: {buffer.size} bytes of pixel data, expected at least {needed} for "
            f"{height} rows of {step} bytes ({width}x{height} {encoding})"
        )
    if layout.kind == "rgb":
        return _channels(buffer, layout, width, height, step)
    if layout.kind == "mono8":
        return _view(buffer, (height, width), (step, 1))
    if layout.kind == "mono16":
        # The high byte of each sample: the second byte little-endian, the first big-endian.
        return _view(buffer, (height, width), (step, 2), offset=0 if is_bigendian else 1)
    if layout.kind == "bayer":
        if width < 2 or height < 2:
            raise FormatError(
                f"{what}: a {encoding} mosaic of {width}x{height} pixels has no complete "
                "2x2 colour pattern; expected at least 2x2"
            )
        return _demosaic(_view(buffer, (height, width), (step, 1)), layout.order)
    if width % 2:
        raise FormatError(
            f"{what}: {encoding} is 4:2:2 (two pixels share one U and V) but the width is "
            f"{width}; expected an even width"
        )
    return _yuv422_to_rgb(_view(buffer, (height, width // 2, 4), (step, 4, 1)), layout.order)


def mono16_to_mono8(samples: npt.NDArray[np.uint16] | npt.NDArray[np.int32]) -> Pixels:
    """16-bit grey samples (any byte order) to 8 bits by their high byte, as for mono16.

    For sources that arrive as integer arrays rather than raw bytes (a 16-bit PNG); see the
    notes of :func:`raw_to_pixels` for why the high byte.
    """
    return (np.asarray(samples).astype(np.uint16, copy=False) >> 8).astype(np.uint8)


def _count(what: str, name: str, value: object) -> int:
    """*value* as a positive int (numpy integers welcome, bools and floats not)."""
    try:
        number = operator.index(cast(SupportsIndex, value))
    except TypeError:
        number = 0
    if isinstance(value, bool) or number < 1:
        raise FormatError(f"{what}: {name} is {value!r}, expected a positive integer")
    return int(number)


def _view(
    buffer: Pixels, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0
) -> Pixels:
    """A strided, read-only window on *buffer* (bounds were checked by the caller)."""
    view: Pixels = np.ndarray(shape, dtype=np.uint8, buffer=buffer, offset=offset, strides=strides)
    view.flags.writeable = False
    return view


def _channels(buffer: Pixels, layout: _Layout, width: int, height: int, step: int) -> Pixels:
    channels = layout.bytes_per_pixel
    full = _view(buffer, (height, width, channels), (step, channels, 1))
    if layout.order == "rgb":
        return full
    if layout.order == "rgba":
        return full[:, :, :3]
    return full[:, :, 2::-1]  # bgr8, bgra8: the first three bytes reversed, still a view


def _demosaic(mosaic: Pixels, pattern: str) -> Pixels:
    """Bilinear demosaic of an 8-bit mosaic whose top-left 2x2 block is *pattern*."""
    height, width = mosaic.shape
    padded = np.pad(mosaic, 1, mode="reflect").astype(np.uint16)
    out = np.empty((height, width, 3), dtype=np.uint8)
    channel = {"r": 0, "g": 1, "b": 2}

    def near(dy: int, dx: int, offsets: tuple[tuple[int, int], ...]) -> npt.NDArray[np.uint16]:
        """Rounded mean of the neighbours at *offsets* of every site of parity (dy, dx)."""
        total = np.zeros(((height - dy + 1) // 2, (width - dx + 1) // 2), dtype=np.uint16)
        for oy, ox in offsets:
            total += padded[1 + dy + oy :: 2, 1 + dx + ox :: 2][: total.shape[0], : total.shape[1]]
        total += len(offsets) // 2
        total >>= len(offsets).bit_length() - 1  # / 2 or / 4: a shift, numpy divides slowly
        return total

    horizontal = ((0, -1), (0, 1))
    vertical = ((-1, 0), (1, 0))
    cross = (*vertical, *horizontal)
    diagonal = ((-1, -1), (-1, 1), (1, -1), (1, 1))
    for site, colour in enumerate(pattern):
        dy, dx = divmod(site, 2)
        at = (slice(dy, None, 2), slice(dx, None, 2))
        out[(*at, channel[colour])] = mosaic[at]
        if colour == "g":
            beside = pattern[dy * 2 + 1 - dx]  # the other colour of this row
            above = pattern[(1 - dy) * 2 + dx]  # the other colour of this column
            out[(*at, channel[beside])] = near(dy, dx, horizontal)
            out[(*at, channel[above])] = near(dy, dx, vertical)
        else:
            out[(*at, 1)] = near(dy, dx, cross)
            out[(*at, channel["b" if colour == "r" else "r"])] = near(dy, dx, diagonal)
    return out


def _yuv422_to_rgb(pairs: Pixels, order: str) -> Pixels:
    """``(H, W/2, 4)`` macropixels (two pixels each) to ``(H, W, 3)`` RGB, BT.601 limited.

    Written plane by plane with preallocated int32 scratch: a broadcast over the pixel
    pair (an inner axis of length 2) is three times slower in numpy.
    """
    if order == "uyvy":
        u, y0, v, y1 = (pairs[:, :, k] for k in range(4))
    else:  # yuyv
        y0, u, y1, v = (pairs[:, :, k] for k in range(4))
    height, half = pairs.shape[:2]
    uu = u.astype(np.int32)
    uu -= 128
    vv = v.astype(np.int32)
    vv -= 128
    chroma = (_CVR * vv + _HALF, _CVG * vv + _CUG * uu + _HALF, _CUB * uu + _HALF)
    out = np.empty((height, half, 2, 3), dtype=np.uint8)
    total = np.empty((height, half), dtype=np.int32)
    for k, y in enumerate((y0, y1)):
        luma = y.astype(np.int32)
        luma -= 16
        np.maximum(luma, 0, out=luma)  # OpenCV clamps Y below 16 (footroom) to black
        luma *= _CY
        for c, term in enumerate(chroma):
            np.add(luma, term, out=total)
            total >>= _SHIFT  # an arithmetic shift: rounds toward minus infinity, as in C
            np.clip(total, 0, 255, out=total)
            out[:, :, k, c] = total
    return out.reshape(height, half * 2, 3)
