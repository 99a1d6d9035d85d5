"""A ``torch.utils.data.Dataset`` over :class:`StereoDataset` (the ``torch`` extra).

Items are dicts of tensors in the layout of the numpy reader (frames ``uint8 [T, H, W, 3]``,
depth ``float32 [T, H, W]`` metres), plus the sample id and prompt as strings, so the default
collate batches them. The wrapped reader opens its videos lazily in each worker, so fork and
spawn DataLoader workers both work.

The clip is a required argument: a training item is a few frames (``Clip(16, stride=2)``
from a random start that follows :meth:`TorchStereoDataset.set_epoch`), never the whole
video by default; ``Clip.whole()`` asks for every frame and ``max_item_bytes`` still caps it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dataset_devkit.errors import MissingDependencyError
from dataset_devkit.stereo.clip import DEFAULT_MAX_ITEM_BYTES, Clip
from dataset_devkit.stereo.reader import FrameSelector, StereoDataset

try:
    import torch
    from torch.utils.data import Dataset
except ImportError as exc:  # pragma: no cover - torch is installed in CI
    raise MissingDependencyError(
        "torch", extra="torch", purpose="the torch adapter of StereoDataset"
    ) from exc

__all__ = ["TorchStereoDataset"]


class TorchStereoDataset(Dataset[dict[str, Any]]):
    """Stereo clips as tensors for a DataLoader.

    Parameters
    ----------
    root, index, use_depth, max_item_bytes
        As for :class:`StereoDataset`.
    clip
        The frames of each item: a :class:`Clip` or a callable
        ``(sample_index, num_frames) -> frame numbers``. Required.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        clip: Clip | FrameSelector,
        index: str | None = None,
        use_depth: bool = False,
        max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES,
    ) -> None:
        self.reader = StereoDataset(
            root, index=index, use_depth=use_depth, clip=clip, max_item_bytes=max_item_bytes
        )

    def __len__(self) -> int:
        return len(self.reader)

    def set_epoch(self, epoch: int) -> None:
        """Draw the random clip starts of *epoch* (see :meth:`StereoDataset.set_epoch`)."""
        self.reader.set_epoch(epoch)

    def __getitem__(self, sample: int) -> dict[str, Any]:
        item = self.reader[sample]
        out: dict[str, Any] = {
            "id": item.id,
            "prompt": item.prompt,
            "frames": torch.tensor(item.frames, dtype=torch.int64),
            "left": torch.from_numpy(item.left),
            "right": torch.from_numpy(item.right),
        }
        for eye in ("left", "right"):
            out[f"K_{eye}"] = torch.from_numpy(item.K[eye])
            out[f"camera_to_world_{eye}"] = torch.from_numpy(item.camera_to_world[eye])
            if item.depth is not None:
                out[f"depth_{eye}"] = torch.from_numpy(item.depth[eye])
        return out
