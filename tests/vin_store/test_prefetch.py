"""Prefetching a rank's next shards into the cache, ahead of the loader, within the limit."""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests.optional import need

need("torch")  # the torch datasets over mixes and prefetching stores

from dataset_devkit.integrity.bucket.cache_space import CacheSpace  # noqa: E402
from dataset_devkit.vin_store import (  # noqa: E402
    VinOfflineDistributedSampler,
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    VinOfflineTorchDataset,
    build_vin_offline_store,
)
from dataset_devkit.vin_store.prefetch import ShardPrefetcher, prefetch_depth  # noqa: E402
from tests.vin_store.conftest import make_samples  # noqa: E402


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A ``file://`` store of 12 shards of 4 samples."""
    out = tmp_path_factory.mktemp("prefetch") / "store"
    with ThreadPoolExecutor(2) as pool:
        build_vin_offline_store(
            make_samples(48, sparse=False), out, rows_per_shard=4, executor=pool
        )
    return out.resolve().as_uri()


def _cached_shards(cache: Path) -> set[str]:
    return {p.parts[-6] for p in cache.glob("*/tree/shards/*/vin/lengths/c/0/0")}


def _wait(condition: object, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.02)


def test_the_prefetcher_keeps_ahead_shards_fetched_beyond_the_cursor(
    store_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    reader = VinOfflineStoreReader(VinOfflineStoreConfig.from_url(store_url, cache_dir=cache))
    files = reader.shard_files(["vin.lengths"])
    shards = np.repeat(np.array([5, 2, 9, 0, 7, 1], dtype=np.int64), 4)  # the share's order
    cursor = [0]
    prefetcher = ShardPrefetcher(files, shards, lambda: cursor[0], ahead=2).start()
    try:
        _wait(lambda: prefetcher.fetched == 3)
        time.sleep(0.2)
        assert _cached_shards(cache) == {"shard-000005", "shard-000002", "shard-000009"}
        cursor[0] = 9  # the loader has drawn into the third shard
        _wait(lambda: prefetcher.fetched == 5)
        assert _cached_shards(cache) == {f"shard-00000{k}" for k in (5, 2, 9, 0, 7)}
    finally:
        prefetcher.stop()
        prefetcher.join(10)


def test_prefetching_threads_never_take_the_cache_past_its_limit(
    store_url: str, tmp_path: Path
) -> None:
    """Eight threads fetching shards ahead into a cache of three shards: while a reader
    holds three, nothing is fetched (a reader's own download would go past the limit by
    its one file; a prefetch never does); once it lets go, they are fetched in turn."""
    blocks = ["vin.lengths", "vin.points_world"]
    probe = VinOfflineStoreReader(
        VinOfflineStoreConfig.from_url(store_url, cache_dir=tmp_path / "probe")
    )
    shard = probe.shard_files(blocks).shard_bytes
    with CacheSpace(tmp_path / "probe").locked():  # what a reader reads when it opens
        opened = CacheSpace(tmp_path / "probe").usage()
    limit = opened.total_bytes + 3 * shard
    cache = tmp_path / "cache"
    config = VinOfflineStoreConfig.from_url(store_url, cache_dir=cache, cache_limit=limit)
    files = VinOfflineStoreReader(config).shard_files(blocks)
    tree = files.trees[0]
    assert tree is not None
    space = CacheSpace(cache)
    peaks: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            with space.locked():  # parts are created and renamed under this lock
                peaks.append(space.usage().total_bytes)
            time.sleep(0.002)

    def fetch_ahead(shards: list[int]) -> ShardPrefetcher:
        order = np.repeat(np.array(shards, dtype=np.int64), 4)
        prefetcher = ShardPrefetcher(files, order, lambda: 0, ahead=12, threads=8).start()
        _wait(lambda: prefetcher.fetched + prefetcher.skipped == len(shards))
        prefetcher.stop()
        prefetcher.join(20)
        return prefetcher

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        in_use = [f.rel for f in opened.files]
        in_use += [rel for k in range(3) for rel in files.files(k)[1]]
        with tree.held(in_use):  # a reader opening shards 0 to 2: the cache is full
            blocked = fetch_ahead(list(range(3, 12)))
        free = fetch_ahead(list(range(3, 12)))
    finally:
        done.set()
        watcher.join()
    assert (blocked.fetched, blocked.skipped) == (0, 9)
    assert (free.fetched, free.skipped) == (9, 0)
    assert len(peaks) > 5 and max(peaks) <= limit, (max(peaks), limit)


def test_each_pass_fetches_ahead_with_the_manifest_the_reader_checked(
    store_url: str, tmp_path: Path
) -> None:
    """A pass does not download the content manifest again (a large dataset's is many
    megabytes, before the first batch of every epoch), and a prefetcher that cannot read
    one fetches nothing rather than stopping the loader."""
    import shutil

    from dataset_devkit.integrity import CONTENT_MANIFEST_NAME

    bucket = tmp_path / "bucket"
    shutil.copytree(Path(store_url.removeprefix("file://")), bucket)
    config = VinOfflineStoreConfig.from_url(bucket.as_uri(), cache_dir=tmp_path / "cache")
    files = VinOfflineStoreReader(config).shard_files(["vin.lengths"])
    unread = VinOfflineStoreReader(config).shard_files(["vin.lengths"])
    assert unread.trees[0] is not None
    unread.trees[0]._manifest = None  # as if the reader's tree had none yet
    (bucket / CONTENT_MANIFEST_NAME).rename(tmp_path / "away.json")  # the server is gone
    shards = np.repeat(np.arange(12, dtype=np.int64), 4)
    prefetcher = ShardPrefetcher(files, shards, lambda: 48, ahead=12).start()
    _wait(lambda: prefetcher.fetched == 12)
    prefetcher.stop()
    prefetcher.join(10)
    assert prefetcher.fetched == 12
    empty = ShardPrefetcher(unread, shards, lambda: 48, ahead=12).start()
    empty.join(10)
    assert empty.fetched == 0


def test_how_far_ahead_follows_the_room_in_the_cache(store_url: str, tmp_path: Path) -> None:
    reader = VinOfflineStoreReader(
        VinOfflineStoreConfig.from_url(store_url, cache_dir=tmp_path / "c", cache_limit="1MB")
    )
    files = reader.shard_files()
    shard = files.shard_bytes
    assert shard > 0
    for limit, shuffle, window, expected in (
        (None, "block", 4, 12),
        (20 * shard, "block", 4, 12),  # room for 20: 14 beyond the 6 being read, at most 12
        (9 * shard, "block", 4, 3),
        (5 * shard, "block", 4, 0),  # no room beyond what is read at once
        (20 * shard, "full", 4, 0),  # a full shuffle reads every shard all the time
        (20 * shard, "none", 4, 6),
    ):
        for tree in files.trees:
            assert tree is not None
            tree.limit = limit
        assert prefetch_depth(files, shuffle, window) == expected, (limit, shuffle)


def test_a_loader_over_a_url_store_reads_what_the_sampler_fetched_ahead(
    store_url: str, tmp_path: Path
) -> None:
    import torch

    cache = tmp_path / "cache"
    config = VinOfflineStoreConfig.from_url(store_url, cache_dir=cache, cache_limit="200kB")
    dataset = VinOfflineTorchDataset(config, blocks=["vin.lengths"])
    for prefetch in (True, False):
        sampler = VinOfflineDistributedSampler(
            dataset, shuffle="block", window=2, seed=4, prefetch=prefetch
        )
        loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=4,
            sampler=sampler,
            num_workers=2,
            multiprocessing_context=multiprocessing.get_context("fork"),
        )
        iterator = iter(loader)
        first = next(iterator)["vin.lengths"].reshape(-1).tolist()
        started = sampler._prefetcher
        rest = [v for batch in iterator for v in batch["vin.lengths"].reshape(-1).tolist()]
        assert sorted(first + rest) == list(range(48))
        assert (started is not None) == prefetch
        if started is not None:
            started.join(10)
            assert started.fetched > 0 and sampler._prefetcher is None  # stopped at the end
    with CacheSpace(cache).locked():
        assert CacheSpace(cache).usage().total_bytes <= 200_000


_STATEFUL_RUN = """
import multiprocessing, sys
from dataset_devkit.vin_store import (
    VinOfflineBatchedTorchDataset, VinOfflineDistributedSampler, VinOfflineStoreConfig,
)
config = VinOfflineStoreConfig.from_url(sys.argv[1], cache_dir=sys.argv[2], cache_limit="300kB")
dataset = VinOfflineBatchedTorchDataset(config, blocks=["vin.lengths"])
sampler = VinOfflineDistributedSampler(dataset, shuffle="block", window=2, seed=1)
loader = dataset.loader(batch_size=4, num_workers=2, sampler=sampler, stateful=True,
                        multiprocessing_context=multiprocessing.get_context("fork"))
seen = []
for epoch in range(2):
    sampler.set_epoch(epoch)
    seen += [int(v) for batch in loader for v in batch["vin.lengths"].reshape(-1)]
assert sorted(seen) == sorted(list(range(48)) * 2), seen
print("ok")
"""


def test_a_stateful_loader_forks_its_workers_without_copying_a_download(
    store_url: str, tmp_path: Path, package_env: dict[str, str]
) -> None:
    """torchdata's loader creates the sampler's iterator before forking its workers, and a
    child that inherits a thread mid-download hangs: prefetching starts at the first draw,
    and every fork first waits for running prefetchers."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _STATEFUL_RUN, store_url, str(tmp_path / "cache")],
        env=package_env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_mix_names_each_shard_s_stream_and_files_as_its_sample_space_numbers_them(
    store_url: str, tmp_path: Path
) -> None:
    from dataset_devkit.vin_store import VinOfflineMix, VinOfflineStream

    cache = tmp_path / "cache"
    mix = VinOfflineMix(
        [VinOfflineStream(store_url, cache_dir=cache), VinOfflineStream(store_url, cache_dir=cache)]
    )
    alone = VinOfflineStoreReader(VinOfflineStoreConfig.from_url(store_url, cache_dir=cache))
    own = alone.shard_files(["vin.lengths"])
    files = mix.shard_files(["vin.lengths"])
    shards = np.unique(mix.sample_space().shard_of).tolist()
    assert shards == list(range(24))
    for shard in shards:
        assert files.files(shard) == (shard // 12, own.files(shard % 12)[1])
    assert files.remote and files.shard_bytes == own.shard_bytes
