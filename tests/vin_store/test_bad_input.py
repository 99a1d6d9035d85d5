"""A user's mistakes with the VIN store: each one is a typed error naming what was expected."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.vin_store import (
    PositionOutOfRangeError,
    SampleIndexNotFoundError,
    VinOfflineFormatError,
    VinOfflineSample,
    VinOfflineSchemaError,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    build_vin_offline_store,
)
from tests.cli_run import run_devkit


def _writable(store: Path, *paths: Path) -> None:
    for path in (store, *paths):
        path.chmod(0o700 if path.is_dir() else 0o600)


def _build(samples: Any, out: Any, **options: Any) -> None:
    with ThreadPoolExecutor(1) as pool:
        build_vin_offline_store(samples, out, executor=pool, **options)


@pytest.mark.parametrize("store_dir", [None, 3, "", {"store_dir": "x"}])
def test_a_store_dir_that_is_not_a_non_empty_path_is_a_config_error(store_dir: Any) -> None:
    with pytest.raises(ConfigError, match="store_dir must be a non-empty str or Path"):
        VinOfflineStoreConfig(store_dir=store_dir)
    with pytest.raises(ConfigError, match="store_dir must be a non-empty str or Path"):
        VinOfflineStoreReader(store_dir)


@pytest.mark.parametrize("index", ["0", 1.0, True, None])
def test_a_sample_index_or_position_of_the_wrong_type_is_a_config_error(
    store: Path, index: Any
) -> None:
    reader = VinOfflineStoreReader(store)
    with pytest.raises(ConfigError, match=f"sample_index must be an int, found {index!r}"):
        reader.read_sample(index)
    with pytest.raises(ConfigError, match=f"position must be an int, found {index!r}"):
        reader[index]


def test_batched_positions_outside_the_split_name_the_position(store: Path) -> None:
    train = VinOfflineStoreReader(VinOfflineStoreConfig(store_dir=store, split="train"))
    size = len(train)
    with pytest.raises(SampleIndexNotFoundError, match=f"position {size} is outside split"):
        train.__getitems__([0, size])
    everything = VinOfflineStoreReader(store)
    with pytest.raises(SampleIndexNotFoundError, match=r"row 99 is outside the store \(rows 0"):
        everything.read_positions([3, 99])
    with pytest.raises(ConfigError, match="positions must be a flat list of ints"):
        train.__getitems__([0.5])  # type: ignore[list-item]


def test_a_block_list_given_as_one_string_is_refused_not_read_letter_by_letter(
    store: Path,
) -> None:
    reader = VinOfflineStoreReader(store)
    with pytest.raises(ConfigError, match="blocks must be a list of block names"):
        reader.read_sample(1, "vin.lengths")


def test_a_missing_sample_index_names_the_indexes_the_store_holds(store: Path) -> None:
    with pytest.raises(SampleIndexNotFoundError, match=r"\(11 samples, indexes 1\.\.31\)"):
        VinOfflineStoreReader(store).read_sample(2)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rows_per_shard": "3"}, "rows_per_shard must be an int >= 1, found '3'"),
        ({"rows_per_shard": 1.5}, "rows_per_shard must be an int >= 1, found 1.5"),
        ({"val_fraction": "0.1"}, "val_fraction must be a number in"),
    ],
)
def test_builder_options_of_the_wrong_type_are_config_errors(
    tmp_path: Path, samples: list[VinOfflineSample], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        _build(samples, tmp_path / "out", **options)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sample_key": 3}, "sample #1: sample_key must be a non-empty str, found 3"),
        ({"scene_id": ""}, "sample #1: scene_id must be a non-empty str"),
        ({"sample_index": "9"}, "sample_index must be an int or None, found '9'"),
        ({"sample_index": -1}, "sample_index must be >= 0 and increase, found -1 after 1"),
        ({"split": "test"}, "split must be one of all, train, val, found 'test'"),
        ({"arrays": [1, 2]}, "arrays must be a mapping"),
    ],
)
def test_a_bad_sample_field_is_a_schema_error_before_anything_is_published(
    tmp_path: Path, samples: list[VinOfflineSample], change: dict[str, Any], message: str
) -> None:
    bad = dataclasses.replace(samples[1], **change)
    with pytest.raises(VinOfflineSchemaError, match=message):
        _build([samples[0], bad, *samples[2:]], tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_the_builder_refuses_what_is_not_a_sample_or_not_a_path(
    tmp_path: Path, samples: list[VinOfflineSample]
) -> None:
    with pytest.raises(VinOfflineSchemaError, match="sample #0: expected a VinOfflineSample"):
        _build([{"sample_key": "k"}], tmp_path / "out")
    with pytest.raises(ConfigError, match="samples must be an iterable"):
        _build(5, tmp_path / "out")
    with pytest.raises(ConfigError, match="out must be a non-empty str or Path, found ''"):
        _build(samples, "")
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_split_file_is_one_error_line_from_inspect(
    store: Path, package_env: dict[str, str]
) -> None:
    split = store / "splits" / "train.npy"
    _writable(store, store / "splits", split)
    split.write_bytes(b"\x89PNG\r\n\x1a\n")
    result = run_devkit(package_env, "store", "inspect", str(store))
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {split}: split 'train' is not a .npy array")
    assert "Traceback" not in result.stderr
    np.save(split.with_name("val.npy"), np.zeros(2))
    split.unlink()
    np.save(split, np.zeros(2))
    floats = run_devkit(package_env, "store", "inspect", str(store))
    assert "split 'train' must be 1-D int64, found float64 (2,)" in floats.stderr


def test_a_directory_in_place_of_a_chunk_file_is_a_format_error(
    store: Path, package_env: dict[str, str]
) -> None:
    chunk = store / "shards" / "shard-000000" / "vin" / "lengths" / "c" / "0" / "0"
    _writable(store, *chunk.parents[:6], chunk)
    chunk.unlink()
    chunk.mkdir()
    with pytest.raises(VinOfflineFormatError, match="expected a regular block file"):
        VinOfflineStoreReader(store).read_sample(1)
    result = run_devkit(package_env, "store", "sample", str(store), "1")
    assert result.returncode == 1
    assert result.stderr == f"error: {chunk}: expected a regular block file\n"


def test_a_shard_whose_block_dtype_differs_names_the_block(
    store: Path, package_env: dict[str, str]
) -> None:
    manifest = store / "manifest.json"
    _writable(store, manifest)
    data = json.loads(manifest.read_bytes())
    data["shards"][1]["blocks"]["vin.lengths"]["dtype"] = "int32"
    manifest.write_text(json.dumps(data))
    result = run_devkit(package_env, "store", "inspect", str(store))
    assert result.returncode == 1
    assert "at $.shards[1].blocks.vin.lengths: (kind, dtype, row shape) differs" in result.stderr
    assert "expected ('zarr_array', 'int64', (1,)), found ('zarr_array', 'int32', (1,))" in (
        result.stderr
    )


def test_an_empty_block_list_on_the_command_line_is_an_error_not_an_empty_table(
    store: Path, package_env: dict[str, str]
) -> None:
    result = run_devkit(package_env, "store", "sample", str(store), "1", "--blocks", ",")
    assert result.returncode == 1
    assert result.stderr == "error: --blocks: expected comma-separated block names, found ','\n"


@pytest.mark.parametrize(
    "rel",
    [
        "manifest.json",
        "splits/all.npy",
        "sample_index.npy",
        "shards/shard-000000/vin/lengths/c/0/0",
        "shards/shard-000000/oracle.candidate_pcs.offsets.npy",
    ],
)
def test_a_fifo_in_place_of_a_store_file_is_an_error_never_a_hang(
    store: Path, package_env: dict[str, str], rel: str
) -> None:
    path = store / rel
    _writable(store, *[p for p in path.parents if store in p.parents], path)
    path.unlink()
    os.mkfifo(path)
    # a regression blocks in open(): the child's timeout turns that into a test failure
    sample = run_devkit(package_env, "store", "sample", str(store), "1", timeout=60)
    assert sample.returncode == 1
    assert f"{path}: expected a regular" in sample.stderr
    verify = run_devkit(package_env, "store", "verify", str(store), timeout=60)
    assert verify.returncode == 1
    assert f"{rel}: not-regular: is a FIFO" in verify.stderr


def test_iterating_a_reader_ends_after_the_last_sample(store: Path) -> None:
    reader = VinOfflineStoreReader(VinOfflineStoreConfig(store_dir=store, split="train"))
    # no __iter__: Python calls __getitem__ until an IndexError, as a DataLoader-less loop does
    assert len(list(cast(Iterable[Any], reader))) == len(reader)
    with pytest.raises(PositionOutOfRangeError, match="is outside split 'train'"):
        reader[len(reader)]


@pytest.mark.needs("torch")
def test_iterating_a_torch_dataset_ends_after_the_last_sample(store: Path) -> None:
    from dataset_devkit.vin_store import VinOfflineTorchDataset

    reader = VinOfflineStoreReader(VinOfflineStoreConfig(store_dir=store, split="train"))
    assert len(list(VinOfflineTorchDataset(reader))) == len(reader)


@pytest.mark.needs("torch")
def test_the_torch_dataset_checks_indexes_and_blocks_like_the_reader(store: Path) -> None:
    from dataset_devkit.vin_store import VinOfflineBatchedTorchDataset, VinOfflineTorchDataset

    with pytest.raises(ConfigError, match="blocks must be a list of block names"):
        VinOfflineTorchDataset(store, "vin.lengths")
    dataset = VinOfflineBatchedTorchDataset(store)
    with pytest.raises(ConfigError, match="index must be an int, found 'a'"):
        dataset["a"]
    with pytest.raises(PositionOutOfRangeError, match="position 11 is outside split 'all'"):
        dataset[11]
    with pytest.raises(PositionOutOfRangeError, match="position -1 is outside split 'all'"):
        dataset.__getitems__([0, -1])
    assert int(dataset[-1]["vin.lengths"][0]) == 10


def test_one_verify_issue_is_counted_in_the_singular(
    store: Path, package_env: dict[str, str]
) -> None:
    chunk = store / "shards" / "shard-000000" / "vin" / "lengths" / "c" / "0" / "0"
    _writable(store, *chunk.parents[:6], chunk)
    data = bytearray(chunk.read_bytes())
    data[0] ^= 0xFF  # one row's value: only its hash can tell
    chunk.write_bytes(bytes(data))
    result = run_devkit(package_env, "store", "verify", str(store))
    assert result.returncode == 1
    assert "does not verify (1 issue)\n" in result.stderr
