"""Package planning: exact sizes within the limit, no split files, sorted and numbered."""

from __future__ import annotations

import pytest

from dataset_devkit.release import PackageLimitError
from dataset_devkit.release.planner import plan_packages
from dataset_devkit.release.scan import SourceFile


def test_packages_are_filled_in_path_order_up_to_the_exact_limit() -> None:
    files = [SourceFile(f"f{i:02d}", 1000) for i in range(10)]
    plans = plan_packages(files, {f.path: "base" for f in files}, root_name="r", limit=4608)
    sizes = [p.size for p in plans["base"]]
    assert all(size <= 4608 for size in sizes)
    assert [p.name for p in plans["base"]] == [f"base/base-{i:04d}.tar" for i in range(1, 6)]
    assert [f.path for p in plans["base"] for f in p.files] == [f.path for f in files]
    assert sizes[0] == 1024 + 2 * (512 + 1024)


def test_a_file_too_large_for_any_package_is_named_in_the_error() -> None:
    files = [SourceFile("ok", 10), SourceFile("huge", 5000), SourceFile("huger", 9000)]
    with pytest.raises(PackageLimitError) as info:
        plan_packages(files, {f.path: "base" for f in files}, root_name="r", limit=4096)
    assert "huge: 5000 bytes" in str(info.value) and "huger: 9000 bytes" in str(info.value)
