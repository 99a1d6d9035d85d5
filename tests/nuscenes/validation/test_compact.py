"""Compact rows hold exactly the values of the dict rows, with one string per token."""

from __future__ import annotations

from pathlib import Path

import msgspec

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.compact import CompactRow, compact_gnss, compact_rows
from dataset_devkit.nuscenes.validation.extensions import load_extensions
from dataset_devkit.nuscenes.validation.io import DatarootReader
from dataset_devkit.nuscenes.validation.tables import load_tables
from tests.nuscenes.dataroot_fixture import write_dataroot


def test_compact_tables_hold_the_dict_rows_values_and_share_token_strings(tmp_path: Path) -> None:
    root = write_dataroot(tmp_path / "root").root
    issues: list[str] = []
    with DatarootReader(root) as reader:
        plain = load_tables(reader, spec.VERSION, issues)
        compact = load_tables(reader, spec.VERSION, issues, compact=True)
    assert issues == []
    for table, rows in plain.tables.items():
        assert msgspec.to_builtins(compact.tables[table]) == rows, table
        assert compact.index[table].keys() == plain.index[table].keys()
    frames = compact.tables["sample_data"]
    assert frames and all(isinstance(sd, CompactRow) for sd in frames)
    index = compact.index["sample_data"]
    for sd in frames:
        assert sd.get("no_such_field") is None and sd.get("token") == sd["token"]
        if sd["next"]:
            assert sd["next"] is index[sd["next"]]["token"]
        assert sd["ego_pose_token"] is compact.index["ego_pose"][sd["ego_pose_token"]]["token"]


def test_a_table_the_typed_decode_refuses_is_left_to_the_row_by_row_path() -> None:
    good = {"token": "a" * 32, "channel": "CAM_FRONT", "modality": "camera"}
    assert compact_rows("sensor", msgspec.json.encode([good]), {}, {}) is not None
    for rows in (
        [good, good],  # duplicate token
        [{**good, "token": "A" * 32}],  # not lowercase hex
        [{**good, "extra": 1}],
        [{**good, "modality": "lidar"}],
    ):
        assert compact_rows("sensor", msgspec.json.encode(rows), {}, {}) is None
    assert compact_rows("sensor", b"[", {}, {}) is None


def test_gnss_decoded_in_blocks_equals_the_whole_decode(tmp_path: Path) -> None:
    root = write_dataroot(tmp_path / "root").root
    issues: list[str] = []
    with DatarootReader(root) as reader:
        tables = load_tables(reader, spec.VERSION, issues, compact=True)
        data = reader.read_bytes(f"{spec.EXTENSIONS_DIR}/{spec.GNSS_FILE}")
    whole = msgspec.json.decode(data, type=spec.GnssDocument)
    assert whole.rows and compact_gnss(data, tables.index) == whole
    # A row the whole decode refuses: None here, and the caller's message is unchanged.
    document = msgspec.json.decode(data)
    document["rows"][-1]["timestamp_ns"] = "late"
    bad = msgspec.json.encode(document)
    assert compact_gnss(bad, tables.index) is None
    gnss = root / spec.EXTENSIONS_DIR / spec.GNSS_FILE
    gnss.chmod(0o644)
    gnss.write_bytes(bad)
    with DatarootReader(root) as reader:
        shared: list[str] = []
        load_extensions(reader, shared, manifest=False, share_with=tables)
        plain: list[str] = []
        load_extensions(reader, plain, manifest=False)
    assert shared == plain
    assert any("gnss.json: does not match GnssDocument" in issue for issue in shared)
