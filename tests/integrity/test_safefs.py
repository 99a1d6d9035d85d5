"""No-follow primitives: pinned directories, exclusive leaves, hashing copies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from dataset_devkit.errors import DestinationExistsError, UnsafePathError
from dataset_devkit.integrity import SafeDir, check_relative_path, hash_file


@pytest.mark.parametrize("rel", ["", "/abs", "a/../b", "./a", "a//b", "a\\b", "a/\x00"])
def test_unsafe_relative_paths_are_rejected(rel: str) -> None:
    with pytest.raises(UnsafePathError):
        check_relative_path(rel)


def test_writes_are_exclusive_and_never_overwrite(tmp_path: Path) -> None:
    with SafeDir.open(tmp_path) as root:
        root.makedirs("a/b").close()
        root.write_bytes("a/b/c.txt", b"first")
        with pytest.raises(DestinationExistsError):
            root.write_bytes("a/b/c.txt", b"second")
        with pytest.raises(DestinationExistsError):
            root.mkdir("a").close()
    assert (tmp_path / "a/b/c.txt").read_bytes() == b"first"


def test_symlinked_directories_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    inside = tmp_path / "inside"
    inside.mkdir()
    (inside / "sub").symlink_to(outside)
    with SafeDir.open(inside) as root:
        with pytest.raises(UnsafePathError, match="symlink"):
            root.write_bytes("sub/planted.txt", b"x")
        with pytest.raises(UnsafePathError, match="symlink"):
            root.makedirs("sub/deeper")
    with pytest.raises(UnsafePathError, match="symlink"):
        SafeDir.open(inside / "sub")
    assert list(outside.iterdir()) == []


def test_a_symlinked_leaf_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    (tmp_path / "leaf").symlink_to(victim)
    with SafeDir.open(tmp_path) as root, pytest.raises(DestinationExistsError):
        root.write_bytes("leaf", b"overwrite?")
    assert victim.read_text() == "original"


def test_copy_from_hashes_while_copying_and_refuses_links(tmp_path: Path) -> None:
    source = tmp_path / "src.bin"
    data = bytes(range(256)) * 10_000
    source.write_bytes(data)
    (tmp_path / "dst").mkdir()
    with SafeDir.open(tmp_path / "dst") as dst:
        assert dst.copy_from(source, "copy.bin") == (len(data), hashlib.sha256(data).hexdigest())
        (tmp_path / "link.bin").symlink_to(source)
        with pytest.raises(UnsafePathError, match="symlink"):
            dst.copy_from(tmp_path / "link.bin", "other.bin")
    assert (tmp_path / "dst/copy.bin").read_bytes() == data
    assert not (tmp_path / "dst/other.bin").exists()
    assert hash_file(source) == (len(data), hashlib.sha256(data).hexdigest())


def test_a_walk_names_the_full_path_of_the_component_it_refuses(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c").symlink_to(tmp_path)
    with SafeDir.open(tmp_path) as root:
        for walk in (root.opendir, root.makedirs):
            with pytest.raises(UnsafePathError) as info:
                walk("a/b/c/d")
            assert str(tmp_path / "a" / "b" / "c") in str(info.value)
