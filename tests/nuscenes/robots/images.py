"""Camera content and its still encodings: raw ``sensor_msgs/Image`` bytes, PNG, JPEG.

The content is deterministic and smooth like a real scene (a sky/ground gradient whose
horizon sways, soft coloured blobs drifting across, a faint fine texture), so that a JPEG at
quality 95 of a faithful decode stays well above 40 dB PSNR, while a decoder that swaps
channels, drops rows or misreads a Bayer pattern falls far below it.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "RawFrame",
    "bayer_mosaic",
    "compressed_formats",
    "encode_compressed",
    "encode_raw",
    "gray",
    "psnr",
    "scene_rgb",
]

#: Each blob: (x phase, y centre, radius fraction, colour).
_BLOBS = (
    (0.0, 0.62, 0.18, (0.85, 0.35, 0.20)),
    (1.7, 0.70, 0.14, (0.20, 0.55, 0.85)),
    (3.1, 0.35, 0.22, (0.90, 0.85, 0.30)),
    (4.4, 0.80, 0.12, (0.30, 0.80, 0.35)),
)


def scene_rgb(seed: int, t_s: float, width: int, height: int) -> NDArray[np.uint8]:
    """The camera's view at *t_s* seconds: H×W×3 RGB, values kept inside [20, 235].

    Every term is separable in rows and columns (Gaussian blobs, sines split by the angle
    sum formula), so a frame costs a few outer products: the whole set of recordings is
    generated in seconds.
    """
    v = (np.arange(height, dtype=np.float64) + 0.5) / height
    u = (np.arange(width, dtype=np.float64) + 0.5) / width
    horizon = 0.45 + 0.05 * math.sin(0.7 * t_s + seed)
    sky = np.array([0.45, 0.62, 0.85]) * (1.0 - 0.4 * v[:, None]) + 0.02 * (seed % 5)
    ground = np.array([0.42, 0.36, 0.28]) + 0.25 * (v[:, None] - horizon)
    blend = (1.0 / (1.0 + np.exp(-(v - horizon) * 25.0)))[:, None]
    column = sky * (1.0 - blend) + ground * blend  # H×3: the background varies by row only
    img = np.repeat(column.T[:, :, None], width, axis=2)  # 3×H×W: whole planes per operation
    aspect = width / height
    for k, (phase, cy, radius, colour) in enumerate(_BLOBS):
        # Blobs sweep across at a steady pace (a robot turning in place pans its view), so
        # consecutive frames always differ; one leaving at the right re-enters at the left.
        cx = -0.15 + 1.3 * ((0.6 * t_s * (1 + 0.15 * k) + phase / 6.3 + 0.37 * seed) % 1.0)
        gy = np.exp(-((v - cy - 0.08 * math.cos(1.1 * t_s + k)) ** 2) / (2 * radius**2))
        gx = np.exp(-(((u - cx) * aspect) ** 2) / (2 * radius**2))
        weight = 0.8 * np.outer(gy, gx)
        keep = 1.0 - weight
        for c in range(3):
            img[c] *= keep
            img[c] += colour[c] * weight
    texture = np.zeros((height, width))
    for amplitude, fu, fv, rate in ((0.012, 7.0, 5.0, 6.0), (0.008, 13.0, -11.0, -4.0)):
        a = 2 * math.pi * fu * u + rate * t_s + (seed if rate > 0 else 0.0)
        b = 2 * math.pi * fv * v
        texture += amplitude * (np.outer(np.cos(b), np.sin(a)) + np.outer(np.sin(b), np.cos(a)))
    img += texture
    img *= 255.0
    np.rint(img, out=img)
    np.clip(img, 20, 235, out=img)
    return np.ascontiguousarray(img.transpose(1, 2, 0)).astype(np.uint8)


def gray(rgb: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """BT.601 luma of an RGB image (what a mono sensor of the same scene would see)."""
    weights = np.array([0.299, 0.587, 0.114])
    luma: NDArray[np.uint8] = np.rint(rgb.astype(np.float64) @ weights).astype(np.uint8)
    return luma


#: 2×2 tile of each Bayer pattern: channel index (0 R, 1 G, 2 B) at (even row, even col),
#: (even, odd), (odd, even), (odd, odd).
_BAYER = {
    "bayer_rggb8": (0, 1, 1, 2),
    "bayer_bggr8": (2, 1, 1, 0),
    "bayer_gbrg8": (1, 2, 0, 1),
    "bayer_grbg8": (1, 0, 2, 1),
}


def bayer_mosaic(rgb: NDArray[np.uint8], encoding: str) -> NDArray[np.uint8]:
    """The single-channel sensor image a colour filter array of *encoding* records."""
    tile = _BAYER[encoding]
    out = np.empty(rgb.shape[:2], dtype=np.uint8)
    for k, (dy, dx) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        out[dy::2, dx::2] = rgb[dy::2, dx::2, tile[k]]
    return out


def _yuv422(rgb: NDArray[np.uint8], order: str) -> NDArray[np.uint8]:
    """BT.601 limited-range 4:2:2, chroma averaged over each pixel pair (as OpenCV decodes it)."""
    f = rgb.astype(np.float64)
    r, g, b = f[..., 0], f[..., 1], f[..., 2]
    y = 16.0 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0
    cb = 128.0 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0
    cr = 128.0 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0
    u = (cb[:, 0::2] + cb[:, 1::2]) / 2
    v = (cr[:, 0::2] + cr[:, 1::2]) / 2
    y0, y1 = y[:, 0::2], y[:, 1::2]
    planes = {"uyvy": (u, y0, v, y1), "yuyv": (y0, u, y1, v)}[order]
    packed = np.stack(planes, axis=-1).reshape(rgb.shape[0], rgb.shape[1] * 2)
    out: NDArray[np.uint8] = np.clip(np.rint(packed), 0, 255).astype(np.uint8)
    return out


@dataclass(frozen=True, slots=True)
class RawFrame:
    """A raw image as ``sensor_msgs/Image`` and ``foxglove.RawImage`` carry it."""

    encoding: str
    width: int
    height: int
    step: int
    is_bigendian: bool
    data: bytes


def encode_raw(
    rgb: NDArray[np.uint8], encoding: str, *, step_padding: int = 0, big_endian: bool = False
) -> RawFrame:
    """*rgb* in the raw *encoding*, each row padded by *step_padding* zero bytes.

    Mono encodings take an H×W grey image as well (it is used as is).
    """
    height, width = rgb.shape[:2]
    luma = rgb if rgb.ndim == 2 else gray(rgb)
    if encoding == "rgb8":
        pixels = rgb
    elif encoding == "bgr8":
        pixels = rgb[..., ::-1]
    elif encoding in ("rgba8", "bgra8"):
        alpha = np.full((height, width, 1), 255, dtype=np.uint8)
        colour = rgb if encoding == "rgba8" else rgb[..., ::-1]
        pixels = np.concatenate([colour, alpha], axis=-1)
    elif encoding == "mono8":
        pixels = luma
    elif encoding == "mono16":
        # ×257 maps 0..255 onto 0..65535: ``v >> 8`` and ``v / 257`` give back the same byte.
        wide = luma.astype(np.uint16) * np.uint16(257)
        pixels = wide.astype(">u2" if big_endian else "<u2").view(np.uint8).reshape(height, -1)
    elif encoding in _BAYER:
        pixels = bayer_mosaic(rgb, encoding)
    elif encoding in ("yuv422", "uyvy"):
        pixels = _yuv422(rgb, "uyvy")
    elif encoding in ("yuyv", "yuv422_yuy2"):
        pixels = _yuv422(rgb, "yuyv")
    else:
        raise ValueError(f"not a raw encoding: {encoding!r}")
    rows = np.ascontiguousarray(pixels).reshape(height, -1)
    if step_padding:
        rows = np.concatenate([rows, np.zeros((height, step_padding), np.uint8)], axis=1)
    return RawFrame(
        encoding=encoding,
        width=width,
        height=height,
        step=rows.shape[1],
        is_bigendian=big_endian and encoding == "mono16",
        data=rows.tobytes(),
    )


def compressed_formats(payload: str, *, mono: bool = False) -> tuple[str, str]:
    """``CompressedImage.format`` as ROS 2's image_transport writes it, and as Foxglove does."""
    source = "mono8" if mono else "rgb8"
    target = "mono8" if mono else "bgr8"
    if payload == "png":
        return f"{source}; png compressed {target}", "png"
    return f"{source}; jpeg compressed {target}", "jpeg"


def encode_compressed(rgb: NDArray[np.uint8], payload: str, *, quality: int = 92) -> bytes:
    """A PNG or baseline JPEG of *rgb* (H×W×3, or H×W grey) written by Pillow."""
    from PIL import Image

    image = Image.fromarray(rgb)
    out = io.BytesIO()
    if payload == "png":
        # compressed_image_transport's default png_level is 3.
        image.save(out, format="PNG", compress_level=3)
    elif payload == "jpeg":
        image.save(out, format="JPEG", quality=quality)
    else:
        raise ValueError(f"not a still-image payload: {payload!r}")
    return out.getvalue()


def psnr(a: NDArray[np.uint8], b: NDArray[np.uint8]) -> float:
    """Peak signal-to-noise ratio of two 8-bit images, in dB (``inf`` when equal)."""
    err = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return math.inf if err == 0 else 10.0 * math.log10(255.0**2 / err)
