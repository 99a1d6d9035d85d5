"""Builds at scale: partitioned sources, byte-sized shards, bounded memory, kill and resume."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec
import numpy as np
import psutil  # type: ignore[import-untyped]
import pytest

from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.vin_store import (
    VinOfflineSample,
    VinOfflineSchemaError,
    VinOfflineShardSource,
    VinOfflineShardWriter,
    VinOfflineStoreReader,
    build_vin_offline_store,
    verify_store,
)
from dataset_devkit.vin_store.sources import plan_pieces
from tests.vin_store import _sources

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _sources_of(*bounds: int, produce: object = _sources.produce) -> list[VinOfflineShardSource]:
    return [
        VinOfflineShardSource(produce, a, b)  # type: ignore[arg-type]
        for a, b in itertools.pairwise(bounds)
    ]


def test_shards_are_cut_at_fixed_rows_across_sources() -> None:
    sources = _sources_of(0, 3, 4, 11)
    assert plan_pieces(sources, 4) == [
        [(0, 0, 3), (1, 3, 4)],
        [(2, 4, 8)],
        [(2, 8, 11)],
    ]


def test_partitioned_sources_write_the_bytes_of_the_iterable_build(tmp_path: Path) -> None:
    with ThreadPoolExecutor(2) as pool:
        iterable = build_vin_offline_store(
            _sources.produce(0, 11), tmp_path / "it", rows_per_shard=4, val_fraction=0.3,
            executor=pool,
        )  # fmt: skip
    # Sources cut elsewhere than shards, on the default executor (a spawn process pool).
    pooled = build_vin_offline_store(
        _sources_of(0, 3, 4, 11), tmp_path / "pool", rows_per_shard=4, val_fraction=0.3,
        workers=2,
    )  # fmt: skip
    assert pooled.root_sha256 == iterable.root_sha256
    assert (pooled.num_shards, pooled.num_samples) == (3, 11)
    assert _files(tmp_path / "pool") == _files(tmp_path / "it")
    assert verify_store(tmp_path / "pool").ok


def test_a_source_that_gives_the_wrong_count_is_named(tmp_path: Path) -> None:
    sources = [
        VinOfflineShardSource(_sources.produce, 0, 4),
        VinOfflineShardSource(_sources.produce_one_short, 4, 6),
    ]
    message = r"produce_one_short\[4:6\]: produce\(4, 6\) gave 1 samples, expected 2"
    with ThreadPoolExecutor(1) as pool, pytest.raises(VinOfflineSchemaError, match=message):
        build_vin_offline_store(sources, tmp_path / "out", rows_per_shard=4, executor=pool)
    assert list(tmp_path.iterdir()) == []  # bad input leaves nothing to resume


def test_index_batches_name_the_line_of_the_whole_file(tmp_path: Path) -> None:
    from dataset_devkit.vin_store import VinOfflineFormatError, VinOfflineIndexRecord

    path = tmp_path / "sample_index.jsonl"
    good = b'{"sample_index":%d,"sample_key":"k%d","scene_id":"s","snippet_id":"x",'
    good += b'"split":"all","shard_id":"shard-000000","row":%d}\n'
    lines = [good % (i, i, i) for i in range(7)]
    lines[4] = lines[4].replace(b'"row":4', b'"row":-4')
    path.write_bytes(b"".join(lines))
    with pytest.raises(VinOfflineFormatError) as caught:
        list(VinOfflineIndexRecord.read_batches(path, lines=2))
    assert caught.value.field == "line 5 $.row"
    path.write_bytes(b"".join(lines[:4]))
    assert [first for first, _ in VinOfflineIndexRecord.read_batches(path, lines=3)] == [1, 4]


def test_rows_per_shard_follow_the_byte_target_and_progress_is_reported(tmp_path: Path) -> None:
    first = _sources.sample(0)
    row = 16 * 3 * 4 + 8  # float32 points + int64 length
    record = len(msgspec.msgpack.encode(first.records["oracle.candidate_pcs"]))
    ids = (first.sample_key, first.scene_id, first.snippet_id)
    line = 100 + sum(len(msgspec.json.encode(i)) for i in ids)  # its index line, roughly
    seen: list[ProgressUpdate] = []
    with ThreadPoolExecutor(2) as pool:
        result = build_vin_offline_store(
            list(_sources.produce(0, 30)), tmp_path / "out", shard_bytes=7 * (row + record + line),
            executor=pool, progress=seen.append,
        )  # fmt: skip
    manifest = VinOfflineStoreReader(tmp_path / "out").manifest
    assert manifest.stats["rows_per_shard"] == 7
    assert [s.num_rows for s in manifest.shards] == [7, 7, 7, 7, 2]
    assert result.num_shards == 5
    built = [u for u in seen if u.stage == "build"]
    assert [(u.stage, u.unit) for u in built] == [("build", "samples")] * 6
    assert [u.total_items for u in built] == [30, None, None, None, None, None]
    assert [u.items for u in built] == [0, 7, 7, 7, 7, 2]  # one update per finished shard
    # Then publication's recheck of the sealed store is heard too (no silent tail).
    verified = [u for u in seen if u.stage == "verify"]
    assert seen[: len(built)] == built and seen[len(built) :] == verified
    assert sum(u.items for u in verified) == manifest_files(tmp_path / "out")


def manifest_files(root: Path) -> int:
    """Files the store's content manifest lists."""
    return len(json.loads((root / "content_manifest.json").read_bytes())["files"])


DTYPES = ["bool", "int8", "uint16", "int32", "uint64", "float16", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_block_files_are_byte_identical_to_zarr_python(tmp_path: Path, dtype: str) -> None:
    import zarr
    from zarr.storage import LocalStore

    data = (np.arange(5 * 4 * 3) % 7).astype(dtype).reshape(5, 4, 3)
    VinOfflineShardWriter(tmp_path / "ours").write_numeric_block("a.b", data)
    reference = zarr.create_array(
        store=LocalStore(tmp_path / "zarr"), name="a/b", shape=data.shape, dtype=data.dtype,
        chunks=(1, 4, 3), shards=data.shape, compressors=None, filters=None, fill_value=0,
        config={"write_empty_chunks": True}, dimension_names=["row", "a.b.dim1", "a.b.dim2"],
    )  # fmt: skip
    reference[...] = data
    ours, theirs = _files(tmp_path / "ours"), _files(tmp_path / "zarr")
    if data.dtype.itemsize == 1:  # zarr omits the (meaningless) endian of 1-byte types;
        # the format pins it to "little" for every type, and zarr reads that too
        ours["a/b/zarr.json"] = ours["a/b/zarr.json"].replace(
            b'"name": "bytes",\n            "configuration": {\n              "endian": '
            b'"little"\n            }',
            b'"name": "bytes"',
            1,
        )
    assert ours == theirs
    reopened = zarr.open_array(LocalStore(tmp_path / "ours"), path="a/b", mode="r")
    np.testing.assert_array_equal(reopened[2:4], data[2:4])  # partial reads use the index


_MEMORY_SCRIPT = """
import resource, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import numpy as np
from dataset_devkit.vin_store import VinOfflineShardSource, build_vin_offline_store
from tests.vin_store._big import produce

out, n, partitioned = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
with ThreadPoolExecutor(2) as pool:  # warm up: imports, threads, first allocations
    build_vin_offline_store(produce(0, 2), out.with_name("warm"), shard_bytes=4 << 20,
                            executor=pool, max_pending=2)
base = peak()
samples = [VinOfflineShardSource(produce, 0, n)] if partitioned else produce(0, n)
with ThreadPoolExecutor(2) as pool:
    build_vin_offline_store(samples, out, shard_bytes=4 << 20, executor=pool, max_pending=2)
print(peak() - base)
"""


@pytest.mark.parametrize("partitioned", [False, True], ids=["iterable", "sources"])
def test_memory_is_bounded_by_shards_in_flight_not_by_the_sample_count(
    tmp_path: Path, partitioned: bool
) -> None:
    # 48 samples of 2 MiB of float16 voxel features (96 MiB) in 4 MiB shards: the driver
    # holds max_pending + 1 shards, a worker a few blocks. The old builder held them all.
    n = 48
    command = [sys.executable, "-c", _MEMORY_SCRIPT, str(tmp_path / "out"), str(n)]
    result = subprocess.run(
        [*command, str(int(partitioned))],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    grown = int(result.stdout.strip())
    assert grown < 40 << 20, f"peak RSS grew by {grown / 2**20:.0f} MiB building {2 * n} MiB"
    assert VinOfflineStoreReader(tmp_path / "out").manifest.stats["num_samples"] == n


_KILL_SCRIPT = """
import sys
from pathlib import Path
from dataset_devkit.vin_store import VinOfflineShardSource, build_vin_offline_store
from tests.vin_store._sources import produce_slowly
sources = [VinOfflineShardSource(produce_slowly, a, a + 3) for a in range(0, 36, 3)]
build_vin_offline_store(sources, Path(sys.argv[1]), rows_per_shard=3, workers=2)
"""


def test_a_killed_build_leaves_no_worker_and_resumes_to_the_same_root(tmp_path: Path) -> None:
    out = tmp_path / "out"
    state = tmp_path / ".out.vin-build-state"
    child = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(out)], env=ENV)
    try:
        deadline = time.monotonic() + 60
        while len(list(state.glob("*.rec"))) < 3:  # some shards done, most still to do
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        family = psutil.Process(child.pid).children(recursive=True)
        assert len(family) >= 2  # pool workers (and the resource tracker)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    _, alive = psutil.wait_procs(family, timeout=5)
    assert not alive, f"orphaned after the builder was killed: {[p.pid for p in alive]}"
    assert not out.exists()

    sources = [VinOfflineShardSource(_sources.produce_slowly, a, a + 3) for a in range(0, 36, 3)]
    resumed = build_vin_offline_store(sources, out, rows_per_shard=3, workers=2)
    assert 3 <= resumed.reused_shards < resumed.num_shards == 12
    with ThreadPoolExecutor(2) as pool:
        fresh = build_vin_offline_store(
            _sources_of(*range(0, 37, 3)), tmp_path / "fresh", rows_per_shard=3, executor=pool
        )
    assert resumed.root_sha256 == fresh.root_sha256
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "out"]  # no build state left


def test_an_iterable_build_that_crashed_resumes_from_its_finished_shards(tmp_path: Path) -> None:
    def crashing() -> Iterator[VinOfflineSample]:
        yield from _sources.produce(0, 9)
        raise OSError("the camera archive went away")

    with ThreadPoolExecutor(2) as pool:
        for name in ("out", "other"):
            with pytest.raises(OSError, match="went away"):
                build_vin_offline_store(
                    crashing(), tmp_path / name, rows_per_shard=4, executor=pool
                )
            assert not (tmp_path / name).exists()
            assert (tmp_path / f".{name}.vin-build-state").is_dir()  # kept for the re-run
        resumed = build_vin_offline_store(
            _sources.produce(0, 11), tmp_path / "out", rows_per_shard=4, executor=pool
        )
        changed = build_vin_offline_store(  # other rows in every shard: nothing is reused
            _sources.produce(1, 12), tmp_path / "other", rows_per_shard=4, executor=pool
        )
        fresh = build_vin_offline_store(
            _sources.produce(0, 11), tmp_path / "fresh", rows_per_shard=4, executor=pool
        )
    assert (resumed.reused_shards, changed.reused_shards, fresh.reused_shards) == (2, 0, 0)
    assert resumed.root_sha256 == fresh.root_sha256 != changed.root_sha256
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "other", "out"]


def test_index_lines_written_in_chunks_are_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.vin_store import _index_out

    with ThreadPoolExecutor(2) as pool:
        whole = build_vin_offline_store(
            _sources.produce(0, 11), tmp_path / "whole", rows_per_shard=8, executor=pool
        )
        monkeypatch.setattr(_index_out, "_CHUNK_BYTES", 50)  # a line or two per chunk
        chunked = build_vin_offline_store(
            _sources.produce(0, 11), tmp_path / "chunked", rows_per_shard=8, executor=pool
        )
    assert chunked.root_sha256 == whole.root_sha256
