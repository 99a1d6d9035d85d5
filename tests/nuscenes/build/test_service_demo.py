"""The ``nuscenes_publish`` demo step builds, validates and inspects a real dataroot."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.demo import DEMO_STEPS
from dataset_devkit.demo.nuscenes_publish import run
from dataset_devkit.nuscenes.validation.dataroot import validate_dataroot


@pytest.mark.needs("nuscenes")
def test_the_demo_publishes_a_dataroot_that_revalidates(tmp_path: Path) -> None:
    assert "nuscenes_publish" in DEMO_STEPS
    report = run(tmp_path)
    final = tmp_path / "out" / "v1.0-trainval"
    assert validate_dataroot(final).root_sha256 == report.root_sha256["dataroot"]
    lines = dict(report.lines)
    assert lines["validate"].startswith("OK, 0 issues")
    assert "train" in lines["contents"] and "test" in lines["contents"]
