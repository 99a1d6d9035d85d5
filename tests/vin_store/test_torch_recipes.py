"""The training recipes users write first: torch's default collate over records of any
length, a per-sample transform in the worker, and reprs that say what is being read."""

from __future__ import annotations

import functools
import os
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
from dataset_devkit.vin_store.torch_dataset import collate_samples  # noqa: E402


def _plain(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v.tolist() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


@pytest.mark.parametrize(("workers", "method"), [(0, None), (2, "fork"), (2, "spawn")])
def test_the_default_collate_batches_records_of_any_length(
    store: Path, workers: int, method: str | None
) -> None:
    dataset = VinOfflineTorchDataset(store)
    lengths = {len(dataset[i]["oracle.candidate_pcs"]["xs"]) for i in range(len(dataset))}
    assert len(lengths) > 1  # the records of one batch differ in length
    loader = DataLoader(dataset, batch_size=4, num_workers=workers, multiprocessing_context=method)
    got = list(loader)
    expected = list(DataLoader(dataset, batch_size=4, collate_fn=collate_samples))
    assert [_plain(b) for b in got] == [_plain(b) for b in expected]
    assert isinstance(got[0]["oracle.candidate_pcs"], list)  # records stay records
    assert got[0]["vin.points_world"].shape == (4, 16, 3)


def _tag_with_worker(sample: dict[str, Any], scale: float) -> dict[str, Any]:
    """A module-level transform (spawn workers unpickle it): plain dict out."""
    return {
        "points": sample["vin.points_world"] * scale,
        "n": len(sample["oracle.candidate_pcs"]["xs"]),
        "xs": sample["oracle.candidate_pcs"]["xs"],
        "pid": os.getpid(),
    }


def _pair(sample: dict[str, Any]) -> tuple[Any, Any]:
    return sample["vin.points_world"], sample["vin.lengths"]


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_transform_runs_per_sample_in_the_worker(store: Path, batched: bool, method: str) -> None:
    transform = functools.partial(_tag_with_worker, scale=2.0)
    plain = VinOfflineTorchDataset(store)
    if batched:
        dataset: VinOfflineTorchDataset = VinOfflineBatchedTorchDataset(store, transform=transform)
        loader = dataset.loader(batch_size=4, num_workers=2, multiprocessing_context=method)
    else:
        dataset = VinOfflineTorchDataset(store, transform=transform)
        loader = DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context=method)
    batches = list(loader)
    pids = {pid for b in batches for pid in b["pid"]}  # not tensors: collate_samples lists them
    assert pids and os.getpid() not in pids  # every sample was transformed in a worker
    points = torch.cat([b["points"] for b in batches])
    expected = torch.stack([plain[i]["vin.points_world"] * 2.0 for i in range(len(plain))])
    torch.testing.assert_close(points, expected)
    assert [x for b in batches for x in b["xs"]] == [
        plain[i]["oracle.candidate_pcs"]["xs"] for i in range(len(plain))
    ]


def test_a_transform_may_return_anything_the_default_collate_takes(store: Path) -> None:
    dataset = VinOfflineTorchDataset(store, transform=_pair)
    points, lengths = next(iter(DataLoader(dataset, batch_size=3)))
    assert points.shape == (3, 16, 3) and lengths.shape == (3, 1)
    batched = VinOfflineBatchedTorchDataset(store, transform=_pair)
    points, lengths = batched.batch([0, 1, 2])
    assert points.shape == (3, 16, 3) and lengths.shape == (3, 1)


def test_tensors_a_transform_leaves_in_different_shapes_are_named(store: Path) -> None:
    def crop(sample: dict[str, Any]) -> dict[str, Any]:
        n = int(sample["vin.lengths"].item())
        return {"points": sample["vin.points_world"][: 1 + n % 4]}

    with pytest.raises(ConfigError, match=r"block 'points' has tensors of shapes \[\(1, 3\)"):
        next(iter(DataLoader(VinOfflineTorchDataset(store, transform=crop), batch_size=4)))
    with pytest.raises(ConfigError, match="transform must be callable"):
        VinOfflineTorchDataset(store, transform="crop")


def test_readers_and_datasets_say_what_they_read(store: Path, camera_store: Path) -> None:
    reader = VinOfflineStoreReader(VinOfflineStoreConfig(store, split="val"))
    assert (
        repr(reader) == f"VinOfflineStoreReader({str(store)!r}, split='val', samples={len(reader)})"
    )
    dataset = VinOfflineTorchDataset(store, blocks=["vin.points_world"])
    assert repr(dataset) == (
        f"VinOfflineTorchDataset({str(store)!r}, split='all', samples=11, "
        "blocks=['vin.points_world'])"
    )
    batched = VinOfflineBatchedTorchDataset(camera_store, transform=_pair)
    assert repr(batched) == (
        f"VinOfflineBatchedTorchDataset({str(camera_store)!r}, split='all', samples=12, "
        "transform=_pair)"
    )
    gone = VinOfflineStoreReader(store.parent / "no-such-store")
    assert repr(gone).endswith("samples=?)")  # a repr never raises
