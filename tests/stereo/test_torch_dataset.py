"""The torch adapter under fork and spawn DataLoader workers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from dataset_devkit.stereo import StereoDataset
from dataset_devkit.stereo.torch_dataset import TorchStereoDataset


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers_return_the_same_frames_as_the_reader(built, context):
    dataset = TorchStereoDataset(built.root, use_depth=True, frames=3)
    dataset[0]  # handles opened in the parent must not leak into workers
    loader = DataLoader(dataset, batch_size=3, num_workers=1, multiprocessing_context=context)
    (batch,) = list(loader)
    assert batch["left"].shape == (3, 3, 48, 64, 3) and batch["left"].dtype == torch.uint8
    assert batch["depth_right"].dtype == torch.float32
    assert batch["camera_to_world_left"].shape == (3, 3, 4, 4)
    reference = StereoDataset(built.root, use_depth=True)
    for sample in range(3):
        item = reference.read(sample, [0, 1, 2])
        assert batch["id"][sample] == item.id
        assert np.array_equal(batch["right"][sample].numpy(), item.right)
        assert item.depth is not None
        assert np.array_equal(batch["depth_left"][sample].numpy(), item.depth["left"])
