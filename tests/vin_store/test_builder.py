from __future__ import annotations

import dataclasses
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from dataset_devkit.errors import DestinationExistsError, VerificationFailed
from dataset_devkit.integrity import read_manifest
from dataset_devkit.vin_store import (
    SampleIndexNotFoundError,
    VinOfflineMaterializedBlocks,
    VinOfflineSample,
    VinOfflineSchemaError,
    VinOfflineShardSource,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    build_vin_offline_store,
)
from tests.vin_store._sources import produce

Factory = Callable[..., list[VinOfflineSample]]


def _build(samples: list[VinOfflineSample], out: Path, **options: object) -> str:
    with ThreadPoolExecutor(2) as pool:
        result = build_vin_offline_store(
            samples,
            out,
            rows_per_shard=4,
            executor=pool,
            **options,  # type: ignore[arg-type]
        )
    return result.root_sha256


def test_store_reads_back_equal_with_sparse_indices(
    store: Path, samples: list[VinOfflineSample]
) -> None:
    reader = VinOfflineStoreReader(store)
    assert reader.sample_indices.tolist() == [3 * i + 1 for i in range(len(samples))]
    for sample in samples:
        got = reader.read_sample(int(sample.sample_index or 0))
        for name, value in sample.arrays.items():
            np.testing.assert_array_equal(got[name], value)
            assert got[name].dtype == np.asarray(value).dtype
        assert got["oracle.candidate_pcs"] == sample.records["oracle.candidate_pcs"]
    records = reader.index_records
    assert [r.sample_key for r in records] == [s.sample_key for s in samples]
    assert [(r.shard_id, r.row) for r in records[3:5]] == [("shard-000000", 3), ("shard-000001", 0)]


def test_split_files_follow_the_deterministic_key_hash(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    by_split = {r.split for r in reader.index_records}
    assert by_split == {"train", "val"}
    for split in ("train", "val"):
        view = reader.split_view(split)
        expected = [r.sample_index for r in reader.index_records if r.split == split]
        assert view.sample_indices.tolist() == expected
        assert len(view) == len(expected)


def test_same_samples_give_the_same_root_hash_whatever_the_executor(
    tmp_path: Path, sample_factory: Factory
) -> None:
    from dask.distributed import Client, LocalCluster

    threads = _build(sample_factory(), tmp_path / "threads", val_fraction=0.3)
    pool = build_vin_offline_store(
        sample_factory(), tmp_path / "pool", rows_per_shard=4, val_fraction=0.3
    ).root_sha256  # the default: a local spawn process pool
    with (
        LocalCluster(n_workers=1, threads_per_worker=2, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        dask = build_vin_offline_store(
            sample_factory(),
            tmp_path / "dask",
            rows_per_shard=4,
            val_fraction=0.3,
            executor=client.get_executor(),
        ).root_sha256
        # Partitioned sources: the Dask workers produce the samples themselves.
        sources = [VinOfflineShardSource(produce, 0, 4), VinOfflineShardSource(produce, 4, 11)]
        dask_sources = build_vin_offline_store(
            sources, tmp_path / "dask-sources", rows_per_shard=4, val_fraction=0.3,
            executor=client.get_executor(),
        ).root_sha256  # fmt: skip
    assert threads == pool == dask
    assert read_manifest(tmp_path / "dask").root_sha256 == dask
    assert dask_sources == _build(list(produce(0, 11)), tmp_path / "same", val_fraction=0.3)


def test_a_shape_mismatch_is_caught_before_anything_is_published(
    tmp_path: Path, sample_factory: Factory
) -> None:
    samples = sample_factory()
    bad = dataclasses.replace(
        samples[6], arrays={**samples[6].arrays, "vin.t_world_rig": np.zeros(13, np.float32)}
    )
    with pytest.raises(
        VinOfflineSchemaError, match=r"expected float32 \(12,\), found float32 \(13,\)"
    ):
        _build([*samples[:6], bad], tmp_path / "out")
    assert list(tmp_path.iterdir()) == []  # no final tree, no staging left behind


def test_a_dtype_or_block_set_mismatch_is_caught(tmp_path: Path, sample_factory: Factory) -> None:
    samples = sample_factory(3)
    wrong_dtype = dataclasses.replace(
        samples[1], arrays={**samples[1].arrays, "vin.lengths": np.array([1], np.int32)}
    )
    with pytest.raises(VinOfflineSchemaError, match="expected int64"):
        _build([samples[0], wrong_dtype], tmp_path / "a")
    missing = dataclasses.replace(samples[1], records={})
    with pytest.raises(VinOfflineSchemaError, match="expected blocks"):
        _build([samples[0], missing], tmp_path / "b")


def test_sample_indices_must_increase(tmp_path: Path, sample_factory: Factory) -> None:
    samples = sample_factory(3)
    with pytest.raises(VinOfflineSchemaError, match="must be >= 0 and increase, found 1 after 4"):
        _build([samples[1], samples[0]], tmp_path / "out")


def test_caller_given_splits_win(tmp_path: Path, sample_factory: Factory) -> None:
    samples = [
        dataclasses.replace(s, split="val" if i == 2 else "train")
        for i, s in enumerate(sample_factory(5, sparse=False))
    ]
    _build(samples, tmp_path / "out", val_fraction=0.5)
    val = VinOfflineStoreReader(VinOfflineStoreConfig(tmp_path / "out", split="val"))
    assert val.sample_indices.tolist() == [2]
    assert val[0]["vin.lengths"].tolist() == [2]


def test_absent_optional_blocks_are_reported_absent_not_synthesized(
    tmp_path: Path, sample_factory: Factory
) -> None:
    _build(sample_factory(5, with_records=False), tmp_path / "out")
    reader = VinOfflineStoreReader(tmp_path / "out")
    assert reader.manifest.materialized_blocks.candidate_pcs is False
    assert reader.manifest.materialized_blocks.trajectory is True
    assert "candidate_pcs" in reader.absent_families
    assert "oracle.candidate_pcs" not in reader.read_sample(1)
    with pytest.raises(SampleIndexNotFoundError, match="absent: this store does not materialize"):
        reader.read_sample(1, ["oracle.candidate_pcs"])


def test_flags_that_contradict_the_blocks_stop_publication(
    tmp_path: Path, sample_factory: Factory
) -> None:
    flags = VinOfflineMaterializedBlocks(backbone=True, depths=False, candidate_pcs=True)
    with pytest.raises(VerificationFailed, match=r"materialized_blocks\.backbone"):
        _build(sample_factory(3), tmp_path / "out", materialized_blocks=flags)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_destination_is_never_replaced(tmp_path: Path, sample_factory: Factory) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(DestinationExistsError):
        _build(sample_factory(3), tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_bad_names_and_duplicate_keys_are_caught_up_front(
    tmp_path: Path, sample_factory: Factory
) -> None:
    samples = sample_factory(3)
    bad_name = dataclasses.replace(samples[0], arrays={"../escape": np.zeros(2)}, records={})
    with pytest.raises(VinOfflineSchemaError, match="invalid block name"):
        _build([bad_name], tmp_path / "a")
    text = dataclasses.replace(samples[0], arrays={"x": np.array(["a"])}, records={})
    with pytest.raises(VinOfflineSchemaError, match="numeric dtype"):
        _build([text], tmp_path / "b")
    twice = dataclasses.replace(samples[1], sample_key=samples[0].sample_key)
    with pytest.raises(VinOfflineSchemaError, match="appears twice"):
        _build([samples[0], twice], tmp_path / "c")
    assert list(tmp_path.iterdir()) == []


def test_a_worker_failure_surfaces_as_the_typed_error_and_publishes_nothing(
    tmp_path: Path, sample_factory: Factory
) -> None:
    samples = sample_factory(6)
    unencodable = dataclasses.replace(samples[5], records={"oracle.candidate_pcs": {1j}})
    context = multiprocessing.get_context("spawn")
    with (
        ProcessPoolExecutor(1, mp_context=context) as pool,
        pytest.raises(VinOfflineSchemaError, match="cannot encode"),
    ):
        build_vin_offline_store(
            [*samples[:5], unencodable], tmp_path / "out", rows_per_shard=4, executor=pool
        )
    assert list(tmp_path.iterdir()) == []


_EVERY_DTYPE = (
    *("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"),
    *("uint64", "float16", "float32", "float64"),
)

#: The root hash of the store below, the same with zarr 3.1 on Python 3.11 (numpy 1.26) and
#: zarr 3.4 on Python 3.13 (numpy 2.5): our metadata, shard index and splits are written by us,
#: byte for byte. A new zarr, numpy or msgspec that changed one byte of a store fails here.
_GOLDEN_ROOT = "8af1f39cebecc54c008b62474daff44f362f23e42840e243ae6b8d55db8b9032"


def _golden_samples() -> list[VinOfflineSample]:
    samples = []
    for i in range(7):
        base = np.arange(6, dtype=np.float64).reshape(2, 3) + i
        arrays = {
            "vin.points_world": np.arange(48, dtype=np.float32).reshape(16, 3) * (i + 1),
            "vin.t_world_rig": np.arange(12, dtype=np.float32) + i,
            "vin.lengths": np.array([i], dtype=np.int64),
        }
        for dtype in _EVERY_DTYPE:
            arrays[f"backbone.x_{dtype}"] = (base % 2 if dtype == "bool" else base * 3).astype(
                dtype
            )
        samples.append(
            VinOfflineSample(
                sample_key=f"s{i}",
                scene_id=f"scene{i // 3}",
                snippet_id=f"snip{i}",
                arrays=arrays,
                records={"oracle.candidate_pcs": {"i": i, "xs": [0.5] * i}},
                sample_index=2 * i + 1,
            )
        )
    return samples


def test_a_store_has_the_same_bytes_on_every_tested_zarr_and_numpy(tmp_path: Path) -> None:
    result = build_vin_offline_store(
        _golden_samples(), tmp_path / "store", rows_per_shard=3, val_fraction=0.3
    )
    assert result.root_sha256 == _GOLDEN_ROOT
