"""The builder's progress callback: every sample reported once, the library printing nothing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.vin_store import build_vin_offline_store
from tests.vin_store.conftest import make_samples


def test_build_reports_each_shard_and_the_total_and_prints_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    updates: list[ProgressUpdate] = []
    with ThreadPoolExecutor(2) as pool:
        result = build_vin_offline_store(
            make_samples(11),
            tmp_path / "s",
            rows_per_shard=4,
            executor=pool,
            progress=updates.append,
        )
    assert {u.stage for u in updates} == {"build"} and {u.unit for u in updates} == {"samples"}
    assert [u.total_items for u in updates if u.total_items is not None] == [11]
    assert sum(u.items for u in updates) == result.num_samples == 11
    assert [u.items for u in updates if u.items] == [4, 4, 3]
    assert capfd.readouterr() == ("", "")


def test_a_streaming_input_has_no_total(tmp_path: Path) -> None:
    updates: list[ProgressUpdate] = []
    with ThreadPoolExecutor(2) as pool:
        build_vin_offline_store(
            iter(make_samples(5)), tmp_path / "s", rows_per_shard=4, executor=pool,
            progress=updates.append,
        )  # fmt: skip
    assert all(u.total_items is None for u in updates)
    assert sum(u.items for u in updates) == 5
