"""Camera content for synthetic recordings: a few textures, panned frame by frame.

A long recording at full resolution cannot afford to render each frame, and tests need
every frame to be cheap to regenerate. So each camera gets one texture, made once: a sky
with clouds over a textured floor with boxes on the horizon, periodic horizontally. Frame
*k* is a crop of it at an offset that pans a few pixels a frame (and bobs up and down), so
consecutive frames differ everywhere and a frame costs a copy. The content is smooth with a
little grain, as camera images are: JPEG at quality 95 keeps it above 40 dB.

Integer arithmetic only (value noise from an integer hash, bilinear weights from a
smoothstep table): the pixels are the same on every numpy version, CPU and platform, which
floating-point ``sin`` and ``exp`` in numpy's vectorised kernels do not promise.

Raw encodings are made from the RGB texture once (a crop of the encoded texture is the
encoded crop, since offsets are even): rgb8, bgr8, rgba8, bgra8, mono8 and mono16 (BT.601
luma, x257 in little-endian mono16), the four Bayer mosaics, and 4:2:2 YUV (uyvy, yuyv;
BT.601 limited range, chroma averaged over each pixel pair).
"""

from __future__ import annotations

import functools
import zlib
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "TEXTURE_ENCODINGS",
    "bytes_per_pixel",
    "encoded_texture",
    "frame_offset",
    "rgb_texture",
]

Array = npt.NDArray[np.uint8]

_BYTES_PER_PIXEL: Final = {
    "rgb8": 3,
    "bgr8": 3,
    "rgba8": 4,
    "bgra8": 4,
    "mono8": 1,
    "mono16": 2,
    "bayer_rggb8": 1,
    "bayer_bggr8": 1,
    "bayer_gbrg8": 1,
    "bayer_grbg8": 1,
    "uyvy": 2,
    "yuyv": 2,
}
#: The ``sensor_msgs/msg/Image`` encodings :func:`encoded_texture` makes.
TEXTURE_ENCODINGS: Final = tuple(_BYTES_PER_PIXEL)
#: Rows of texture above and below the frame for the vertical bob (even).
_BOB: Final = 16
#: Weights of the bilinear interpolation sum to this.
_ONE: Final = 256


def bytes_per_pixel(encoding: str) -> int:
    """Bytes per pixel of *encoding* in a row (4:2:2 YUV: 4 bytes per 2 pixels)."""
    return _BYTES_PER_PIXEL[encoding]


def _unit(width: int) -> int:
    """The finest noise cell in pixels: features scale with the frame."""
    return max(2, width // 80)


def _period(width: int) -> int:
    """The texture's horizontal period: at least two frames wide, whole noise cells."""
    cell = 16 * _unit(width)
    return -(-max(2 * width, 256) // cell) * cell


def frame_offset(width: int, k: int) -> tuple[int, int]:
    """``(x, y)`` of frame *k*'s top-left corner in the texture (both even).

    The view pans a few pixels a frame, each lap of the period two pixels further on, and
    bobs up and down over 34 frames: consecutive frames always differ, and the sequence of
    views comes back only after 2,074 frames at 320 pixels wide (more when wider).
    """
    pan = 2 * max(1, width // 160)
    period = _period(width)
    phase = k % (2 * _BOB + 2)
    bob = phase if phase <= _BOB + 1 else 2 * _BOB + 2 - phase
    return ((k * pan + 2 * (k * pan // period)) % period, bob & ~1)


def _mix(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """An integer hash of uint32 values (wrapping arithmetic; lowbias32)."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def _smoothstep(cell: int) -> npt.NDArray[np.int64]:
    """``_ONE * (3 t^2 - 2 t^3)`` at ``t = f / cell`` for each offset f, rounded."""
    f = np.arange(cell, dtype=np.int64)
    return (_ONE * (3 * f * f * cell - 2 * f**3) + cell**3 // 2) // cell**3


def _noise(rows: int, period: int, cell: int, key: int) -> npt.NDArray[np.int32]:
    """Value noise in 0..255, *cell* pixels per lattice step, periodic in x over *period*.

    Interpolated along x on the lattice rows first (few), then along y: two gathers of the
    full size instead of four.
    """
    ny, nx = rows // cell + 2, period // cell
    gy = np.arange(ny, dtype=np.uint32)[:, None]
    gx = np.arange(nx, dtype=np.uint32)[None, :]
    lattice = (_mix(_mix(gy ^ np.uint32(key)) + gx) & np.uint32(255)).astype(np.int32)
    weights = _smoothstep(cell).astype(np.int32)
    x = np.arange(period)
    x0 = x // cell
    wx = weights[x % cell][None, :]
    across = lattice[:, x0] * (_ONE - wx) + lattice[:, (x0 + 1) % nx] * wx  # (ny, period)
    y = np.arange(rows)
    y0 = y // cell
    wy = weights[y % cell][:, None]
    out: npt.NDArray[np.int32] = (across[y0] * (_ONE - wy) + across[y0 + 1] * wy) // (_ONE * _ONE)
    return out


def _key(name: str, salt: int) -> int:
    return zlib.crc32(f"{name}/{salt}".encode())


@functools.lru_cache(maxsize=8)
def rgb_texture(width: int, height: int, name: str) -> Array:
    """The RGB texture of camera *name* for *width* x *height* frames (read-only).

    ``period + width`` columns (the first *width* repeated at the end, so every crop is one
    slice) and ``height + 16`` rows.
    """
    rows, period, unit = height + _BOB, _period(width), _unit(width)
    large = _noise(rows, period, 16 * unit, _key(name, 1))
    mid = _noise(rows, period, 4 * unit, _key(name, 2))
    fine = _noise(rows, period, unit, _key(name, 3))
    y = np.arange(rows, dtype=np.int32)[:, None]
    x = np.arange(period, dtype=np.uint32)[None, :]
    grain = (_mix(_mix(y.astype(np.uint32) ^ np.uint32(_key(name, 4))) + x) & 7).astype(np.int32)
    # The horizon undulates; boxes stand on it.
    hill = _noise(1, period, 32 * unit, _key(name, 5))
    horizon = rows * 2 // 5 + (hill - 128) * rows // 1600
    sky_weight = np.clip((horizon + 2 - y) * 64, 0, 256)  # a 4-row soft edge
    channels = []
    sky_base, sky_top = (150, 180, 225), (95, 135, 200)
    floor_near, floor_far = (150, 125, 95), (105, 100, 85)
    for c in range(3):
        sky = sky_top[c] + (sky_base[c] - sky_top[c]) * y // rows + (large - 128) * 3 // 16
        floor = floor_far[c] + (floor_near[c] - floor_far[c]) * y // rows
        floor = floor + (mid - 128) // 4 + (fine - 128) // 6
        channels.append((sky * sky_weight + floor * (256 - sky_weight)) // 256)
    image = np.stack(channels, axis=-1)
    _boxes(image, horizon, name, unit, mid)
    image += (grain - 3)[..., None]
    clipped = np.clip(image, 0, 255).astype(np.uint8)
    texture: Array = np.concatenate([clipped, clipped[:, :width]], axis=1)
    texture.flags.writeable = False
    return texture


def _boxes(
    image: npt.NDArray[np.int32],
    horizon: npt.NDArray[np.int32],
    name: str,
    unit: int,
    shade: npt.NDArray[np.int32],
) -> None:
    """Shelves and crates standing on the horizon, each one flat colour with some texture."""
    period = image.shape[1]
    count = 6
    seeds = _mix(np.arange(count * 4, dtype=np.uint32) ^ np.uint32(_key(name, 6)))
    for i in range(count):
        a, b, c, d = (int(v) for v in seeds[4 * i : 4 * i + 4])
        left = a % period
        size = (8 + b % 24) * unit
        tall = (6 + c % 20) * unit
        colour = (60 + d % 150, 60 + (d >> 8) % 150, 60 + (d >> 16) % 150)
        columns = (np.arange(left, left + size) % period)[None, :]
        base = int(horizon[0, left]) + 2 * unit
        top = max(0, base - tall)
        block = shade[top:base, columns[0]]
        for ch in range(3):
            image[top:base, columns[0], ch] = colour[ch] + (block - 128) // 8


@functools.lru_cache(maxsize=8)
def encoded_texture(width: int, height: int, name: str, encoding: str) -> Array:
    """:func:`rgb_texture` as rows of *encoding* bytes (read-only, 2-D uint8)."""
    rgb = rgb_texture(width, height, name)
    if encoding == "rgb8":
        out = rgb
    elif encoding in ("bgr8", "rgba8", "bgra8"):
        order = rgb[..., ::-1] if encoding.startswith("bgr") else rgb
        if encoding.endswith("a8"):
            alpha = np.full((*rgb.shape[:2], 1), 255, dtype=np.uint8)
            order = np.concatenate([order, alpha], axis=-1)
        out = np.ascontiguousarray(order)
    elif encoding in ("mono8", "mono16"):
        luma = _luma(rgb)
        out = luma if encoding == "mono8" else (luma.astype("<u2") * 257).view(np.uint8)
    elif encoding.startswith("bayer_"):
        out = _mosaic(rgb, encoding.removeprefix("bayer_").removesuffix("8"))
    else:
        out = _yuv422(rgb, encoding)
    out = np.ascontiguousarray(out.reshape(rgb.shape[0], -1))
    out.flags.writeable = False
    return out


def _luma(rgb: Array) -> Array:
    r, g, b = (rgb[..., i].astype(np.int32) for i in range(3))
    luma: Array = ((77 * r + 150 * g + 29 * b + 128) >> 8).astype(np.uint8)
    return luma


def _mosaic(rgb: Array, pattern: str) -> Array:
    """A Bayer mosaic: *pattern* names the colours of the 2x2 tile, row by row."""
    out = np.empty(rgb.shape[:2], dtype=np.uint8)
    index = {"r": 0, "g": 1, "b": 2}
    for i, colour in enumerate(pattern):
        dy, dx = divmod(i, 2)
        out[dy::2, dx::2] = rgb[dy::2, dx::2, index[colour]]
    return out


def _yuv422(rgb: Array, encoding: str) -> Array:
    """BT.601 limited-range 4:2:2: one U and V per pixel pair, ``U Y0 V Y1`` or ``Y0 U Y1 V``."""
    r, g, b = (rgb[..., i].astype(np.int32) for i in range(3))
    y = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16
    u = ((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128
    v = ((112 * r - 94 * g - 18 * b + 128) >> 8) + 128
    u2 = (u[:, 0::2] + u[:, 1::2] + 1) >> 1
    v2 = (v[:, 0::2] + v[:, 1::2] + 1) >> 1
    y0, y1 = y[:, 0::2], y[:, 1::2]
    parts = (u2, y0, v2, y1) if encoding == "uyvy" else (y0, u2, y1, v2)
    packed: Array = np.stack(parts, axis=-1).astype(np.uint8)
    return packed
