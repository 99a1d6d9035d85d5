"""Reading a VIN offline store from a real S3 server (moto on 127.0.0.1) through a local cache."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dataset_devkit.errors import ConfigError, MissingPathError, ObjectStoreError
from dataset_devkit.integrity.bucket import cache as remote
from dataset_devkit.integrity.bucket import publish_remote, verify_remote
from dataset_devkit.vin_store import (
    VinOfflineStoreConfig,
    VinOfflineStoreReader,
    build_vin_offline_store,
)
from tests.optional import need
from tests.s3_faults import Fault, FaultProxy, fault_proxy
from tests.s3_server import S3Server
from tests.upload import upload_tree
from tests.vin_store.conftest import make_samples
from tests.workers import START_METHODS, run_in_worker


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k] for k in a
    )


@pytest.fixture(scope="module")
def local_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small store for the module (never changed: tests damage only their caches)."""
    out = tmp_path_factory.mktemp("remote") / "store"
    with ThreadPoolExecutor(2) as pool:
        build_vin_offline_store(
            make_samples(11), out, rows_per_shard=4, val_fraction=0.3, executor=pool
        )
    return out


@pytest.fixture
def store_url(local_store: Path, s3_bucket: str) -> str:
    url = f"s3://{s3_bucket}/datasets/vin"
    upload_tree(local_store, url)
    return url


@pytest.fixture
def cloud_store_url(local_store: Path, cloud_bucket_url: str) -> str:
    """The store on S3 and on Azure (Azurite) in turn."""
    url = f"{cloud_bucket_url}/datasets/vin"
    upload_tree(local_store, url)
    return url


def _cache_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file() and "/tree/" in p.as_posix())


def test_remote_reads_equal_local_reads_and_only_touched_files_are_cached(
    local_store: Path, store_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    reader = VinOfflineStoreReader(VinOfflineStoreConfig.from_url(store_url, cache_dir=cache))
    local = VinOfflineStoreReader(local_store)
    assert len(reader) == len(local) == 11
    first = reader.read_position(0, ["vin.points_world"])
    assert np.array_equal(first["vin.points_world"], local.read_position(0)["vin.points_world"])
    cached = {p.relative_to(next(cache.glob("*/tree"))).as_posix() for p in _cache_files(cache)}
    assert cached == {
        "manifest.json",
        "sample_index.npy",
        "splits/all.npy",
        "shards/shard-000000/vin/points_world/c/0/0/0",
    }
    for i in range(len(local)):
        assert _same(reader.read_position(i), local.read_position(i))
    batch = reader.read_positions([10, 0, 5])
    assert np.array_equal(batch["vin.lengths"].ravel(), [10, 0, 5])
    assert reader.index_records == local.index_records
    val = reader.split_view("val")
    assert val.config.url == store_url and np.array_equal(
        val.sample_indices, local.split_view("val").sample_indices
    )
    # Every cached file is byte-identical to the published one, and read-only.
    for path in _cache_files(cache):
        rel = path.relative_to(next(cache.glob("*/tree")))
        assert path.read_bytes() == (local_store / rel).read_bytes()
        assert not os.access(path, os.W_OK) or os.geteuid() == 0


def test_every_backend_publishes_verifies_and_serves_the_store(
    local_store: Path, bucket_url: str, tmp_path: Path
) -> None:
    # The whole path a user takes, on S3, Azure Blob Storage and a file:// folder alike.
    url = f"{bucket_url}/datasets/vin"
    published = publish_remote(local_store, url)
    assert verify_remote(url, expect_root=published.root_sha256).ok
    reader = VinOfflineStoreReader(VinOfflineStoreConfig(url, cache_dir=tmp_path / "cache"))  # type: ignore[arg-type]
    local = VinOfflineStoreReader(local_store)
    assert len(reader) == len(local) == 11
    for i in range(len(local)):
        assert _same(reader.read_position(i), local.read_position(i))
    assert reader.index_records == local.index_records


def test_a_corrupt_or_truncated_cache_file_is_detected_and_fetched_again(
    local_store: Path, store_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    config = VinOfflineStoreConfig.from_url(store_url, cache_dir=cache)
    VinOfflineStoreReader(config).read_positions(list(range(11)))
    tree = next(cache.glob("*/tree"))
    chunk = tree / "shards/shard-000001/vin/points_world/c/0/0/0"
    offsets = tree / "shards/shard-000002/oracle.candidate_pcs.offsets.npy"
    for path, damage in ((chunk, "flip"), (offsets, "truncate")):
        os.chmod(path, 0o644)
        data = bytearray(path.read_bytes())
        if damage == "flip":
            data[5] ^= 0xFF  # same size: only the hash can tell
        else:
            del data[len(data) // 2 :]
        path.write_bytes(bytes(data))
    fresh = VinOfflineStoreReader(config)  # a new process would see the same files
    local = VinOfflineStoreReader(local_store)
    for i in range(11):
        assert _same(fresh.read_position(i), local.read_position(i))
    assert chunk.read_bytes() == (local_store / chunk.relative_to(tree)).read_bytes()
    assert offsets.read_bytes() == (local_store / offsets.relative_to(tree)).read_bytes()


def _read_all(config: VinOfflineStoreConfig, context: str) -> list[int]:
    torch = need("torch")
    from dataset_devkit.vin_store import VinOfflineTorchDataset

    dataset = VinOfflineTorchDataset(config, blocks=["vin.lengths", "vin.points_world"])
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=3,
        num_workers=2,
        multiprocessing_context=multiprocessing.get_context(context),
    )
    return [int(v) for batch in loader for v in batch["vin.lengths"].reshape(-1)]


def test_fork_dataloader_workers_share_one_cold_cache(cloud_store_url: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    config = VinOfflineStoreConfig.from_url(cloud_store_url, cache_dir=cache)
    VinOfflineStoreReader(config).read_position(0, ["vin.lengths"])  # the parent has a client
    assert _read_all(config, "fork") == list(range(11))
    assert not list(cache.glob("*/tmp/*.part"))  # nothing left half-written


def _read_in_worker(reader: VinOfflineStoreReader) -> list[int]:
    batch = reader.read_positions(list(range(len(reader))), ["vin.lengths", "vin.points_world"])
    return [int(v) for v in batch["vin.lengths"].reshape(-1)]


@pytest.mark.parametrize("method", START_METHODS)
def test_a_remote_reader_used_in_the_parent_reads_in_every_kind_of_worker(
    store_url: str,
    tmp_path: Path,
    package_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    method: str,
) -> None:
    """obstore's runtime threads (alive in the parent) do not survive a fork: the worker
    still reads every sample, fetching what the parent's cache lacks."""
    monkeypatch.setenv("PYTHONPATH", package_env["PYTHONPATH"])
    config = VinOfflineStoreConfig.from_url(store_url, cache_dir=tmp_path / "cache")
    reader = VinOfflineStoreReader(config)
    reader.read_position(0, ["vin.lengths"])  # the parent has a client and a part of the cache
    server = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    assert run_in_worker(method, _read_with, server, reader) == list(range(11))
    assert _read_in_worker(reader) == list(range(11))


def _read_with(environment: dict[str, str], reader: VinOfflineStoreReader) -> list[int]:
    # The fork server keeps the environment it started with (an earlier test's): a worker
    # takes the S3 server's now, as a DataLoader's worker_init_fn would.
    os.environ.update(environment)
    return _read_in_worker(reader)


def test_spawned_processes_fill_one_cold_cache_at_once(
    cloud_store_url: str,
    tmp_path: Path,
    package_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spawned workers (as DataLoader's spawn context makes them, without torch's start-up
    cost) get the pickled reader, open their own clients and race for the same files."""
    monkeypatch.setenv("PYTHONPATH", package_env["PYTHONPATH"])
    cache = tmp_path / "cache"
    config = VinOfflineStoreConfig.from_url(cloud_store_url, cache_dir=cache)
    reader = VinOfflineStoreReader(config)
    len(reader)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(_read_in_worker, [reader, reader, reader, reader])
    assert results == [list(range(11))] * 4
    assert not list(cache.glob("*/tmp/*.part"))


def test_without_content_manifest_is_not_a_dataset(
    local_store: Path, s3_bucket: str, tmp_path: Path
) -> None:
    url = f"s3://{s3_bucket}/half"
    upload_tree(local_store, url)
    import obstore

    from dataset_devkit.objectstore import open_location

    obstore.delete(open_location(url).store, "content_manifest.json")
    reader = VinOfflineStoreReader(VinOfflineStoreConfig.from_url(url, cache_dir=tmp_path / "c"))
    with pytest.raises(MissingPathError, match=r"half: no content_manifest\.json here"):
        len(reader)


def test_missing_bucket_is_one_line(s3_bucket: str, tmp_path: Path) -> None:
    reader = VinOfflineStoreReader(
        VinOfflineStoreConfig.from_url(f"s3://{s3_bucket}-absent/x", cache_dir=tmp_path / "c")
    )
    with pytest.raises((ObjectStoreError, MissingPathError)) as info:
        len(reader)
    assert "\n" not in str(info.value) and f"{s3_bucket}-absent" in str(info.value)


def test_url_config_mistakes_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a local cache_dir"):
        VinOfflineStoreConfig("s3://bucket/store")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="read as a local path"):
        VinOfflineStoreConfig(Path("s3://bucket/store"))  # Path() ate one slash
    with pytest.raises(ConfigError, match="read-only"):
        VinOfflineStoreConfig.from_url("s3://b/s", cache_dir=tmp_path).write_split_indices({})


@pytest.fixture
def proxied(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    with fault_proxy(s3_server.endpoint) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
        monkeypatch.setattr(remote, "RETRY", {"max_retries": 2})
        yield proxy


@pytest.mark.parametrize("kind", ["500", "drop"])
def test_transient_faults_are_retried(
    local_store: Path, store_url: str, tmp_path: Path, proxied: FaultProxy, kind: str
) -> None:
    proxied.faults = [Fault("GET", "points_world", kind, times=2)]
    reader = VinOfflineStoreReader(
        VinOfflineStoreConfig.from_url(store_url, cache_dir=tmp_path / "c")
    )
    local = VinOfflineStoreReader(local_store)
    for i in range(11):
        assert _same(reader.read_position(i), local.read_position(i))
    assert proxied.faults[0].fired == 2


@pytest.mark.parametrize("kind", ["500", "drop"])
def test_persistent_faults_end_in_one_line_naming_the_object_and_no_partial_file(
    store_url: str, tmp_path: Path, proxied: FaultProxy, kind: str
) -> None:
    cache = tmp_path / "c"
    reader = VinOfflineStoreReader(VinOfflineStoreConfig.from_url(store_url, cache_dir=cache))
    len(reader)
    proxied.faults = [Fault("GET", "shard-000001/vin/points_world", kind, times=-1)]
    with pytest.raises(ObjectStoreError) as info:
        reader.read_position(5)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{store_url}/shards/shard-000001/vin/points_world/c/0/0/0: ")
    assert not list(cache.rglob("shard-000001/vin/points_world/c/0/0/0"))
    assert not list(cache.glob("*/tmp/*.part"))
    proxied.faults = []
    assert reader.read_position(5)["vin.lengths"].tolist() == [5]  # the same reader recovers
