from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.optional import need

torch = need("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dataset_devkit.errors import ConfigError  # noqa: E402
from dataset_devkit.vin_store import (  # noqa: E402
    VinOfflineBatchedTorchDataset,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    VinOfflineTorchDataset,
)
from dataset_devkit.vin_store._shm_batch import SHM_DIR, remove_batches  # noqa: E402
from dataset_devkit.vin_store.torch_dataset import collate_samples, passthrough_collate  # noqa: E402


def _batch_files(owner: int) -> list[str]:
    return sorted(p.name for p in SHM_DIR.iterdir() if p.name.startswith(f"ddk-vin-{owner}-"))


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


@pytest.mark.parametrize("shm_transport", [True, False])
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_read_under_fork_and_spawn(
    store: Path, method: str, shm_transport: bool
) -> None:
    per_item = VinOfflineTorchDataset(store)
    batched = VinOfflineBatchedTorchDataset(store, shm_transport=shm_transport)
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
    batch = dataset.batch([0, 2])
    assert batch["vin.points_world"].shape == (2, 16, 3)
    assert all(isinstance(r, bytes) for r in batch["oracle.candidate_pcs"])


def test_shm_batches_leave_no_files_and_an_early_stop_is_cleaned_up(store: Path) -> None:
    dataset = VinOfflineBatchedTorchDataset(store)
    loader = DataLoader(
        dataset,
        batch_size=2,
        num_workers=2,
        multiprocessing_context="fork",
        collate_fn=passthrough_collate,
        prefetch_factor=4,
    )
    batches = list(loader)
    assert all(isinstance(b["vin.points_world"], torch.Tensor) for b in batches)
    assert _batch_files(os.getpid()) == []  # every batch was unlinked on arrival
    iterator = iter(loader)
    next(iterator)
    time.sleep(0.5)  # let the workers prefetch batches that will never be received
    del iterator
    leftovers = _batch_files(os.getpid())
    assert remove_batches(owner=os.getpid()) == len(leftovers)
    assert _batch_files(os.getpid()) == []


def test_batch_files_of_a_main_process_that_is_gone_are_swept(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = SHM_DIR / f"ddk-vin-{dead.pid}-1-deadbeef"
    stale.write_bytes(b"left by a killed trainer")
    mine = SHM_DIR / f"ddk-vin-{os.getpid()}-1-cafef00d"
    mine.write_bytes(b"still in use")
    try:
        remove_batches()
        assert not stale.exists()
        assert mine.exists()
    finally:
        stale.unlink(missing_ok=True)
        mine.unlink(missing_ok=True)


@pytest.mark.parametrize(("method", "workers"), [("fork", 2), (None, 0)])
def test_the_dataset_builds_its_own_loader_for_fork_spawn_and_the_main_process(
    store: Path, method: str | None, workers: int
) -> None:
    dataset = VinOfflineBatchedTorchDataset(store)
    expected = dataset.batch(list(range(len(dataset))))["vin.points_world"]
    loader = dataset.loader(batch_size=3, num_workers=workers, multiprocessing_context=method)
    batches = list(loader)
    assert all(isinstance(b["vin.points_world"], torch.Tensor) for b in batches)
    torch.testing.assert_close(torch.cat([b["vin.points_world"] for b in batches]), expected)
    assert _batch_files(os.getpid()) == []


@pytest.mark.parametrize("workers", [0, 1])
def test_the_default_collate_is_refused_with_how_to_build_the_loader(
    store: Path, workers: int
) -> None:
    dataset = VinOfflineBatchedTorchDataset(store)
    loader = DataLoader(
        dataset,
        batch_size=2,
        num_workers=workers,
        multiprocessing_context=("fork" if workers else None),
    )
    with pytest.raises(ConfigError, match=r"build the loader with dataset\.loader\(batch_size"):
        next(iter(loader))
    assert _batch_files(os.getpid()) == []  # the refused batch allocated nothing


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size must be an int >= 1, found 0"),
        ({"batch_size": 2, "num_workers": -1}, "num_workers must be an int >= 0, found -1"),
        ({"batch_size": 2, "collate_fn": collate_samples}, "loader() sets collate_fn itself"),
    ],
)
def test_loader_options_are_checked_in_the_caller(
    store: Path, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        VinOfflineBatchedTorchDataset(store).loader(**kwargs)


def _with_frozen_count(sample: dict[str, Any]) -> dict[str, Any]:
    import gc

    return {"frozen": gc.get_freeze_count(), "points": sample["vin.points_world"]}


def test_workers_freeze_the_heap_they_inherited_and_the_main_process_keeps_its_own(
    store: Path,
) -> None:
    import gc

    frozen_here = gc.get_freeze_count()
    for dataset in (
        VinOfflineTorchDataset(store, transform=_with_frozen_count),
        VinOfflineBatchedTorchDataset(store, transform=_with_frozen_count),
    ):
        collate = (
            passthrough_collate if isinstance(dataset, VinOfflineBatchedTorchDataset) else None
        )
        loader = DataLoader(
            dataset, batch_size=4, num_workers=1, multiprocessing_context="fork", collate_fn=collate
        )
        counts = torch.cat([torch.as_tensor(batch["frozen"]) for batch in loader])
        assert len(counts) == len(dataset) and bool((counts > 1000).all())  # torch alone: >100k
        dataset[0]  # a fetch in the main process freezes nothing
        assert gc.get_freeze_count() == frozen_here
