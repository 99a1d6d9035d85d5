"""Camera-like test pictures (smooth, textured, moving) and the PSNR that judges lossy copies."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.uint8]


def scene(height: int, width: int, seed: int = 0, *, shift: int = 0) -> Array:
    """A smooth, textured RGB picture: gradients, waves and mild sensor noise.

    *shift* moves the content sideways by that many pixels (frames of a moving camera).
    """
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    x = x + shift
    rgb = np.stack(
        [
            128 + 80 * np.sin(x / 7.0 + y / 19.0),
            128 + 70 * np.cos(y / 9.0 - x / 23.0),
            96 + 0.4 * x % 120 + 0.3 * y,
        ],
        axis=-1,
    )
    rgb += rng.normal(0.0, 2.0, rgb.shape)
    out: Array = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    return out


def psnr(a: npt.NDArray[np.generic], b: npt.NDArray[np.generic]) -> float:
    """Peak signal-to-noise ratio of *a* against *b* for 8-bit samples, in dB."""
    error = a.astype(np.float64) - b.astype(np.float64)
    mse = float(np.mean(error**2))
    return float("inf") if mse == 0 else float(10 * np.log10(255.0**2 / mse))
