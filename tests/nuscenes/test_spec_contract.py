"""The exported files decode strictly into the spec.py records, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from dataset_devkit.nuscenes import export_dataset
from dataset_devkit.nuscenes.common.jpeg import decode_jpeg, encode_jpeg, jpeg_dimensions
from dataset_devkit.nuscenes.common.tokens import encode_canonical
from dataset_devkit.nuscenes.evidence import Evidence
from dataset_devkit.nuscenes.spec import (
    EXTENSION_FILES,
    EXTENSION_RECORDS,
    EXTENSIONS_DIR,
    TABLE_NAMES,
    TABLE_RECORDS,
    VERSION,
)


@pytest.mark.needs("nuscenes")
def test_spec_tables_are_the_tables_nuscenes_devkit_loads() -> None:
    from nuscenes.nuscenes import NuScenes

    source = Path(NuScenes.__init__.__code__.co_filename).read_text()
    for name in TABLE_NAMES:
        assert f"self.__load_table__('{name}')" in source
    assert set(TABLE_RECORDS) == set(TABLE_NAMES)
    assert set(EXTENSION_RECORDS) == set(EXTENSION_FILES)


def test_every_exported_file_decodes_strictly_into_its_spec_record(
    tmp_path: Path, decoded_evidence: Evidence
) -> None:
    root = tmp_path / "staging"
    export_dataset(root, decoded_evidence)
    for name in TABLE_NAMES:
        raw = (root / VERSION / f"{name}.json").read_bytes()
        record: Any = TABLE_RECORDS[name]
        rows = msgspec.json.decode(raw, type=list[record])
        assert encode_canonical(rows) == raw
    for name in EXTENSION_FILES:
        raw = (root / EXTENSIONS_DIR / name).read_bytes()
        doc = msgspec.json.decode(raw, type=EXTENSION_RECORDS[name])
        assert encode_canonical(doc) == raw


@settings(max_examples=25, deadline=None)
@given(
    width=st.integers(1, 300),
    height=st.integers(1, 300),
    quality=st.integers(30, 100),
    color=st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255)),
)
def test_jpeg_encode_then_header_and_decode_round_trip_the_size(
    width: int, height: int, quality: int, color: tuple[int, int, int]
) -> None:
    data = encode_jpeg(Image.new("RGB", (width, height), color), quality)
    assert jpeg_dimensions(data) == decode_jpeg(data) == (width, height)


def test_every_token_valued_field_but_the_primary_key_is_a_checked_foreign_key() -> None:
    # The table loader checks only the primary token column's shape and relies on the
    # foreign-key check for every other token-valued field; a new token field must be a key.
    from dataset_devkit.nuscenes.validation.schema import FOREIGN_KEYS, TABLE_FIELDS

    token_fields = {
        (table, name)
        for table, fields in TABLE_FIELDS.items()
        for name, kind in fields.items()
        if kind in ("token", "link", "tokens") and name != "token"
    }
    assert token_fields == set(FOREIGN_KEYS)
