"""The source reader refuses files that change between listing and reading."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dataset_devkit.release import UnsafeTreeError
from dataset_devkit.release.source import SourceFile, SourceReader, scan_tree
from dataset_devkit.release.tarwriter import TarPackageWriter
from tests.release.helpers import make_tree, pack


def test_file_truncated_while_it_is_archived_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", {"a.bin": b"x" * 5000})
    with (
        SourceReader(tree) as reader,
        TarPackageWriter(tmp_path / "p.tar") as tar,
        pytest.raises(UnsafeTreeError, match="changed while packing: shorter"),
        reader.open(SourceFile("a.bin", 5000)) as fh,
    ):
        os.truncate(tree / "a.bin", 100)
        tar.add_member("ds/a.bin", 5000, fh)


def test_file_grown_while_it_is_archived_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", {"a.bin": b"x" * 5000})
    with (
        SourceReader(tree) as reader,
        TarPackageWriter(tmp_path / "p.tar") as tar,
        pytest.raises(UnsafeTreeError, match="changed while packing"),
        reader.open(SourceFile("a.bin", 5000)) as fh,
    ):
        tar.add_member("ds/a.bin", 5000, fh)
        with (tree / "a.bin").open("ab") as grow:
            grow.write(b"more")


def test_file_changed_after_listing_fails_the_pack_and_nothing_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.release import packer

    tree = make_tree(tmp_path / "ds", {"a.bin": b"x" * 5000, "b.bin": b"y" * 10})

    def scan_then_change(root: Path, name: str | None = None) -> list[SourceFile]:
        files = scan_tree(root, name)
        (root / "b.bin").write_bytes(b"y" * 11)
        return files

    monkeypatch.setattr(packer, "scan_tree", scan_then_change)
    with pytest.raises(UnsafeTreeError, match=r"b.bin.*changed while packing"):
        pack(tree, tmp_path / "rel")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
