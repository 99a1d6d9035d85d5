"""A published store read by TensorStore, an independent Zarr v3 implementation, not our code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorstore as ts

from dataset_devkit.vin_store import VinOfflineSample, VinOfflineStoreReader


def _open(path: Path) -> ts.TensorStore:
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    return ts.open(spec, open=True, read=True).result()


def test_tensorstore_reads_every_numeric_block_of_every_shard(
    store: Path, samples: list[VinOfflineSample]
) -> None:
    manifest = VinOfflineStoreReader(store).manifest
    checked = 0
    for shard in manifest.shards:
        for name, spec in shard.blocks.items():
            if spec.kind != "zarr_array":
                continue
            array = _open(store / shard.relative_dir / spec.paths[0])
            assert array.shape == tuple(spec.shape or ())
            assert array.dtype.numpy_dtype == np.dtype(spec.dtype)
            rows = range(shard.row_start, shard.row_start + shard.num_rows)
            expected = np.stack([samples[p].arrays[name] for p in rows])
            np.testing.assert_array_equal(array.read().result(), expected)
            checked += shard.num_rows
    assert checked == 4 * len(samples)  # four numeric blocks, every row


def test_tensorstore_reads_one_row_through_the_shard_index(
    store: Path, samples: list[VinOfflineSample]
) -> None:
    array = _open(store / "shards" / "shard-000002" / "vin" / "points_world")
    row = array[2].read().result()  # a partial read: located by the CRC32C-checked index
    np.testing.assert_array_equal(row, samples[10].arrays["vin.points_world"])
