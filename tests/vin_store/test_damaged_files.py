"""Damaged store files found by mutation fuzzing: each is a typed error naming the file."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from dataset_devkit.errors import DevkitError, FormatError
from dataset_devkit.vin_store import (
    VinOfflineIndexRecord,
    VinOfflineManifest,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    verify_store,
)
from tests.cli_run import run_devkit

SHARD = "shards/shard-000000"


def _writable(store: Path, rel: str) -> Path:
    path = store / rel
    for node in [store, *[p for p in path.parents if store in p.parents], path]:
        node.chmod(0o700 if node.is_dir() else 0o600)
    return path


def _issues_naming(store: Path, name: str) -> list[str]:
    return [issue for issue in verify_store(store).issues if name in issue]


def test_a_codec_that_is_a_string_is_a_verify_issue_not_an_attribute_error(store: Path) -> None:
    path = _writable(store, f"{SHARD}/vin/lengths/zarr.json")
    meta = json.loads(path.read_bytes())
    meta["codecs"][0] = "x"
    path.write_text(json.dumps(meta))
    assert any("$.codecs" in issue for issue in _issues_naming(store, str(path)))


@pytest.mark.parametrize("document", [b"[1, 2]", b'{"codecs": [{"configuration": 7}]}', b"\xff"])
def test_a_zarr_json_of_any_shape_is_a_verify_issue(store: Path, document: bytes) -> None:
    path = _writable(store, f"{SHARD}/vin/lengths/zarr.json")
    path.write_bytes(document)
    assert _issues_naming(store, str(path))


def test_invalid_utf8_inside_a_manifest_string_is_a_format_error(store: Path) -> None:
    path = _writable(store, "manifest.json")
    raw = path.read_bytes()
    at = raw.index(b'"created_at": "') + len(b'"created_at": "')
    path.write_bytes(raw[:at] + b"\xff" + raw[at + 1 :])
    with pytest.raises(FormatError, match=r"manifest\.json"):
        VinOfflineStoreReader(store).manifest  # noqa: B018 - opening is the test
    assert _issues_naming(store, "manifest.json")


@pytest.mark.parametrize(
    "rel", ["sample_index.npy", "splits/all.npy", f"{SHARD}/oracle.candidate_pcs.offsets.npy"]
)
@pytest.mark.parametrize(("old", "new"), [(b"}", b" "), (b"'descr'", b"'descR'"), (b"(", b"[[[[")])
def test_a_damaged_npy_header_is_a_format_error_naming_the_file(
    store: Path, rel: str, old: bytes, new: bytes
) -> None:
    path = _writable(store, rel)
    raw = path.read_bytes()
    path.write_bytes(raw.replace(old, new, 1))
    with pytest.raises(FormatError, match=path.name):
        reader = VinOfflineStoreReader(store)
        reader.read_positions(range(len(reader)))
    assert _issues_naming(store, path.name)


def test_an_npy_header_asking_for_terabytes_is_refused_before_reading(store: Path) -> None:
    path = _writable(store, "sample_index.npy")
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"(11,)", b"(99999999999999,)".ljust(len(b"(11,)")), 1))
    with pytest.raises(FormatError, match=r"sample_index\.npy"):
        len(VinOfflineStoreReader(store))


def test_a_deleted_index_line_is_a_format_error_not_an_index_error(
    store: Path, package_env: dict[str, str]
) -> None:
    path = _writable(store, "sample_index.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3] + lines[4:]))
    reader = VinOfflineStoreReader(store)
    last = int(reader.sample_indices[-1])
    with pytest.raises(FormatError, match=r"sample_index\.jsonl"):
        reader.record(last)
    result = run_devkit(package_env, "store", "sample", str(store), str(last))
    assert result.returncode == 1
    assert "sample_index.jsonl" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_index_line_that_disagrees_with_the_sidecar_names_the_line(store: Path) -> None:
    path = _writable(store, "sample_index.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[2])
    record["sample_index"] = json.loads(lines[3])["sample_index"] - 1
    lines[2] = json.dumps(record).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(FormatError, match=r"sample_index\.jsonl at line 3"):
        VinOfflineStoreReader(store).index_records  # noqa: B018 - reading is the test


def _rewrite_with_record_api(store: Path, out: Path) -> None:
    """A store written through the public record API only (no builder)."""
    reader = VinOfflineStoreReader(store)
    out.mkdir()
    reader.manifest.write(out / "manifest.json")
    VinOfflineIndexRecord.write_many(out / "sample_index.jsonl", reader.index_records)
    records = reader.index_records
    VinOfflineStoreConfig(out).write_split_indices(
        {
            name: [r.sample_index for r in records if name in ("all", r.split)]
            for name in ("all", "train", "val")
        }
    )
    (out / "shards").symlink_to(store / "shards")  # the shard writers' output, unchanged


def test_a_store_written_through_the_record_api_opens_and_reads(
    store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "api"
    _rewrite_with_record_api(store, out)
    assert (out / "sample_index.npy").is_file()  # write_many wrote the sidecar
    original, rewritten = VinOfflineStoreReader(store), VinOfflineStoreReader(out)
    assert np.array_equal(rewritten.sample_indices, original.sample_indices)
    batch = rewritten.read_positions(range(len(rewritten)))
    expected = original.read_positions(range(len(original)))
    assert all(np.array_equal(batch[k], expected[k]) for k in expected if k.startswith("vin."))


def test_a_store_without_the_sidecar_opens_and_verify_says_it_is_derived(
    store: Path, package_env: dict[str, str]
) -> None:
    sidecar = _writable(store, "sample_index.npy")
    held = np.load(sidecar)
    sidecar.unlink()
    reader = VinOfflineStoreReader(store)
    assert np.array_equal(reader.sample_indices, held)
    assert reader.read_sample(int(held[-1]))["vin.lengths"].tolist() == [len(held) - 1]
    report = verify_store(store)
    assert any("sample_index.npy: absent" in note for note in report.notes)
    assert not any("differs" in issue for issue in report.issues)
    shown = run_devkit(package_env, "store", "verify", str(store))
    assert "note: " in shown.stdout and "sample_index.npy: absent" in shown.stdout


def test_the_manifest_reader_turns_deep_nesting_into_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(b'{"version": 1, "source": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(DevkitError, match=r"manifest\.json"):
        VinOfflineManifest.read(path)


def test_a_deeply_nested_record_is_a_format_error_naming_the_payload(store: Path) -> None:
    payload = _writable(store, f"{SHARD}/oracle.candidate_pcs.msgpack")
    offsets_path = _writable(store, f"{SHARD}/oracle.candidate_pcs.offsets.npy")
    offsets = np.load(offsets_path)
    raw = payload.read_bytes()
    deep = b"\x91" * 50_000 + b"\x01"  # a one-element array, 50,000 levels deep
    payload.write_bytes(deep + raw[offsets[1] :])
    offsets_path.unlink()
    np.save(offsets_path, np.concatenate([[0], offsets[1:] - offsets[1] + len(deep)]))
    with pytest.raises(FormatError, match=r"oracle\.candidate_pcs\.msgpack"):
        VinOfflineStoreReader(store).read_position(0)
    assert _issues_naming(store, "oracle.candidate_pcs.msgpack")


def test_a_python2_style_npy_header_loads_without_a_warning(store: Path) -> None:
    path = _writable(store, "sample_index.npy")
    raw = path.read_bytes()
    end = raw.index(b"\n")
    header = raw[:end].replace(b"(11,)", b"(11L,)")[:end]  # same length: one pad space less
    path.write_bytes(header + raw[end:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(VinOfflineStoreReader(store)) == 11


@pytest.mark.parametrize("value", [2**63, 2**64, 10**30])
def test_an_index_value_beyond_int64_is_a_field_error(store: Path, value: int) -> None:
    path = _writable(store, "sample_index.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[0])
    record["sample_index"] = value
    lines[0] = json.dumps(record).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(FormatError, match=r"sample_index\.jsonl at line 1 \$\.sample_index"):
        VinOfflineStoreReader(store).index_records  # noqa: B018 - reading is the test
    assert _issues_naming(store, "sample_index.jsonl")
