"""The source reader refuses files that change between listing and reading."""

from __future__ import annotations

import os
from concurrent.futures import Executor
from pathlib import Path

import pytest

from dataset_devkit.release import UnsafeTreeError
from dataset_devkit.release.scan import SourceFile, scan_tree
from dataset_devkit.release.source import SourceReader
from dataset_devkit.release.tarwriter import ReadInto, TarPackageWriter
from tests.release.helpers import make_tree, pack


def test_file_truncated_while_it_is_archived_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", {"a.bin": b"x" * 5000})

    def truncate_then_archive(source: ReadInto) -> str:
        os.truncate(tree / "a.bin", 100)
        return tar.add_member("ds/a.bin", 5000, source)

    with (
        SourceReader(tree) as reader,
        TarPackageWriter(tmp_path / "p.tar") as tar,
        pytest.raises(UnsafeTreeError, match="changed while packing: shorter"),
    ):
        reader.read(SourceFile("a.bin", 5000), truncate_then_archive)


def test_file_grown_while_it_is_archived_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", {"a.bin": b"x" * 5000})

    def archive_then_grow(source: ReadInto) -> str:
        digest = tar.add_member("ds/a.bin", 5000, source)
        with (tree / "a.bin").open("ab") as grow:
            grow.write(b"more")
        return digest

    with (
        SourceReader(tree) as reader,
        TarPackageWriter(tmp_path / "p.tar") as tar,
        pytest.raises(UnsafeTreeError, match=r"a\.bin.*changed while packing"),
    ):
        reader.read(SourceFile("a.bin", 5000), archive_then_grow)


def test_a_file_replaced_by_a_link_after_listing_is_not_followed(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", {"sub/a.bin": b"x" * 10, "outside": b"secret!!!!"})
    (tree / "sub" / "a.bin").unlink()
    (tree / "sub" / "a.bin").symlink_to(tree / "outside")
    with (
        SourceReader(tree) as reader,
        pytest.raises(UnsafeTreeError, match=r"sub/a.bin.*without following links"),
    ):
        reader.sha256(SourceFile("sub/a.bin", 10))


def test_file_changed_after_listing_fails_the_pack_and_nothing_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.release import packer

    tree = make_tree(tmp_path / "ds", {"a.bin": b"x" * 5000, "b.bin": b"y" * 10})

    def scan_then_change(
        root: Path, name: str | None = None, *, pool: Executor | None = None
    ) -> list[SourceFile]:
        files = scan_tree(root, name, pool=pool)
        (root / "b.bin").write_bytes(b"y" * 11)
        return files

    monkeypatch.setattr(packer, "scan_tree", scan_then_change)
    with pytest.raises(UnsafeTreeError, match=r"b.bin.*changed while packing"):
        pack(tree, tmp_path / "rel")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


@pytest.mark.parametrize(("change", "match"), [(100, "shorter than listed"), (6000, r"\(5000")])
def test_a_small_file_read_whole_that_shrinks_or_grows_meanwhile_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: int, match: str
) -> None:
    from dataset_devkit.integrity.reads import read_expected as real
    from dataset_devkit.release import source

    tree = make_tree(tmp_path / "ds", {"a.bin": b"x" * 5000})

    def change_then_read(fd: int, size: int, offset: int | None = None) -> bytes:
        os.truncate(tree / "a.bin", change)
        return real(fd, size, offset)

    monkeypatch.setattr(source, "read_expected", change_then_read)
    with (
        SourceReader(tree) as reader,
        pytest.raises(UnsafeTreeError, match=rf"a\.bin.*changed while packing.*{match}"),
    ):
        reader.read_small([SourceFile("a.bin", 5000)])


def test_small_files_read_in_a_run_are_refused_if_changed_touched_or_not_as_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.integrity.reads import read_expected as real
    from dataset_devkit.release import source

    tree = make_tree(tmp_path / "ds", {"a.bin": b"a" * 10, "b.bin": b"b" * 20})
    listed = [SourceFile("a.bin", 10), SourceFile("b.bin", 20)]
    with SourceReader(tree) as reader:
        assert [data for data, _ in reader.read_small(listed)] == [b"a" * 10, b"b" * 20]
        with pytest.raises(UnsafeTreeError, match=r"b\.bin.*expected a regular file of 21"):
            reader.read_small([SourceFile("a.bin", 10), SourceFile("b.bin", 21)])

    def touch_then_read(fd: int, size: int, offset: int | None = None) -> bytes:
        os.utime(tree / "a.bin", ns=(1, 1))  # same bytes, a new modification time
        return real(fd, size, offset)

    monkeypatch.setattr(source, "read_expected", touch_then_read)
    with (
        SourceReader(tree) as reader,
        pytest.raises(UnsafeTreeError, match=r"a\.bin.*changed while packing \(10 bytes read\)"),
    ):
        reader.read_small(listed)


def test_read_ahead_gives_every_file_in_order_small_ones_read_large_ones_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    from dataset_devkit.release import source

    monkeypatch.setattr(source, "SMALL_FILE", 100)
    monkeypatch.setattr(source, "BATCH_FILES", 2)
    monkeypatch.setattr(source, "BATCH_BYTES", 50)
    sizes = {"a": 10, "b": 40, "c": 200, "d/e": 5, "d/f": 0, "d/g": 30, "h": 101, "i": 100}
    tree = make_tree(tmp_path / "ds", {k: bytes([len(k)]) * n for k, n in sizes.items()})
    items = [SourceFile(k, n) for k, n in sorted(sizes.items())]
    with ThreadPoolExecutor(2) as pool:
        got = list(source.read_ahead(tree, items, pool))
    for item, read in zip(items, got, strict=True):
        if item.size > 100:
            assert read is None
        else:
            data = (tree / item.path).read_bytes()
            assert read == (data, hashlib.sha256(data).hexdigest())


def test_the_scan_refuses_a_link_to_a_directory_and_lists_every_file_with_its_size(
    tmp_path: Path,
) -> None:
    tree = make_tree(tmp_path / "ds", {"a/b/c.bin": b"123", "a/d": b"", "e/f/g/h": b"4" * 700})
    assert scan_tree(tree) == [
        SourceFile(p.relative_to(tree).as_posix(), p.stat().st_size)
        for p in sorted(tree.rglob("*"), key=lambda p: p.relative_to(tree).as_posix())
        if p.is_file()
    ]
    (tree / "a" / "to-e").symlink_to(tree / "e", target_is_directory=True)
    with pytest.raises(UnsafeTreeError, match=r"a/to-e: is a symbolic link"):
        scan_tree(tree)
