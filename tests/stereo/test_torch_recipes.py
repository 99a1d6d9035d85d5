"""A per-item transform in the DataLoader worker, and reprs that say what is read."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.optional import need

torch = need("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dataset_devkit.errors import ConfigError  # noqa: E402
from dataset_devkit.stereo import Clip, StereoDataset  # noqa: E402
from dataset_devkit.stereo.torch_dataset import TorchStereoDataset  # noqa: E402
from tests.stereo.conftest import HEIGHT, WIDTH  # noqa: E402


def half_left(item: dict[str, Any]) -> dict[str, Any]:
    """Module level: a spawn worker unpickles it."""
    return {"left": item["left"][:, : HEIGHT // 2], "id": item["id"], "pid": os.getpid()}


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_a_transform_runs_on_each_item_in_the_worker(built: Any, context: str) -> None:
    dataset = TorchStereoDataset(built.root, clip=Clip(2), transform=half_left)
    loader = DataLoader(dataset, batch_size=2, num_workers=1, multiprocessing_context=context)
    batch = next(iter(loader))
    assert batch["left"].shape == (2, 2, HEIGHT // 2, WIDTH, 3)
    assert batch["left"].dtype == torch.uint8
    assert os.getpid() not in set(batch["pid"].tolist())
    with pytest.raises(ConfigError, match="transform must be callable"):
        TorchStereoDataset(built.root, clip=Clip(2), transform=3)  # type: ignore[arg-type]


def test_the_reader_and_dataset_reprs_say_root_index_and_pairs(built: Any) -> None:
    reader = StereoDataset(built.root)
    shown = f"{str(built.root)!r}, index='genvr_i2s.jsonl', pairs={len(reader)}, use_depth=False"
    assert repr(reader) == f"StereoDataset({shown})"
    dataset = TorchStereoDataset(built.root, clip=Clip(2), transform=half_left)
    assert repr(dataset) == f"TorchStereoDataset({shown}, transform=half_left)"
