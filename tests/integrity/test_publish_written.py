"""``publish_tree(written=...)``: a tree its writer hashed as it wrote is rechecked by stamps.

The sealed tree is then compared with each file's stamp (device, inode, size, mtime) instead
of being hashed a second time, and any change since a file's stamp still stops publication.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dataset_devkit.errors import PublicationError
from dataset_devkit.integrity import publish, publish_tree, write_manifest
from dataset_devkit.integrity.publish import FileStamp, file_stamp
from tests.integrity.helpers import SAMPLE, make_tree


def _stamped(staging: Path) -> dict[str, FileStamp]:
    """The tree of SAMPLE with its manifest, and each listed file's stamp."""
    make_tree(staging)
    write_manifest(staging)
    stamps = {}
    for rel in SAMPLE:
        fd = os.open(staging / rel, os.O_RDONLY)
        try:
            stamps[rel] = file_stamp(fd)
        finally:
            os.close(fd)
    return stamps


def test_a_stamped_tree_is_published_without_hashing_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = make_tree(tmp_path / "reference")
    expected = write_manifest(reference).root_sha256
    stamps = _stamped(tmp_path / "staging")

    def no_rehash(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the stamped tree was hashed again")

    monkeypatch.setattr(publish, "verify_tree", no_rehash)
    result = publish_tree(tmp_path / "staging", tmp_path / "final", written=stamps)
    assert result.root_sha256 == expected
    assert (tmp_path / "final" / "a.txt").read_bytes() == SAMPLE["a.txt"]


def test_a_file_rewritten_after_its_stamp_stops_publication(tmp_path: Path) -> None:
    stamps = _stamped(tmp_path / "staging")
    (tmp_path / "staging" / "a.txt").write_bytes(b"ALPHA\n")  # same size, other bytes
    with pytest.raises(PublicationError, match=r"a\.txt: changed: not the file hashed"):
        publish_tree(tmp_path / "staging", tmp_path / "final", written=stamps)
    assert not (tmp_path / "final").exists()


def test_a_file_added_after_the_manifest_stops_publication(tmp_path: Path) -> None:
    stamps = _stamped(tmp_path / "staging")
    (tmp_path / "staging" / "late.txt").write_bytes(b"late\n")
    with pytest.raises(PublicationError, match=r"late\.txt: extra"):
        publish_tree(tmp_path / "staging", tmp_path / "final", written=stamps)


def test_without_a_stamp_for_every_file_the_tree_is_hashed_again(tmp_path: Path) -> None:
    stamps = _stamped(tmp_path / "staging")
    del stamps["a.txt"]
    (tmp_path / "staging" / "b" / "c.bin").write_bytes(b"\0" * len(SAMPLE["b/c.bin"]))
    with pytest.raises(PublicationError, match=r"b/c\.bin: changed: sha256"):
        publish_tree(tmp_path / "staging", tmp_path / "final", written=stamps)
