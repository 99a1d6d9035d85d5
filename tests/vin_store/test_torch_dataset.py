from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader

from dataset_devkit.vin_store import (
    VinOfflineBatchedTorchDataset,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    VinOfflineTorchDataset,
)
from dataset_devkit.vin_store.torch_dataset import collate_samples, passthrough_collate


def test_a_sample_is_a_dict_of_writable_tensors_and_records(store: Path) -> None:
    dataset = VinOfflineTorchDataset(store, blocks=["vin.points_world", "oracle.candidate_pcs"])
    item = dataset[2]
    assert isinstance(item["vin.points_world"], torch.Tensor)
    assert item["vin.points_world"].shape == (16, 3)
    assert item["oracle.candidate_pcs"]["i"] == 2
    assert set(item) == {"vin.points_world", "oracle.candidate_pcs"}


def test_the_dataset_serves_its_split(store: Path) -> None:
    dataset = VinOfflineTorchDataset(VinOfflineStoreConfig(store, split="val"))
    expected = dataset.reader.sample_indices.tolist()
    got = [3 * int(dataset[i]["vin.lengths"].item()) + 1 for i in range(len(dataset))]
    assert got == expected


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_read_under_fork_and_spawn(store: Path, method: str) -> None:
    per_item = VinOfflineTorchDataset(store)
    batched = VinOfflineBatchedTorchDataset(store)
    expected = torch.stack([per_item[i]["vin.points_world"] for i in range(len(per_item))])
    per_item.reader.read_position(0)  # the parent's handles are open before workers start
    pairs: list[tuple[VinOfflineTorchDataset, Any]] = [
        (per_item, collate_samples),
        (batched, passthrough_collate),
    ]
    for dataset, collate in pairs:
        loader = DataLoader(
            dataset,
            batch_size=4,
            num_workers=2,
            multiprocessing_context=method,
            collate_fn=collate,
        )
        batches = list(loader)
        points = torch.cat([b["vin.points_world"] for b in batches])
        torch.testing.assert_close(points, expected)
        records = [r for b in batches for r in b["oracle.candidate_pcs"]]
        assert [r["i"] for r in records] == list(range(len(per_item)))


def test_a_dataset_can_share_an_open_reader_and_return_raw_records(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    dataset = VinOfflineBatchedTorchDataset(reader, raw_records=True)
    assert dataset.reader is reader
    batch = dataset.__getitems__([0, 2])
    assert batch["vin.points_world"].shape == (2, 16, 3)
    assert all(isinstance(r, bytes) for r in batch["oracle.candidate_pcs"])
