"""Damaged tables and extension documents found by mutation fuzzing: typed, naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dataset_devkit.nuscenes import Dataset, MalformedDataset, spec, validate_dataroot
from tests.nuscenes.dataroot_fixture import write_dataroot

DEEP = b"[" * 50_000 + b"]" * 50_000


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damaged") / "root"
    write_dataroot(root, scenes=1, samples=2, width=8, height=8)
    return root


@pytest.mark.parametrize(
    ("rel", "document"),
    [
        (f"{spec.VERSION}/sensor.json", DEEP),
        (f"{spec.VERSION}/ego_pose.json", b'[{"token": ' + DEEP + b"}]"),
        (f"{spec.EXTENSIONS_DIR}/{spec.TAGS_FILE}", b'{"scenes": ' + DEEP + b"}"),
    ],
)
def test_deeply_nested_json_is_an_issue_and_a_malformed_dataset(
    template: Path, tmp_path: Path, rel: str, document: bytes
) -> None:
    root = tmp_path / "root"
    shutil.copytree(template, root)
    (root / rel).write_bytes(document)
    issues = validate_dataroot(root, state="staging", workers=1).issues
    assert any(issue.startswith(rel) for issue in issues)
    with pytest.raises(MalformedDataset, match=rel.rsplit("/", 1)[-1]):
        Dataset(root)
