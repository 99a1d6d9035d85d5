"""Float metres to ``uint32`` millimetres, exactly as a float64 ``rint(depth * 1000)``.

The conversion runs in blocks that stay in the CPU cache, into buffers an encoder owns, so
a 720p chunk costs a few passes over 256 KB instead of a dozen over 30 MB arrays.
Its result is bit for bit the float64 one:

* Validity is read off the IEEE bits. For positive finite floats the bit pattern, as an
  unsigned integer, orders like the value; zero, negatives (sign bit set), infinities and
  NaNs fall outside ``1 .. bits(limit)``. So ``0 < depth <= limit`` with ``depth`` finite is
  one unsigned compare of ``bits - 1`` against ``bits(limit)``, where the limit is the
  largest value of the input's float type not above ``depth_far_m`` (the largest finite one
  without a far limit): a float32 ``x`` is ``<= far`` exactly when it is ``<=`` that float32.
* The product is taken in float64, never float32. A float32 has a 24-bit significand and
  1000 needs 10 bits, so ``x * 1000`` is exact in float64's 53 bits, and ``rint`` of the
  exact product is what the float64 conversion rounds. In float32 the product itself rounds
  first, and about 3 values in 1,000 of the range 0.0005 .. 1000 m land on the other side of
  a half millimetre (423.3045 m gives 423304 mm instead of 423305), so float32 arithmetic
  would change stored bytes.
* Other input types (float16, float64, byte-swapped) are converted to float64 first, as
  ``numpy.asarray(depth, float64)`` does, and checked on the float64 bits.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from dataset_devkit.stereo.errors import DepthOverflowError
from dataset_devkit.stereo.spec import DEPTH_SCALE

__all__ = ["BLOCK_VALUES", "MillimetreEncoder"]

#: Values converted per step: the float64 product and the bit scratch of one block fill
#: about 800 KB, within a core's L2 cache on current x86 and ARM parts.
BLOCK_VALUES: Final = 1 << 16
_UINT32_MAX: Final = int(np.iinfo(np.uint32).max)
_FLOAT32: Final = np.dtype(np.float32)


def _limit_bits(dtype: np.dtype[Any], far_limit_m: float | None) -> int:
    """Bits of the largest value of *dtype* that is ``<= far_limit_m`` (or finite)."""
    largest = np.finfo(dtype).max
    if far_limit_m is None or far_limit_m >= largest:
        limit = np.array(largest, dtype=dtype)
    else:
        limit = np.array(far_limit_m, dtype=dtype)
        if float(limit) > far_limit_m:  # rounded up: the one below is the largest not above
            limit = np.nextafter(limit, np.array(0, dtype=dtype))
    return int(limit.view(f"u{dtype.itemsize}"))


class MillimetreEncoder:
    """Converts float metres to millimetres with 0 for invalid, block by block.

    One encoder holds its scratch buffers; use one per thread. ``dtype`` is the input's
    float type and ``far_limit_m`` the distance beyond which depth is invalid.
    """

    def __init__(self, dtype: npt.DTypeLike, far_limit_m: float | None) -> None:
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise ValueError(f"depth must be a float array, found {self.dtype}")
        # float32 in native order is read as it is; anything else goes through float64.
        self._native = self.dtype == _FLOAT32
        self._bits_of = _FLOAT32 if self._native else np.dtype(np.float64)
        unsigned = np.dtype(f"u{self._bits_of.itemsize}")
        self._limit = unsigned.type(_limit_bits(self._bits_of, far_limit_m))
        self._one = unsigned.type(1)
        limit = float(np.array(self._limit, dtype=unsigned).view(self._bits_of))
        # rint(limit * 1000) fits uint32: no valid value can overflow, skip the check
        self._may_overflow = limit * DEPTH_SCALE >= _UINT32_MAX + 0.5
        self._values = np.empty(BLOCK_VALUES, dtype=self._bits_of)
        self._bits = self._values.view(unsigned)
        self._scratch = np.empty(BLOCK_VALUES, dtype=unsigned)
        self._valid = np.empty(BLOCK_VALUES, dtype=np.bool_)
        self._product = np.empty(BLOCK_VALUES, dtype=np.float64)

    def encode(
        self,
        metres: npt.NDArray[np.floating[Any]],
        out: npt.NDArray[np.uint32],
        *,
        where: str,
        first: int,
    ) -> int:
        """Write the millimetres of ``metres`` (``[T, H, W]``) into ``out``; return how many
        are 0 (invalid, or under half a millimetre).

        ``where`` (the source file) and ``first`` (the frame number of ``metres[0]``) only
        name the pixel of a :class:`DepthOverflowError`: a finite valid value whose
        millimetres do not fit ``uint32``.
        """
        if metres.dtype != self.dtype or metres.shape != out.shape:
            raise ValueError(
                f"expected {self.dtype} {list(out.shape)}, found {metres.dtype} "
                f"{list(metres.shape)}"
            )
        source, target = metres.reshape(-1), out.reshape(-1)
        for start in range(0, source.size, BLOCK_VALUES):
            stop = min(start + BLOCK_VALUES, source.size)
            self._block(source[start:stop], target[start:stop], metres, where, first, start)
        return int(target.size - np.count_nonzero(target))

    def _block(
        self,
        source: npt.NDArray[np.floating[Any]],
        target: npt.NDArray[np.uint32],
        metres: npt.NDArray[np.floating[Any]],
        where: str,
        first: int,
        offset: int,
    ) -> None:
        size = source.size
        values, bits = self._values[:size], self._bits[:size]
        scratch, valid, product = self._scratch[:size], self._valid[:size], self._product[:size]
        if self._native:  # float32 as it is: its own bits, no copy
            given = source.view(self._bits.dtype)
        else:
            np.copyto(values, source, casting="same_kind")  # exact for float16 and float32
            given = bits
        np.subtract(given, self._one, out=scratch)  # 0 (zero) wraps to the maximum
        np.less(scratch, self._limit, out=valid)  # 0 < value <= limit, value finite
        np.multiply(given, valid, out=bits)  # invalid values become +0.0
        np.multiply(values, float(DEPTH_SCALE), out=product, dtype=np.float64)
        np.rint(product, out=product)
        if self._may_overflow and float(product.max()) > _UINT32_MAX:
            self._overflow(product, metres, where, first, offset)
        np.copyto(target, product, casting="unsafe")  # whole numbers 0 .. 2**32 - 1

    @staticmethod
    def _overflow(
        product: npt.NDArray[np.float64],
        metres: npt.NDArray[np.floating[Any]],
        where: str,
        first: int,
        offset: int,
    ) -> None:
        index = offset + int(np.flatnonzero(product > _UINT32_MAX)[0])
        frame, row, col = (int(v) for v in np.unravel_index(index, metres.shape))
        value = float(np.float64(metres[frame, row, col]))
        raise DepthOverflowError(
            f"depth {value!r} m at frame {first + frame}, pixel ({row}, {col}) "
            f"does not fit uint32 millimetres (max {_UINT32_MAX / DEPTH_SCALE} m); "
            "set depth_far_m to mark far values invalid",
            path=where,
        )
