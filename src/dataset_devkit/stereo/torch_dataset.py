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

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dataset_devkit.errors import ConfigError, MissingDependencyError
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
    transform
        Called on each item (the dict above) where it is read: in the DataLoader worker,
        before collating; its result is the item (resize, crop, normalize there). It must
        pickle for ``spawn`` workers (a module-level function or a ``functools.partial``).
    """

    def __init__(
        self,
        root: str | Path,
        *,
        clip: Clip | FrameSelector,
        index: str | None = None,
        use_depth: bool = False,
        max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES,
        transform: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        if transform is not None and not callable(transform):
            raise ConfigError(
                f"transform must be callable (item -> item), found {transform!r}",
                key="transform",
            )
        self.reader = StereoDataset(
            root, index=index, use_depth=use_depth, clip=clip, max_item_bytes=max_item_bytes
        )
        self.transform = transform

    def __len__(self) -> int:
        return len(self.reader)

    def __repr__(self) -> str:
        shown = getattr(self.transform, "__qualname__", self.transform)
        extra = "" if self.transform is None else f", transform={shown}"
        return f"TorchStereoDataset({self.reader._repr_args()}{extra})"

    def set_epoch(self, epoch: int) -> None:
        """Draw the random clip starts of *epoch* (see :meth:`StereoDataset.set_epoch`)."""
        self.reader.set_epoch(epoch)

    def __getitem__(self, sample: int) -> Any:
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
        return out if self.transform is None else self.transform(out)
