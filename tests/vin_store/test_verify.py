from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dataset_devkit.errors import VerificationFailed
from dataset_devkit.integrity import write_manifest
from dataset_devkit.vin_store import inspect_store, verify_store

SHARD = Path("shards") / "shard-000001"


def _writable(path: Path) -> Path:
    for p in [path, *path.parents]:
        if p.exists():
            p.chmod(0o700 if p.is_dir() else 0o600)
        if p.name == "store":
            break
    return path


def test_a_published_store_verifies_clean(store: Path) -> None:
    report = verify_store(store)
    assert report.ok, report.issues
    assert report.root_sha256 == inspect_store(store).root_sha256
    report.raise_for_issues()


def test_verify_catches_a_flipped_byte_in_a_chunk(store: Path) -> None:
    chunk = _writable(store / SHARD / "vin" / "points_world" / "c" / "0" / "0" / "0")
    data = bytearray(chunk.read_bytes())
    data[7] ^= 0x01
    chunk.write_bytes(bytes(data))
    report = verify_store(store)
    assert not report.ok
    assert any("vin/points_world/c/0/0/0" in issue for issue in report.issues)
    with pytest.raises(VerificationFailed):
        report.raise_for_issues()


def test_verify_catches_a_truncated_offsets_file_and_an_extra_shard(store: Path) -> None:
    offsets = _writable(store / SHARD / "oracle.candidate_pcs.offsets.npy")
    offsets.write_bytes(offsets.read_bytes()[:-8])
    _writable(store / "shards")
    shutil.copytree(store / SHARD, store / "shards" / "shard-000099")
    issues = verify_store(store).issues
    assert any("oracle.candidate_pcs.offsets.npy" in i and "not a .npy" in i for i in issues)
    assert any("shard-000099: extra shard not in manifest.json" in i for i in issues)
    assert issues == tuple(sorted(issues))


def test_verify_reports_an_unexpected_file_and_a_split_that_disagrees(store: Path) -> None:
    _writable(store / SHARD)
    (store / SHARD / "stray.bin").write_bytes(b"x")
    val = _writable(store / "splits" / "val.npy")
    train = store / "splits" / "train.npy"
    val.write_bytes(train.read_bytes())
    issues = verify_store(store).issues
    assert any("stray.bin: unexpected file in shard" in i for i in issues)
    assert any("val.npy: differs from the 'val' records" in i for i in issues)


def test_inspect_summarizes_shards_blocks_and_splits(store: Path) -> None:
    summary = inspect_store(store)
    assert (summary.num_samples, summary.num_shards, summary.version) == (11, 3, 1)
    names = {b.name: b for b in summary.blocks}
    assert names["vin.points_world"].row_shape == (16, 3)
    assert names["vin.points_world"].dtype == "float32"
    assert names["oracle.candidate_pcs"].kind == "msgpack_indexed_records"
    assert summary.split_sizes["all"] == 11
    assert summary.split_sizes["train"] + summary.split_sizes["val"] == 11
    assert summary.total_bytes > 0


def test_a_manifest_moved_into_a_subdirectory_does_not_stand_in_for_the_top_one(
    store: Path,
) -> None:
    _writable(store / "splits")
    _writable(store / "content_manifest.json").unlink()
    write_manifest(store, location="splits/content_manifest.json")
    issues = verify_store(store).issues
    assert any("content_manifest.json" in i and "no content manifest" in i for i in issues), issues


def test_verify_names_each_index_line_whose_shard_or_row_is_wrong(store: Path) -> None:
    index = _writable(store / "sample_index.jsonl")
    lines = index.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"row":1', b'"row":3')
    lines[5] = lines[5].replace(b'"shard_id":"shard-000001"', b'"shard_id":"shard-000077"')
    extra = b'{"sample_index":999,' + lines[-1].split(b",", 1)[1]  # beyond the shards' rows
    index.write_bytes(b"".join([*lines, extra]))
    issues = verify_store(store).issues
    at = [i.split("sample_index.jsonl ", 1)[1] for i in issues if "jsonl at line" in i]
    assert at == [
        "at line 2: expected shard-000000 row 1, found shard-000000 row 3",
        "at line 6: expected shard-000001 row 1, found shard-000077 row 1",
    ]
    assert any("expected 11 records (manifest rows), found 12" in i for i in issues)
