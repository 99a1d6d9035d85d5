"""Where the rows of one batched read live: shard and row in the shard of each, checked once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.vin_store.errors import PositionOutOfRangeError, SampleIndexNotFoundError

if TYPE_CHECKING:
    from dataset_devkit.vin_store.reader import _OpenState

__all__ = ["Located"]


class Located:
    """Checked global rows of one batched read, with their shards and rows in the shard."""

    __slots__ = ("positions", "row_list", "rows", "shard_list", "shards")

    def __init__(
        self, state: _OpenState, positions: Sequence[int] | npt.NDArray[np.integer[Any]]
    ) -> None:
        self.positions = np.asarray(positions, dtype=np.int64)
        if self.positions.ndim != 1:
            raise SampleIndexNotFoundError("positions must be a flat sequence of rows")
        listed = self.positions.tolist()  # min/max of a short list beat two numpy reductions
        if listed and (min(listed) < 0 or max(listed) >= state.sample_indices.shape[0]):
            bad = next(p for p in listed if not 0 <= p < state.sample_indices.shape[0])
            raise PositionOutOfRangeError(
                f"row {bad} is outside the store (rows 0..{state.sample_indices.shape[0] - 1})"
            )
        if state.rows_per_shard is not None:
            self.shards, self.rows = np.divmod(self.positions, state.rows_per_shard)
        else:
            self.shards = np.searchsorted(state.row_starts, self.positions, side="right") - 1
            self.rows = self.positions - state.row_starts[self.shards]
        self.shard_list: list[int] = self.shards.tolist()
        self.row_list: list[int] = self.rows.tolist()
