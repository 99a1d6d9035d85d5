"""The books of a size-limited cache: least-recently-used eviction, files in use, parts."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import write_manifest
from dataset_devkit.integrity.bucket.cache import RemoteTree
from dataset_devkit.integrity.bucket.cache_space import CacheSpace, object_name
from tests.integrity.helpers import make_tree

SIZE = 1000
NAMES = [f"f{i}.bin" for i in range(6)]


@pytest.fixture
def tree_url(tmp_path: Path) -> str:
    """A ``file://`` tree of six files of 1,000 bytes each, with its content manifest."""
    root = make_tree(
        tmp_path / "bucket" / "tree", {n: bytes([i]) * SIZE for i, n in enumerate(NAMES)}
    )
    write_manifest(root)
    return root.as_uri()


def _cached(cache: Path) -> set[str]:
    return {p.name for p in cache.glob("*/tree/*") if p.is_file()}


def _age(tree: RemoteTree, rel: str, seconds_ago: float) -> None:
    """Pretend *rel* was last used *seconds_ago* (its stamp's mtime is its last use)."""
    when = time.time() - seconds_ago
    os.utime(tree._stamp_path(rel), (when, when))


def test_downloads_evict_the_least_recently_used_files_first(tree_url: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    tree = RemoteTree(tree_url, cache, limit=3 * SIZE)
    for age, rel in zip((50, 40, 30), NAMES[:3], strict=True):
        tree.local_path(rel)
        _age(tree, rel, age)
    tree._used.clear()  # another second has passed for the rate limit
    tree.mark_used([NAMES[0]])  # the oldest was just read again: it stays
    tree.local_path(NAMES[3])
    assert _cached(cache) == {NAMES[0], NAMES[2], NAMES[3]}
    assert CacheSpace(cache).generation() == 1
    tree.local_path(NAMES[4])  # now f2 is the oldest
    assert _cached(cache) == {NAMES[0], NAMES[3], NAMES[4]}
    assert CacheSpace(cache).generation() == 2


def test_every_tree_in_the_directory_shares_one_limit(tmp_path: Path) -> None:
    urls = []
    for name in ("one", "two"):
        root = make_tree(tmp_path / name, {n: bytes([7]) * SIZE for n in NAMES[:2]})
        write_manifest(root)
        urls.append(root.as_uri())
    cache = tmp_path / "cache"
    first, second = (RemoteTree(url, cache, limit=3 * SIZE) for url in urls)
    first.local_path(NAMES[0])
    first.local_path(NAMES[1])
    second.local_path(NAMES[0])
    second.local_path(NAMES[1])  # evicts the first tree's oldest
    with CacheSpace(cache).locked():
        usage = CacheSpace(cache).usage()
    assert usage.total_bytes == 3 * SIZE
    assert sorted((f.key, f.rel) for f in usage.files) == sorted(
        [(first.key, NAMES[1]), (second.key, NAMES[0]), (second.key, NAMES[1])]
    )


def test_a_file_being_opened_is_never_evicted_and_nobody_waits_for_it(
    tree_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    tree = RemoteTree(tree_url, cache, limit=2 * SIZE)
    other = RemoteTree(tree_url, cache, limit=2 * SIZE)
    with tree.held([NAMES[0], NAMES[1]]) as paths:  # a reader opening two files
        other.local_path(NAMES[2])  # no room, nothing evictable: goes ahead, no deadlock
        assert all(p.exists() for p in paths)
        assert _cached(cache) == set(NAMES[:3])
    other.local_path(NAMES[3])  # released: now the two oldest go
    assert _cached(cache) == {NAMES[2], NAMES[3]}


def test_a_prefetch_fetches_only_into_room_the_limit_has(tree_url: str, tmp_path: Path) -> None:
    """A file a reader needs goes ahead past the limit when the files in use leave no
    room; a file fetched ahead of its use never does: it waits for its reader."""
    cache = tmp_path / "cache"
    tree = RemoteTree(tree_url, cache, limit=2 * SIZE)
    ahead = RemoteTree(tree_url, cache, limit=2 * SIZE)
    assert ahead.prefetch([NAMES[0]]) and _cached(cache) == {NAMES[0]}
    with tree.held([NAMES[0], NAMES[1]]):  # a reader opening two files: no room left
        assert ahead.prefetch([NAMES[2], NAMES[3]]) is False
        assert _cached(cache) == set(NAMES[:2])
        assert not list(cache.glob("*/tmp/*.part"))
    assert ahead.prefetch([NAMES[2]])  # released: the oldest makes room
    assert _cached(cache) == {NAMES[1], NAMES[2]}
    with CacheSpace(cache).locked():
        assert CacheSpace(cache).usage().total_bytes == 2 * SIZE
    unlimited = RemoteTree(tree_url, tmp_path / "other")
    assert unlimited.prefetch(NAMES) and _cached(tmp_path / "other") == set(NAMES)


def test_parts_in_flight_count_at_full_size_and_dead_ones_are_swept(
    tree_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    tree = RemoteTree(tree_url, cache, limit=10 * SIZE)
    tree.local_path(NAMES[0])
    tmp = cache / tree.key / "tmp"
    live, dead = object_name(NAMES[1]), object_name(NAMES[2])
    (tmp / f"{live}.{SIZE}.part").write_bytes(b"x" * 10)  # a download under way...
    (tmp / f"{dead}.{SIZE}.part").write_bytes(b"x" * 10)  # ...and one whose process died
    locks = cache / tree.key / "locks"
    locks.mkdir(exist_ok=True)
    fd = os.open(locks / live, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # its downloader holds the object
        space = CacheSpace(cache)
        with space.locked():
            usage = space.usage()
        assert usage.in_flight_bytes == SIZE and usage.total_bytes == 2 * SIZE
        assert (tmp / f"{live}.{SIZE}.part").exists()
        assert not (tmp / f"{dead}.{SIZE}.part").exists()
    finally:
        os.close(fd)


def test_eviction_never_follows_a_link_out_of_the_cache(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "bucket", {"d/a.bin": b"a" * SIZE, "b.bin": b"b" * SIZE})
    write_manifest(root)
    cache = tmp_path / "cache"
    tree = RemoteTree(root.as_uri(), cache, limit=SIZE)
    tree.local_path("d/a.bin")
    outside = make_tree(tmp_path / "outside", {"a.bin": b"precious"})
    cached_dir = tree.root / "d"
    (cached_dir / "a.bin").unlink()
    cached_dir.rmdir()
    cached_dir.symlink_to(outside)  # someone replaced a cached folder by a link
    tree.local_path("b.bin")  # evicts d/a.bin's stamp: the link is not followed
    assert (outside / "a.bin").read_bytes() == b"precious"
    assert cached_dir.is_symlink()
    with CacheSpace(cache).locked():
        assert [f.rel for f in CacheSpace(cache).usage().files] == ["b.bin"]


def test_a_file_larger_than_the_limit_is_refused_before_any_download(
    tree_url: str, tmp_path: Path
) -> None:
    tree = RemoteTree(tree_url, tmp_path / "cache", limit=SIZE - 1)
    with pytest.raises(ConfigError, match=rf"f0.bin \({SIZE} bytes\), the largest file"):
        tree.local_path(NAMES[0])
    assert not list((tmp_path / "cache").rglob("*.part"))
    assert _cached(tmp_path / "cache") == set()


def test_without_a_limit_nothing_is_evicted_but_everything_is_counted(
    tree_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    tree = RemoteTree(tree_url, cache)
    for rel in NAMES:
        tree.local_path(rel)
    space = CacheSpace(cache)
    assert space.generation() == 0
    with space.locked():
        assert space.usage().total_bytes == len(NAMES) * SIZE


def test_a_file_the_download_helper_fetched_is_held_until_released(
    tree_url: str, tmp_path: Path
) -> None:
    """A forked worker's downloads run in a helper process; what it fetched stays held
    until the worker holds it itself, so no other download evicts it in between."""
    from dataset_devkit.integrity.bucket.fork_helper import ForkHelper

    cache = tmp_path / "cache"
    helper = ForkHelper(tree_url, cache, {}, SIZE)
    try:
        helper.fetch(NAMES[0])
        other = RemoteTree(tree_url, cache, limit=SIZE)
        other.local_path(NAMES[1])  # no room but f0, which is held: it stays
        assert _cached(cache) == {NAMES[0], NAMES[1]}
        helper.release(NAMES[0])
        other.local_path(NAMES[2])
        assert _cached(cache) == {NAMES[2]}
    finally:
        helper.close()


def test_the_download_helper_ends_quietly_when_its_worker_is_gone(
    tree_url: str, tmp_path: Path
) -> None:
    """A worker killed with its loader closes the pipe before its helper answers: the
    helper ends at once, with no traceback on the job's terminal."""
    import subprocess
    import sys

    from dataset_devkit import errors

    env = dict(os.environ, PYTHONPATH=str(Path(errors.__file__).resolve().parents[1]))
    process = subprocess.Popen(
        [sys.executable, "-m", "dataset_devkit.integrity.bucket.fork_helper", tree_url, "c"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()  # the worker is gone: nobody reads the answers
    process.stdin.write(b'{"rel": "f0.bin"}\n')
    process.stdin.close()
    error = process.stderr.read()
    assert process.wait(timeout=60) == 0 and error == b"", error.decode()[-800:]
