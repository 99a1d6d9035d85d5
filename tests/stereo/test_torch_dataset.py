"""The torch adapter under fork and spawn DataLoader workers."""

from __future__ import annotations

import numpy as np
import pytest

from tests.optional import need

torch = need("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dataset_devkit.stereo import Clip, StereoDataset  # noqa: E402
from dataset_devkit.stereo.torch_dataset import TorchStereoDataset  # noqa: E402
from tests.stereo.conftest import FRAMES, HEIGHT, WIDTH  # noqa: E402


@pytest.mark.parametrize(
    ("context", "workers", "epochs"), [("fork", 2, (0, 1)), ("spawn", 1, (1,))]
)
def test_dataloader_workers_read_the_epoch_clip_the_main_process_computes(
    built, context, workers, epochs
):
    clip = Clip(3, stride=2, seed=5)
    dataset = TorchStereoDataset(built.root, use_depth=True, clip=clip)
    dataset[0]  # handles opened in the parent must not leak into workers
    reference = StereoDataset(built.root, use_depth=True)
    seen = []
    for epoch in epochs:
        dataset.set_epoch(epoch)
        loader = DataLoader(
            dataset, batch_size=3, num_workers=workers, multiprocessing_context=context
        )
        (batch,) = list(loader)
        assert (
            batch["left"].shape == (3, 3, HEIGHT, WIDTH, 3) and batch["left"].dtype == torch.uint8
        )
        assert batch["depth_right"].dtype == torch.float32
        assert batch["camera_to_world_left"].shape == (3, 3, 4, 4)
        for sample in range(3):
            frames = clip.frames(sample, FRAMES, epoch)
            assert batch["frames"][sample].tolist() == frames
            item = reference.read(sample, frames)
            assert batch["id"][sample] == item.id
            assert np.array_equal(batch["right"][sample].numpy(), item.right)
            assert item.depth is not None
            assert np.array_equal(batch["depth_left"][sample].numpy(), item.depth["left"])
        seen.append(batch["frames"].tolist())
    if len(seen) == 2:
        assert seen[0] != seen[1]  # a new epoch draws new starts in the workers


def test_the_torch_dataset_takes_no_default_clip(built):
    with pytest.raises(TypeError, match="clip"):
        TorchStereoDataset(built.root)  # type: ignore[call-arg]
