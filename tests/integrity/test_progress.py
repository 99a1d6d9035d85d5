"""Hashing reports bytes *and* files done, with its totals first, through ``ProgressUpdate``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.integrity import (
    build_manifest,
    publish_tree,
    scan,
    verify_tree,
    write_manifest,
)
from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.integrity.staging import new_staging_dir
from tests.integrity.helpers import SAMPLE, make_tree

#: Small files (hashed by the walker) and two large ones (hashed by the pool, block by block).
FILES = {**SAMPLE, "big/one.bin": b"\x01" * (3 << 20), "big/two.bin": b"\x02" * ((1 << 20) + 7)}
TOTALS = (sum(len(b) for b in FILES.values()), len(FILES))


def _stages(updates: list[ProgressUpdate]) -> dict[str, tuple[int, int, int | None, int | None]]:
    """Per stage: bytes and files summed, and the totals it announced."""
    out: dict[str, tuple[int, int, int | None, int | None]] = {}
    for u in updates:
        nbytes, items, total_bytes, total_items = out.get(u.stage, (0, 0, None, None))
        out[u.stage] = (
            nbytes + u.nbytes,
            items + u.items,
            u.total_bytes if u.total_bytes is not None else total_bytes,
            u.total_items if u.total_items is not None else total_items,
        )
    return out


def test_building_a_manifest_counts_every_file_and_byte_once_after_its_totals(
    tmp_path: Path,
) -> None:
    root = make_tree(tmp_path / "t", FILES)
    updates: list[ProgressUpdate] = []
    build_manifest(root, progress=updates.append)
    assert (updates[0].total_bytes, updates[0].total_items) == TOTALS  # before any hashing
    assert _stages(updates) == {"hash": (*TOTALS, *TOTALS)}
    assert {u.unit for u in updates} == {"files"}
    # A large file moves the bar while it is read, then counts as one file.
    assert sum(1 for u in updates if u.nbytes and not u.items) >= 3


def test_verify_takes_its_totals_from_the_manifest_and_leaves_the_manifest_out(
    tmp_path: Path,
) -> None:
    root = make_tree(tmp_path / "t", FILES)
    write_manifest(root)
    updates: list[ProgressUpdate] = []
    assert verify_tree(root, progress=updates.append).ok
    assert _stages(updates) == {"verify": (*TOTALS, *TOTALS)}
    updates.clear()
    build_manifest(root, progress=updates.append)  # `manifest --print` beside a manifest
    assert _stages(updates) == {"hash": (*TOTALS, *TOTALS)}


def test_files_that_fail_still_count_as_done(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", FILES)
    write_manifest(root)
    (root / "a.txt").unlink()
    (root / "new.txt").write_bytes(b"extra")
    (root / "link").symlink_to("a.txt")
    updates: list[ProgressUpdate] = []
    assert not verify_tree(root, progress=updates.append).ok
    nbytes, files, _, total_files = _stages(updates)["verify"]
    assert files == total_files == len(FILES)  # one gone, one extra: the bar still ends full
    assert nbytes == TOTALS[0] - len(FILES["a.txt"]) + len(b"extra")


def test_publication_reports_its_two_passes_as_two_stages(tmp_path: Path) -> None:
    final = tmp_path / "published"
    staging = new_staging_dir(final)
    make_tree(staging, FILES)
    updates: list[ProgressUpdate] = []
    publish_tree(staging, final, progress=updates.append)
    assert list(dict.fromkeys(u.stage for u in updates)) == ["hash", "verify"]
    assert _stages(updates) == dict.fromkeys(("hash", "verify"), (*TOTALS, *TOTALS))


def test_without_a_listener_no_totals_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def walked(*_args: object) -> None:
        raise AssertionError("the stat walk for totals ran without a listener")

    monkeypatch.setattr(scan, "tree_totals", walked)
    root = make_tree(tmp_path / "t", FILES)
    write_manifest(root)
    assert verify_tree(root).ok
