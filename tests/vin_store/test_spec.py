from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import FormatError
from dataset_devkit.vin_store import (
    OFFLINE_DATASET_VERSION,
    InventoryError,
    UnsupportedVersionError,
    VinOfflineBlockSpec,
    VinOfflineFormatError,
    VinOfflineIndexRecord,
    VinOfflineManifest,
    VinOfflineMaterializedBlocks,
    VinOfflineShardSpec,
)
from dataset_devkit.vin_store.spec import block_family, check_record_offsets

names = st.from_regex(r"\A[a-z_][a-z0-9_]{0,6}(\.[a-z_][a-z0-9_]{0,6}){0,3}\Z")
texts = st.text(max_size=12)
flags = st.builds(
    VinOfflineMaterializedBlocks,
    backbone=st.booleans(),
    depths=st.booleans(),
    candidate_pcs=st.booleans(),
    gt_obbs=st.booleans(),
    detected_obbs=st.booleans(),
    trajectory=st.booleans(),
)
index_records = st.builds(
    VinOfflineIndexRecord,
    sample_index=st.integers(0, 2**40),
    sample_key=texts,
    scene_id=texts,
    snippet_id=texts,
    split=st.sampled_from(["all", "train", "val"]),
    shard_id=texts,
    row=st.integers(0, 2**20),
)


@st.composite
def block_specs(draw: st.DrawFn, rows: int = 3) -> VinOfflineBlockSpec:
    name = draw(names)
    if draw(st.booleans()):
        dtype = draw(st.sampled_from(["float32", "int64", "uint8", "bool", "float16"]))
        rest = draw(st.lists(st.integers(1, 5), max_size=3))
        return VinOfflineBlockSpec.for_zarr_array(
            name, VinOfflineBlockSpec.zarr_array_path(name), dtype, [rows, *rest]
        )
    return VinOfflineBlockSpec.for_indexed_msgpack_records(
        name,
        VinOfflineBlockSpec.msgpack_records_path(name),
        VinOfflineBlockSpec.msgpack_records_offsets_path(name),
        rows,
    )


@given(block_specs())
def test_block_spec_round_trips_through_json(spec: VinOfflineBlockSpec) -> None:
    assert msgspec.json.decode(msgspec.json.encode(spec), type=VinOfflineBlockSpec) == spec


@given(flags)
def test_materialized_blocks_round_trip_through_json(value: VinOfflineMaterializedBlocks) -> None:
    data = msgspec.json.encode(value)
    assert msgspec.json.decode(data, type=VinOfflineMaterializedBlocks) == value


@given(st.lists(block_specs(), max_size=3, unique_by=lambda b: b.name))
def test_shard_spec_round_trips_through_json(blocks: list[VinOfflineBlockSpec]) -> None:
    shard = VinOfflineShardSpec(
        shard_id="shard-000000",
        relative_dir="shards/shard-000000",
        row_start=0,
        num_rows=3,
        blocks={b.name: b for b in blocks},
    )
    assert msgspec.json.decode(msgspec.json.encode(shard), type=VinOfflineShardSpec) == shard


@settings(max_examples=25)
@given(st.lists(index_records, max_size=8, unique_by=lambda r: r.sample_index))
def test_index_records_round_trip_through_jsonl(
    tmp_path_factory: pytest.TempPathFactory, records: list[VinOfflineIndexRecord]
) -> None:
    records = sorted(records, key=lambda r: r.sample_index)
    path = tmp_path_factory.mktemp("index") / "sample_index.jsonl"
    VinOfflineIndexRecord.write_many(path, records)
    assert VinOfflineIndexRecord.read_many(path) == records


@settings(max_examples=25)
@given(block_specs(), st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5)))
def test_manifest_round_trips_when_flags_match_blocks(
    tmp_path_factory: pytest.TempPathFactory, block: VinOfflineBlockSpec, stats: dict[str, object]
) -> None:
    shard = VinOfflineShardSpec(
        shard_id="shard-000000",
        relative_dir="shards/shard-000000",
        row_start=0,
        num_rows=3,
        blocks={block.name: block},
    )
    manifest = VinOfflineManifest(
        version=OFFLINE_DATASET_VERSION,
        created_at="1970-01-01T00:00:00Z",
        source={"a": [1, "x"]},
        oracle={},
        vin={"k": 1.5},
        materialized_blocks=VinOfflineMaterializedBlocks.from_block_names([block.name]),
        stats=stats,
        shards=(shard,),
    )
    path = tmp_path_factory.mktemp("m") / "manifest.json"
    manifest.write(path)
    assert VinOfflineManifest.read(path) == manifest


def test_zarr_path_and_record_file_names_follow_the_seed() -> None:
    assert VinOfflineBlockSpec.zarr_array_path("oracle.p3d.R") == "oracle/p3d/R"
    assert VinOfflineBlockSpec.msgpack_records_path("a.b") == "a.b.msgpack"
    assert VinOfflineBlockSpec.msgpack_records_offsets_path("a.b") == "a.b.offsets.npy"
    assert block_family("backbone.occ_pr") == "backbone"
    assert block_family("oracle.depths_valid") == "depths"
    assert block_family("vin.points_world") is None


def _manifest_doc(**changes: object) -> dict[str, object]:
    block = VinOfflineBlockSpec.for_zarr_array("vin.lengths", "vin/lengths", "int64", [2, 1])
    doc: dict[str, object] = msgspec.to_builtins(
        VinOfflineManifest(
            version=OFFLINE_DATASET_VERSION,
            created_at="t",
            source={},
            oracle={},
            vin={},
            materialized_blocks=VinOfflineMaterializedBlocks(
                backbone=False, depths=False, candidate_pcs=False
            ),
            shards=(
                VinOfflineShardSpec(
                    shard_id="shard-000000",
                    relative_dir="shards/shard-000000",
                    row_start=0,
                    num_rows=2,
                    blocks={"vin.lengths": block},
                ),
            ),
        )
    )
    doc.update(changes)
    return doc


def _write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "manifest.json"
    path.write_bytes(msgspec.json.encode(doc))
    return path


def test_manifest_read_rejects_an_unknown_field_naming_file_and_field(tmp_path: Path) -> None:
    path = _write(tmp_path, _manifest_doc(surprise=1))
    with pytest.raises(VinOfflineFormatError) as info:
        VinOfflineManifest.read(path)
    assert info.value.path == path
    assert info.value.field == "$.surprise"
    assert str(path) in str(info.value)


def test_manifest_read_rejects_a_wrong_type_with_its_json_path(tmp_path: Path) -> None:
    doc = _manifest_doc()
    doc["shards"][0]["num_rows"] = "2"  # type: ignore[index]
    with pytest.raises(FormatError) as info:
        VinOfflineManifest.read(_write(tmp_path, doc))
    assert info.value.field == "$.shards[0].num_rows"


def test_manifest_read_rejects_an_unsupported_version_first(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        VinOfflineManifest.read(_write(tmp_path, _manifest_doc(version=99, surprise=1)))
    assert info.value.field == "$.version"
    assert "expected 1, found 99" in str(info.value)


def test_manifest_read_rejects_a_flag_whose_family_no_shard_holds(tmp_path: Path) -> None:
    doc = _manifest_doc()
    doc["materialized_blocks"]["trajectory"] = True  # type: ignore[index]
    with pytest.raises(InventoryError) as info:
        VinOfflineManifest.read(_write(tmp_path, doc))
    assert info.value.field == "$.materialized_blocks.trajectory"


def test_manifest_read_rejects_a_block_shape_that_disagrees_with_the_rows(tmp_path: Path) -> None:
    doc = _manifest_doc()
    doc["shards"][0]["blocks"]["vin.lengths"]["shape"] = [3, 1]  # type: ignore[index]
    with pytest.raises(InventoryError) as info:
        VinOfflineManifest.read(_write(tmp_path, doc))
    assert info.value.field == "$.shards[0].blocks.vin.lengths.shape"


def test_manifest_read_rejects_shards_whose_rows_do_not_follow_on(tmp_path: Path) -> None:
    doc = _manifest_doc()
    doc["shards"][0]["row_start"] = 5  # type: ignore[index]
    with pytest.raises(InventoryError, match="expected row_start 0, found 5"):
        VinOfflineManifest.read(_write(tmp_path, doc))


def test_index_read_names_the_line_and_field_of_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "sample_index.jsonl"
    good = VinOfflineIndexRecord(
        sample_index=0,
        sample_key="k",
        scene_id="s",
        snippet_id="n",
        split="all",
        shard_id="shard-000000",
        row=0,
    )
    bad = msgspec.to_builtins(good) | {"sample_index": 1, "split": "test"}
    path.write_bytes(msgspec.json.encode(good) + b"\n" + msgspec.json.encode(bad) + b"\n")
    with pytest.raises(VinOfflineFormatError) as info:
        VinOfflineIndexRecord.read_many(path)
    assert info.value.field == "line 2 $.split"


def test_index_read_rejects_out_of_order_sample_indices(tmp_path: Path) -> None:
    path = tmp_path / "sample_index.jsonl"
    rec = VinOfflineIndexRecord(
        sample_index=4,
        sample_key="k",
        scene_id="s",
        snippet_id="n",
        split="all",
        shard_id="shard-000000",
        row=0,
    )
    VinOfflineIndexRecord.write_many(path, [rec, msgspec.structs.replace(rec, sample_index=2)])
    with pytest.raises(InventoryError) as info:
        VinOfflineIndexRecord.read_many(path)
    assert info.value.field == "line 2 $.sample_index"


def test_index_write_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "sample_index.jsonl"
    path.write_bytes(b"")
    with pytest.raises(FileExistsError):
        VinOfflineIndexRecord.write_many(path, [])


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ([0, 5, 3, 9], "offsets decrease at entry 2"),
        ([0, 4, 8, 10], "from 0 to the payload size 9"),
        ([1, 4, 8, 9], "from 0 to the payload size 9"),
        ([0, 4, 9], r"shape \(4,\)"),
    ],
)
def test_record_offsets_must_be_monotonic_and_end_at_the_payload_size(
    offsets: list[int], message: str
) -> None:
    with pytest.raises(InventoryError, match=message):
        check_record_offsets(np.array(offsets, dtype="<i8"), 3, 9, "x.offsets.npy")
