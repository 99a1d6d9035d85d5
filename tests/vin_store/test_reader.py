from __future__ import annotations

import gc
import pickle
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

from dataset_devkit.errors import ConfigError, NotFoundError
from dataset_devkit.vin_store import (
    SampleIndexNotFoundError,
    VinOfflineFormatError,
    VinOfflineSample,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    build_vin_offline_store,
)
from dataset_devkit.vin_store import reader as reader_module
from tests.workers import START_METHODS, run_in_worker


def test_config_names_the_seed_paths(tmp_path: Path) -> None:
    config = VinOfflineStoreConfig(store_dir=tmp_path, split="train")
    assert config.manifest_path == tmp_path / "manifest.json"
    assert config.sample_index_path == tmp_path / "sample_index.jsonl"
    assert config.shards_dir == tmp_path / "shards"
    assert config.split_path() == tmp_path / "splits" / "train.npy"
    assert config.val_split_path == tmp_path / "splits" / "val.npy"
    with pytest.raises(ConfigError):
        VinOfflineStoreConfig(store_dir=tmp_path, split="test")  # type: ignore[arg-type]


def test_write_split_indices_is_exclusive_and_strict(tmp_path: Path) -> None:
    config = VinOfflineStoreConfig(store_dir=tmp_path)
    config.write_split_indices({"all": [1, 2, 5], "train": [1, 5], "val": [2]})
    assert np.load(config.train_split_path).tolist() == [1, 5]
    with pytest.raises(FileExistsError):
        config.write_split_indices({"all": [], "train": [], "val": []})
    with pytest.raises(ConfigError, match="strictly increase"):
        VinOfflineStoreConfig(tmp_path / "x").write_split_indices(
            {"all": [2, 1], "train": [], "val": []}
        )


def test_returned_arrays_are_read_only_copies(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    sample = reader.read_sample(1)
    points = sample["vin.points_world"]
    assert not points.flags.writeable
    assert points.base is None or not isinstance(points.base, memoryview)
    with pytest.raises(ValueError, match="read-only"):
        points[0, 0] = 1.0


def test_a_missing_sample_index_is_a_clear_error(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    with pytest.raises(SampleIndexNotFoundError, match="sample index 2 is not in"):
        reader.read_sample(2)
    with pytest.raises(NotFoundError):
        reader.position_of(10_000)
    with pytest.raises(SampleIndexNotFoundError, match="no block 'nope'"):
        reader.read_sample(1, ["nope"])


def test_block_subsets_and_per_block_reads(store: Path, samples: list[VinOfflineSample]) -> None:
    reader = VinOfflineStoreReader(store)
    record = reader.record(7)
    assert record.sample_key == samples[2].sample_key
    assert set(reader.read_sample(7, ["vin.lengths"])) == {"vin.lengths"}
    assert reader.read_numeric_block(record, "vin.lengths").tolist() == [2]
    assert reader.read_record_block(record, "oracle.candidate_pcs")["i"] == 2
    with pytest.raises(SampleIndexNotFoundError, match="record block, not numeric"):
        reader.read_numeric_block(record, "oracle.candidate_pcs")
    with pytest.raises(SampleIndexNotFoundError, match="numeric, not a record block"):
        reader.read_record_block(record, "vin.lengths")


def test_batched_reads_equal_single_reads(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    positions = [10, 0, 5, 5, 3]
    batch = reader.__getitems__(positions)
    for k, position in enumerate(positions):
        one = reader[position]
        for name, value in one.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(batch[name][k], value)
            else:
                assert batch[name][k] == value
    assert batch["vin.points_world"].shape == (5, 16, 3)
    assert not batch["vin.points_world"].flags.writeable


def test_pickling_sends_only_the_config(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    reader.read_sample(1)  # open handles
    clone = pickle.loads(pickle.dumps(reader))
    assert clone._state is None
    np.testing.assert_array_equal(clone[3]["vin.points_world"], reader[3]["vin.points_world"])


def _read_in_worker(reader: VinOfflineStoreReader, positions: list[int]) -> list[Any]:
    return [reader[p]["vin.points_world"].sum().item() for p in positions]


@pytest.mark.parametrize("method", START_METHODS)
def test_reads_through_fork_forkserver_and_spawn_workers(store: Path, method: str) -> None:
    reader = VinOfflineStoreReader(store)
    positions = list(range(len(reader)))
    expected = _read_in_worker(reader, positions)  # parent handles are open
    assert run_in_worker(method, _read_in_worker, reader, positions) == expected
    assert _read_in_worker(reader, positions) == expected


#: The reader a forked worker inherits (an argument would arrive pickled: config only).
_INHERITED: list[VinOfflineStoreReader] = []


def _opened_in_worker() -> tuple[int, list[float]]:
    """How many handles the worker had before reading every sample, and what it read."""
    reader = _INHERITED[0]
    before = len(reader._open().handles)
    return before, _read_in_worker(reader, list(range(len(reader))))


def test_blocks_opened_before_forking_are_the_workers_own(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    reader.open_blocks(["vin.points_world", "oracle.candidate_pcs"])
    state = reader._open()
    shards = len(state.manifest.shards)
    assert sorted(state.handles) == sorted(
        (k, name) for k in range(shards) for name in ("vin.points_world", "oracle.candidate_pcs")
    )
    span = state.spans["vin.points_world"]
    assert span is not None and span.complete  # a batch needs no more opens
    with pytest.raises(ConfigError, match="list of block names"):
        reader.open_blocks("vin.points_world")
    _INHERITED[:] = [reader]
    try:
        before, values = run_in_worker("fork", _opened_in_worker)
    finally:
        _INHERITED.clear()
    assert before == 2 * shards  # inherited: the worker opens nothing for these blocks
    assert values == _read_in_worker(VinOfflineStoreReader(store), list(range(len(reader))))


def test_plain_zarr_reads_the_numeric_blocks_without_our_code(
    store: Path, samples: list[VinOfflineSample]
) -> None:
    shard = zarr.open_group(store / "shards" / "shard-000001", mode="r")
    points = shard["vin/points_world"]
    assert isinstance(points, zarr.Array)
    assert points.shape == (4, 16, 3)
    np.testing.assert_array_equal(points[1], samples[5].arrays["vin.points_world"])
    offsets = np.load(store / "shards" / "shard-000001" / "oracle.candidate_pcs.offsets.npy")
    payload = (store / "shards" / "shard-000001" / "oracle.candidate_pcs.msgpack").read_bytes()
    import msgspec

    record = msgspec.msgpack.decode(payload[offsets[1] : offsets[2]])
    assert record == samples[5].records["oracle.candidate_pcs"]


def test_a_chunk_file_of_the_wrong_size_is_a_format_error(store: Path) -> None:
    chunk = store / "shards" / "shard-000000" / "vin" / "lengths" / "c" / "0" / "0"
    chunk.chmod(0o600)
    with chunk.open("ab") as stream:
        stream.write(b"\0")
    with pytest.raises(VinOfflineFormatError, match="expected 100 bytes"):
        VinOfflineStoreReader(store).read_sample(1)


def test_open_reads_the_binary_sidecar_never_the_json_lines(store: Path) -> None:
    index = store / "sample_index.jsonl"
    store.chmod(0o700)
    index.chmod(0o600)
    index.write_bytes(b"not json at all\n")
    reader = VinOfflineStoreReader(store)
    assert len(reader) == 11
    assert reader.read_sample(31)["vin.lengths"].tolist() == [10]
    with pytest.raises(VinOfflineFormatError, match=r"sample_index\.jsonl"):
        reader.index_records  # noqa: B018 - parsed only when asked for


def test_shards_of_uneven_size_are_located_by_search(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    expected = [reader[i]["vin.lengths"].item() for i in range(len(reader))]
    reader._open().rows_per_shard = None  # the general path, as for hand-made stores
    assert [reader[i]["vin.lengths"].item() for i in range(len(reader))] == expected
    assert reader.__getitems__([10, 3, 4])["vin.lengths"].ravel().tolist() == [10, 3, 4]


def test_batched_reads_fill_caller_given_arrays_after_checking_them(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    target = np.zeros((2, 16, 3), dtype=np.float32)
    batch = reader.read_positions([4, 1], ["vin.points_world"], out={"vin.points_world": target})
    assert batch["vin.points_world"] is target
    np.testing.assert_array_equal(target[0], reader[4]["vin.points_world"])
    with pytest.raises(ConfigError, match="C-contiguous float32 array of shape"):
        reader.read_positions([4], ["vin.points_world"], out={"vin.points_world": target})


@pytest.mark.parametrize("one_span", [True, False])
@pytest.mark.parametrize("positions", [[10, 0, 5, 5, 3], [1, 3, 0], [9], []])
def test_every_batched_gather_path_equals_single_reads(
    store: Path, monkeypatch: pytest.MonkeyPatch, one_span: bool, positions: list[int]
) -> None:
    if not one_span:  # as where mmap(2) is not reachable: one copy per row
        monkeypatch.setattr(reader_module, "block_span", lambda *args: None)
    reader = VinOfflineStoreReader(store)
    batch = reader.read_positions(positions)
    for name in ("vin.points_world", "vin.t_world_rig", "vin.lengths"):
        expected = [reader.read_position(p)[name] for p in positions]
        assert batch[name].shape[0] == len(positions)
        for k, value in enumerate(expected):
            np.testing.assert_array_equal(batch[name][k], value)
    spans = reader._open().spans
    assert all((spans[name] is not None) == one_span for name in spans)
    assert sorted(spans) == [
        "vin.lengths",
        "vin.points_world",
        "vin.t_world_rig",
        "vin.trajectory.time_ns",
    ]


def test_a_span_maps_only_the_shards_a_batch_touches_and_survives_its_reader(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    batch = reader.read_positions([9, 10], ["vin.points_world"])  # both in the last shard
    span = reader._open().spans["vin.points_world"]
    assert span is not None
    assert span.mapped == {2}
    assert span.slot_rows * 192 % 4096 == 0  # 4 rows of 192 B per shard: padded slots
    rows = span.rows[2 * span.slot_rows : 2 * span.slot_rows + 3]
    del reader, span
    gc.collect()
    np.testing.assert_array_equal(rows[1:], batch["vin.points_world"])  # mapping still alive


def test_page_multiple_shards_are_gathered_at_their_global_rows(tmp_path: Path) -> None:
    rows = np.arange(10 * 256, dtype=np.float32).reshape(10, 256)  # 4 rows x 1 KiB = a page
    samples = [
        VinOfflineSample(
            sample_key=str(i), scene_id="s", snippet_id=str(i), arrays={"vin.rows": rows[i]}
        )
        for i in range(10)
    ]
    with ThreadPoolExecutor(2) as pool:
        build_vin_offline_store(samples, tmp_path / "store", rows_per_shard=4, executor=pool)
    reader = VinOfflineStoreReader(tmp_path / "store")
    batch = reader.read_positions([9, 0, 4, 9, 7])["vin.rows"]
    np.testing.assert_array_equal(batch, rows[[9, 0, 4, 9, 7]])
    span = reader._open().spans["vin.rows"]
    assert span is not None and span.slot_rows == 4 and span.mapped == {0, 1, 2}
    assert span.complete


def test_single_and_batched_reads_share_one_mapping_per_block(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    single = reader.read_position(5)["vin.points_world"]  # opens shard 1: maps it in the span
    span = reader._open().spans["vin.points_world"]
    assert span is not None and span.mapped == {1}
    handle = reader._numeric_handle(reader._open(), 1, "vin.points_world")
    assert np.shares_memory(handle.rows, span.rows)
    np.testing.assert_array_equal(reader.read_positions([5])["vin.points_world"][0], single)


def test_a_span_refuses_a_chunk_file_that_changed_size_after_it_was_checked(store: Path) -> None:
    reader = VinOfflineStoreReader(store)
    state = reader._open()
    span = reader._span(state, "vin.points_world", state.blocks["vin.points_world"])
    assert span is not None
    chunk = store / "shards" / "shard-000000" / "vin" / "points_world" / "c" / "0" / "0" / "0"
    size = chunk.stat().st_size
    with pytest.raises(VinOfflineFormatError, match="changed since opened"):
        span.map_shard(0, chunk, size - 1, 4 * 192)
    assert span.mapped == set()


def test_numpy_alone_reads_a_chunk_file_as_documented(
    store: Path, samples: list[VinOfflineSample]
) -> None:
    chunk = store / "shards" / "shard-000002" / "vin" / "points_world" / "c" / "0" / "0" / "0"
    num_rows, row_nbytes = 3, 16 * 3 * 4
    assert chunk.stat().st_size == num_rows * row_nbytes + 16 * num_rows + 4
    rows = np.memmap(chunk, dtype="<f4", mode="r", shape=(num_rows, 16, 3))
    np.testing.assert_array_equal(rows[2], samples[10].arrays["vin.points_world"])
    index = np.memmap(chunk, dtype="<u8", mode="r", offset=num_rows * row_nbytes, shape=(3, 2))
    assert index.tolist() == [[0, 192], [192, 192], [384, 192]]
