"""A size-limited cache shared by several processes reading one store from a real S3 server."""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import obstore
import pytest

from dataset_devkit.errors import ConfigError, IntegrityError
from dataset_devkit.integrity import read_manifest
from dataset_devkit.integrity.bucket.cache_space import CacheSpace
from dataset_devkit.objectstore import open_location
from dataset_devkit.vin_store import (
    VinOfflineSample,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    build_vin_offline_store,
)
from tests.optional import need
from tests.upload import upload_tree
from tests.vin_store.conftest import make_samples

NUM = 40
ROWS = 4  # 10 shards of 6 files each: a cache of a few files evicts all the time


def _samples() -> list[VinOfflineSample]:
    """The usual test samples with 12 KB of points each, so shard files dwarf the metadata
    (as 128 MiB shards do a real store's)."""
    samples = make_samples(NUM, sparse=False)
    for i, sample in enumerate(samples):
        points = np.full((1024, 3), i, dtype=np.float32)
        samples[i] = dataclasses.replace(
            sample, arrays={**sample.arrays, "vin.points_world": points}
        )
    return samples


@pytest.fixture(scope="module")
def local_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("limited") / "store"
    with ThreadPoolExecutor(2) as pool:
        build_vin_offline_store(_samples(), out, rows_per_shard=ROWS, executor=pool)
    return out


@pytest.fixture
def store_url(local_store: Path, s3_bucket: str) -> str:
    url = f"s3://{s3_bucket}/datasets/vin"
    upload_tree(local_store, url)
    return url


def _largest_read_file(store: Path) -> int:
    """The largest file a reader fetches (the sample index's JSON lines and the Zarr
    metadata it never reads)."""
    files = read_manifest(store).files
    return max(e.size for e in files if not e.path.endswith((".jsonl", "zarr.json")))


def _visible_bytes(cache: Path) -> int:
    """Bytes of every file in the cache's trees and parts (what takes disk space)."""
    total = 0
    for key in cache.iterdir():
        for sub in ("tree", "tmp"):
            folder = key / sub
            if folder.is_dir():
                total += sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file())
    return total


def _read_in_random_orders(args: tuple[VinOfflineStoreReader, int]) -> int:
    """A worker: every sample in two orders, each value checked against what it must be."""
    reader, seed = args
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(2):
        order = rng.permutation(len(reader))
        for start in range(0, len(order), 5):
            chunk = order[start : start + 5].tolist()
            batch = reader.read_positions(
                chunk, ["vin.lengths", "vin.points_world", "oracle.candidate_pcs"]
            )
            assert batch["vin.lengths"].reshape(-1).tolist() == chunk
            assert batch["vin.points_world"][:, 0, 0].tolist() == chunk
            assert [r["i"] for r in batch["oracle.candidate_pcs"]] == chunk
            single = reader.read_position(chunk[0], ["vin.trajectory.time_ns"])
            assert single["vin.trajectory.time_ns"].tolist() == [1000 * chunk[0]]
            checked += len(chunk)
    return checked


def test_processes_sharing_a_small_cache_never_exceed_its_limit_by_more_than_a_file_each(
    local_store: Path,
    store_url: str,
    tmp_path: Path,
    package_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", package_env["PYTHONPATH"])
    cache = tmp_path / "cache"
    largest = _largest_read_file(local_store)
    limit = 6 * largest  # a handful of files of the 90 the readers touch
    config = VinOfflineStoreConfig.from_url(store_url, cache_dir=cache, cache_limit=limit)
    processes = 3
    peaks: list[int] = []
    done = threading.Event()
    space = CacheSpace(cache)

    def watch() -> None:
        while not done.is_set():
            if cache.is_dir():
                with space.locked():  # parts are created and renamed under this lock
                    peaks.append(_visible_bytes(cache))
                time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        reader = VinOfflineStoreReader(config)
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            counts = pool.map(_read_in_random_orders, [(reader, s) for s in range(processes)])
    finally:
        done.set()
        watcher.join()
    assert counts == [2 * NUM] * processes
    assert len(peaks) > 10 and max(peaks) <= limit + processes * largest, (max(peaks), limit)
    assert space.generation() > 50  # it really evicted, again and again
    with space.locked():
        assert space.usage().total_bytes <= limit
        assert space.usage().in_flight_bytes == 0


def test_a_limit_below_the_largest_file_is_one_line_at_open(
    local_store: Path, store_url: str, tmp_path: Path
) -> None:
    largest = _largest_read_file(local_store)
    config = VinOfflineStoreConfig.from_url(
        store_url, cache_dir=tmp_path / "c", cache_limit=largest - 1
    )
    with pytest.raises(ConfigError) as info:
        len(VinOfflineStoreReader(config))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{store_url}: cache_limit {largest - 1}")
    assert f"raise cache_limit to at least {largest} bytes" in message
    assert not list((tmp_path / "c").rglob("*.part"))
    exact = VinOfflineStoreConfig.from_url(store_url, cache_dir=tmp_path / "d", cache_limit=largest)
    reader = VinOfflineStoreReader(exact)  # one file at a time is all a reader needs
    assert (
        reader.read_positions(list(range(NUM)), ["vin.points_world"])["vin.points_world"].shape[0]
        == NUM
    )


def test_limit_settings_are_checked_and_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "s3://bucket/store"
    assert (
        VinOfflineStoreConfig.from_url(url, cache_dir=tmp_path, cache_limit="2MiB").cache_limit
        == 2 << 20
    )
    assert VinOfflineStoreConfig.from_url(url, cache_dir=tmp_path, cache_limit=5).cache_limit == 5
    assert VinOfflineStoreConfig.from_url(url, cache_dir=tmp_path).cache_limit is None
    monkeypatch.setenv("DATASET_DEVKIT_CACHE_LIMIT", "200GB")
    monkeypatch.setenv("DATASET_DEVKIT_CACHE_DIR", str(tmp_path / "env-cache"))
    from_env = VinOfflineStoreConfig.from_url(url)
    assert from_env.cache_limit == 200 * 10**9 and from_env.cache_dir == tmp_path / "env-cache"
    assert VinOfflineStoreConfig.from_url(url, cache_limit="1GB").cache_limit == 10**9
    for bad in ("lots", "-1", 1.5, True):
        with pytest.raises(ConfigError, match="cache_limit: expected a size such as"):
            VinOfflineStoreConfig.from_url(url, cache_dir=tmp_path, cache_limit=bad)  # type: ignore[arg-type]
    monkeypatch.setenv("DATASET_DEVKIT_CACHE_LIMIT", "10 parsecs")
    with pytest.raises(ConfigError, match="DATASET_DEVKIT_CACHE_LIMIT: expected a size"):
        VinOfflineStoreConfig.from_url(url, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="cache_limit applies to a store read from a URL"):
        VinOfflineStoreConfig(tmp_path / "local-store", cache_limit=10)


def _replace_object(url: str, rel: str, data: bytes) -> None:
    obstore.put(open_location(url).store, rel, data)


def test_a_file_evicted_and_fetched_again_is_verified_again(
    local_store: Path, store_url: str, tmp_path: Path
) -> None:
    rel = "shards/shard-000000/vin/lengths/c/0/0"
    cache = tmp_path / "cache"
    limit = 3 * _largest_read_file(local_store)
    config = VinOfflineStoreConfig.from_url(store_url, cache_dir=cache, cache_limit=limit)
    reader = VinOfflineStoreReader(config)
    assert reader.read_position(0, ["vin.lengths"])["vin.lengths"].tolist() == [0]
    data = bytearray((local_store / rel).read_bytes())
    data[-5] ^= 0xFF  # the same size: only the hash can tell
    _replace_object(store_url, rel, bytes(data))
    other = VinOfflineStoreReader(config)  # another process reads on, and evicts shard 0
    for position in range(ROWS, NUM, ROWS):
        other.read_position(position, ["vin.points_world"])
    assert not (next(cache.glob("*/tree")) / rel).exists()
    match = r"lengths/c/0/0: does not match the content manifest"
    with pytest.raises(IntegrityError, match=match):
        VinOfflineStoreReader(config).read_position(1, ["vin.lengths"])
    # The first reader mapped the verified copy; once it is gone, it fetches the changed
    # object too, and refuses it: nothing unverified is ever returned.
    with pytest.raises(IntegrityError, match=match):
        reader.read_position(1, ["vin.lengths"])
    assert not list(cache.rglob("*.part"))


def _deleted_mappings(cache: Path, shard: str) -> list[str]:
    """This process's mappings of *shard*'s files that were unlinked from *cache*."""
    lines = Path("/proc/self/maps").read_text().splitlines()
    where = f"/shards/{shard}/"
    return [ln for ln in lines if str(cache) in ln and where in ln and ln.endswith("(deleted)")]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc (Linux)")
def test_a_reader_whose_mapped_files_are_evicted_reads_on_and_gives_their_space_back(
    local_store: Path, store_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    largest = _largest_read_file(local_store)
    config = VinOfflineStoreConfig.from_url(store_url, cache_dir=cache, cache_limit=4 * largest)
    reader = VinOfflineStoreReader(config)
    local = VinOfflineStoreReader(local_store)
    first = reader.read_positions([0, 1, 2, 3])  # every block of shard 0 mapped
    evictor = VinOfflineStoreReader(config)
    for position in range(ROWS, NUM, ROWS):  # evicts all of shard 0's files
        evictor.read_positions([position])
    assert _deleted_mappings(cache, "shard-000000")  # unlinked under the reader's mappings
    again = reader.read_positions([3, 2, 1, 0])
    assert _deleted_mappings(cache, "shard-000000") == []  # dropped, refetched, mapped afresh
    assert np.array_equal(again["vin.points_world"], first["vin.points_world"][::-1])
    expected = local.read_positions([3, 2, 1, 0])
    for name, value in expected.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(again[name], value)
        else:
            assert again[name] == value


def test_eviction_removes_only_cached_copies_even_when_the_cache_holds_the_source(
    local_store: Path, tmp_path: Path
) -> None:
    """A ``file://`` store whose cache directory is the store's own folder (the setup that
    makes other loaders delete the only copy of a shard) keeps every file of the store."""
    source = tmp_path / "bucket" / "vin"
    source.parent.mkdir()
    import shutil

    shutil.copytree(local_store, source)
    before = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}
    largest = _largest_read_file(local_store)
    config = VinOfflineStoreConfig.from_url(
        source.as_uri(), cache_dir=source, cache_limit=3 * largest
    )
    reader = VinOfflineStoreReader(config)
    reader.read_positions(list(range(NUM)))
    assert CacheSpace(source).generation() > 0
    after = {p: p.read_bytes() for p in before if p.exists()}
    assert after == before  # every source file is there, unchanged
    key = config.store_dir.parent.name  # the cache writes only its own folder and lock
    added = {p.relative_to(source).parts[0] for p in source.rglob("*") if p not in before}
    added -= {"shards", "splits"}  # the store's own folders (none of their files is new)
    assert added == {key, "cache.lock"}


def _read_with_loader(config: VinOfflineStoreConfig, *, shuffle: bool = False) -> list[int]:
    """What two fork DataLoader workers read, batches of 3 (in order, or fully shuffled)."""
    torch = need("torch")
    from dataset_devkit.vin_store import VinOfflineDistributedSampler, VinOfflineTorchDataset

    dataset = VinOfflineTorchDataset(config, blocks=["vin.lengths", "vin.points_world"])
    sampler = VinOfflineDistributedSampler(dataset, seed=3, shuffle=shuffle)
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=3,
        num_workers=2,
        sampler=sampler,
        multiprocessing_context=multiprocessing.get_context("fork"),
    )
    return [int(v) for batch in loader for v in batch["vin.lengths"].reshape(-1)]


def test_fork_dataloader_workers_read_through_a_small_cache(
    local_store: Path, store_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    largest = _largest_read_file(local_store)
    config = VinOfflineStoreConfig.from_url(store_url, cache_dir=cache, cache_limit=3 * largest)
    VinOfflineStoreReader(config).read_position(0, ["vin.lengths"])  # the parent has a client
    assert _read_with_loader(config) == list(range(NUM))
    space = CacheSpace(cache)
    assert space.generation() > 0
    with space.locked():
        assert space.usage().total_bytes <= 3 * largest


def test_fork_workers_read_every_sample_through_a_cache_of_one_file(
    local_store: Path, store_url: str, tmp_path: Path
) -> None:
    """The smallest cache a reader accepts: each worker's downloads evict the other's."""
    largest = _largest_read_file(local_store)
    config = VinOfflineStoreConfig.from_url(
        store_url, cache_dir=tmp_path / "cache", cache_limit=largest
    )
    assert sorted(_read_with_loader(config, shuffle=True)) == list(range(NUM))
