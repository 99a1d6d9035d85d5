"""A published store read by other Zarr tools (TensorStore, zarr-python, xarray, numpy), not
our code; stores written before arrays named their dimensions read the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorstore as ts
import xarray as xr
import zarr

from dataset_devkit.vin_store import (
    VinOfflineSample,
    VinOfflineStoreReader,
    build_vin_offline_store,
    verify_store,
)
from dataset_devkit.vin_store._zarr_meta import array_metadata
from tests.vin_store.conftest import ROWS_PER_SHARD


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


def _open_shard(store: Path, shard: str, group: str) -> xr.Dataset:
    dataset: xr.Dataset = xr.open_zarr(
        store / "shards" / shard, group=group, zarr_format=3, consolidated=False, chunks=None
    )
    return dataset


def test_xarray_opens_every_block_of_a_group_lazily_with_named_dimensions(
    store: Path, samples: list[VinOfflineSample]
) -> None:
    dataset = _open_shard(store, "shard-000001", "vin")
    assert sorted(map(str, dataset.data_vars)) == ["lengths", "points_world", "t_world_rig"]
    points = dataset["points_world"]
    assert points.dims == ("row", "vin.points_world.dim1", "vin.points_world.dim2")
    assert dataset["lengths"].dims == ("row", "vin.lengths.dim1")
    assert dataset.sizes["row"] == ROWS_PER_SHARD  # one row dimension shared by the blocks
    assert not points.variable._in_memory  # lazy until asked
    np.testing.assert_array_equal(points[1].values, samples[5].arrays["vin.points_world"])
    nested = _open_shard(store, "shard-000001", "vin/trajectory")
    assert nested["time_ns"].dims == ("row", "vin.trajectory.time_ns.dim1")
    np.testing.assert_array_equal(nested["time_ns"].values[:, 0], [4000, 5000, 6000, 7000])


def _unnamed(block: str, dtype: np.dtype[Any], shape: tuple[int, ...]) -> bytes:
    """The array metadata as stores written before dimension names were added have it."""
    document = json.loads(array_metadata(block, dtype, shape))
    del document["dimension_names"]
    return json.dumps(document, allow_nan=True, indent=2).encode()


@pytest.fixture
def store_without_names(
    tmp_path: Path, samples: list[VinOfflineSample], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    monkeypatch.setattr("dataset_devkit.vin_store.writer.array_metadata", _unnamed)
    out = tmp_path / "old-store"
    build_vin_offline_store(samples, out, rows_per_shard=ROWS_PER_SHARD, val_fraction=0.3)
    monkeypatch.undo()
    yield out
    for path in [out, *out.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)


def test_a_store_written_without_dimension_names_still_verifies_and_reads_everywhere(
    store_without_names: Path, samples: list[VinOfflineSample]
) -> None:
    store = store_without_names
    array_dir = store / "shards" / "shard-000001" / "vin" / "points_world"
    assert "dimension_names" not in json.loads((array_dir / "zarr.json").read_bytes())
    assert verify_store(store).ok
    expected = samples[5].arrays["vin.points_world"]
    reader = VinOfflineStoreReader(store)
    np.testing.assert_array_equal(reader.read_sample(16)["vin.points_world"], expected)
    shard = zarr.open_group(store / "shards" / "shard-000001", mode="r")
    points = shard["vin/points_world"]
    assert isinstance(points, zarr.Array)
    np.testing.assert_array_equal(points[1], expected)
    np.testing.assert_array_equal(_open(array_dir)[1].read().result(), expected)
    chunk = np.memmap(array_dir / "c" / "0" / "0" / "0", dtype="<f4", mode="r", shape=(4, 16, 3))
    np.testing.assert_array_equal(chunk[1], expected)


def test_verify_reports_dimension_names_that_are_not_the_formats(store: Path) -> None:
    path = store / "shards" / "shard-000000" / "vin" / "lengths" / "zarr.json"
    document = json.loads(path.read_bytes())
    document["dimension_names"] = ["sample", "x"]
    path.chmod(0o600)
    path.write_text(json.dumps(document, indent=2))
    issues = verify_store(store).issues
    assert any(
        "lengths/zarr.json at $.dimension_names: expected ['row', 'vin.lengths.dim1']" in issue
        for issue in issues
    ), issues


def test_a_build_resumed_after_the_upgrade_rewrites_the_shards_written_without_names(
    tmp_path: Path, samples: list[VinOfflineSample], monkeypatch: pytest.MonkeyPatch
) -> None:
    def crashing() -> Iterator[VinOfflineSample]:
        yield from samples[:9]
        raise OSError("the camera archive went away")

    with monkeypatch.context() as old_version:
        old_version.setattr("dataset_devkit.vin_store.writer.array_metadata", _unnamed)
        old_version.setattr("dataset_devkit.vin_store._submit.SHARD_LAYOUT", 1)
        with pytest.raises(OSError, match="went away"):
            build_vin_offline_store(crashing(), tmp_path / "out", rows_per_shard=ROWS_PER_SHARD)
    resumed = build_vin_offline_store(samples, tmp_path / "out", rows_per_shard=ROWS_PER_SHARD)
    fresh = build_vin_offline_store(samples, tmp_path / "fresh", rows_per_shard=ROWS_PER_SHARD)
    assert resumed.reused_shards == 0  # the two finished old-layout shards are not mixed in
    assert resumed.root_sha256 == fresh.root_sha256
    for path in [*(tmp_path / "out").rglob("*"), *(tmp_path / "fresh").rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
