from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import ConfigError, DestinationExistsError
from dataset_devkit.vin_store import (
    VinOfflineFormatError,
    VinOfflineSchemaError,
    VinOfflineShardWriter,
)
from dataset_devkit.vin_store._hashed import HashedFile
from dataset_devkit.vin_store._shards import NumericBlockHandle, RecordBlockHandle
from dataset_devkit.vin_store.writer import chunk_file_path


def test_numeric_block_chunk_file_is_the_rows_back_to_back_then_the_index(tmp_path: Path) -> None:
    data = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
    data[2] = 0  # a fill-value row must still be written in place
    writer = VinOfflineShardWriter(tmp_path / "shard")
    spec = writer.write_numeric_block("vin.points_world", data)
    assert spec.paths == ("vin/points_world",)
    assert (spec.dtype, spec.shape) == ("float32", (4, 5, 3))
    raw = chunk_file_path(tmp_path / "shard" / "vin/points_world", 3).read_bytes()
    assert raw[: data.nbytes] == data.tobytes()
    index = np.frombuffer(raw[data.nbytes : data.nbytes + 16 * 4], "<u8").reshape(4, 2)
    assert index[:, 0].tolist() == [0, 60, 120, 180]
    assert index[:, 1].tolist() == [60] * 4


def test_big_endian_input_is_stored_little_endian(tmp_path: Path) -> None:
    data = np.arange(3, dtype=">i4")
    spec = VinOfflineShardWriter(tmp_path / "s").write_numeric_block("x", data)
    assert spec.dtype == "int32"
    raw = chunk_file_path(tmp_path / "s" / "x", 1).read_bytes()
    assert np.frombuffer(raw[:12], "<i4").tolist() == [0, 1, 2]


def test_record_block_writes_payload_and_offsets(tmp_path: Path) -> None:
    writer = VinOfflineShardWriter(tmp_path / "s")
    spec = writer.write_record_block("oracle.candidate_pcs", [{"a": 1}, None, [1, 2, 3]])
    assert spec.paths == ("oracle.candidate_pcs.msgpack", "oracle.candidate_pcs.offsets.npy")
    offsets = np.load(tmp_path / "s" / spec.paths[1])
    payload = (tmp_path / "s" / spec.paths[0]).read_bytes()
    assert offsets.tolist()[0] == 0 and offsets.tolist()[-1] == len(payload)
    assert len(offsets) == 4


def test_shard_writer_never_reuses_an_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    with pytest.raises(DestinationExistsError):
        VinOfflineShardWriter(tmp_path / "s")


def test_a_block_is_written_once(tmp_path: Path) -> None:
    writer = VinOfflineShardWriter(tmp_path / "s")
    writer.write_numeric_block("x", np.zeros(2))
    with pytest.raises(ConfigError, match="already written"):
        writer.write_numeric_block("x", np.ones(2))
    writer.write_record_block("r", [1, 2])
    with pytest.raises(ConfigError, match="already written"):
        writer.write_record_block("r", [1, 2])


def test_unsupported_dtypes_and_unencodable_records_are_rejected(tmp_path: Path) -> None:
    writer = VinOfflineShardWriter(tmp_path / "s")
    with pytest.raises(VinOfflineSchemaError, match="numeric dtype"):
        writer.write_numeric_block("x", np.array(["a", "b"]))
    with pytest.raises(VinOfflineSchemaError, match="cannot encode"):
        writer.write_record_block("r", [object()])
    with pytest.raises(VinOfflineSchemaError, match="invalid block name"):
        writer.write_record_block("../r", [1])
    assert not (tmp_path / "s" / "r.msgpack").exists()


def test_finish_rejects_blocks_with_different_row_counts(tmp_path: Path) -> None:
    writer = VinOfflineShardWriter(tmp_path / "s")
    writer.write_numeric_block("x", np.zeros(2))
    writer.write_record_block("r", [1, 2, 3])
    with pytest.raises(VinOfflineSchemaError, match=r"\[2, 3\]"):
        writer.finish("shard-000000", "shards/shard-000000", 0)


msgpack_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=30, deadline=None)
@given(st.lists(msgpack_values, min_size=1, max_size=6))
def test_record_blocks_round_trip_through_writer_and_reader(
    tmp_path_factory: pytest.TempPathFactory, records: list[object]
) -> None:
    shard_dir = tmp_path_factory.mktemp("rec") / "s"
    spec = VinOfflineShardWriter(shard_dir).write_record_block("oracle.candidate_pcs", records)
    handle = RecordBlockHandle(shard_dir, spec)
    assert [handle.read(row) for row in range(len(records))] == records
    handle.check_rows()


@pytest.mark.parametrize("bad_row", [0, 2, 4])
def test_check_rows_names_the_first_row_that_does_not_decode(tmp_path: Path, bad_row: int) -> None:
    records: list[object] = [{"a": 1}, b"", [1, 2], "x", {"b": [3]}]
    shard_dir = tmp_path / "s"
    spec = VinOfflineShardWriter(shard_dir).write_record_block("oracle.candidate_pcs", records)
    handle = RecordBlockHandle(shard_dir, spec)
    handle.check_rows()
    payload = bytearray((shard_dir / spec.paths[0]).read_bytes())
    payload[handle.offsets[bad_row]] = 0xC1  # a byte MessagePack never uses
    (shard_dir / spec.paths[0]).write_bytes(bytes(payload))
    with pytest.raises(VinOfflineFormatError, match=rf"row {bad_row}: "):
        RecordBlockHandle(shard_dir, spec).check_rows()


@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from(["bool", "int8", "uint16", "int64", "float16", "float32", "float64"]),
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.integers(0, 2**32 - 1),
)
def test_numeric_blocks_round_trip_through_writer_and_reader(
    tmp_path_factory: pytest.TempPathFactory, dtype: str, shape: list[int], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    data = (rng.random(shape) * 100).astype(dtype)
    shard_dir = tmp_path_factory.mktemp("num") / "s"
    spec = VinOfflineShardWriter(shard_dir).write_numeric_block("a.b", data)
    rows = NumericBlockHandle(shard_dir, spec).rows
    np.testing.assert_array_equal(rows, data)
    assert rows.dtype == np.dtype(dtype)


def test_a_large_buffer_is_hashed_and_written_piece_by_piece_in_order(tmp_path: Path) -> None:
    data = np.random.default_rng(0).integers(0, 256, (5 << 20) + 12345, dtype=np.uint8)
    handle = HashedFile(tmp_path / "big")
    handle.write(b"head")
    handle.write(data.data)  # five pieces and a short one, through the helper
    size, digest = handle.close()
    expected = b"head" + data.tobytes()
    assert (tmp_path / "big").read_bytes() == expected
    assert (size, digest) == (len(expected), hashlib.sha256(expected).hexdigest())
    assert handle.stamp is not None and handle.stamp[2] == size
