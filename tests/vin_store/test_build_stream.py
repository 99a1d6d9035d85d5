"""The write paths of a build give the same bytes: streamed blocks, packed shards, direct rows.

An iterable build on threads streams each shard to a writer thread in small blocks; on a
process pool it packs whole shards; partitioned sources write large rows straight from the
sample. Producers here reuse their arrays after yielding them, as real ones may, so a path
that kept a reference instead of a copy would write the wrong rows.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dataset_devkit.integrity import publish
from dataset_devkit.vin_store import (
    VinOfflineSample,
    VinOfflineShardSource,
    VinOfflineStoreReader,
    _shard_files,
    _shard_task,
    _submit,
    build_vin_offline_store,
)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def reused_buffers(start: int, stop: int) -> Iterator[VinOfflineSample]:
    """Items [start, stop) of every numeric kind, yielded from arrays that are then reused."""
    wide = np.zeros((4, 10), dtype=np.float32)
    swapped = np.zeros(3, dtype=">f8")  # big-endian: stored little-endian
    for i in range(start, stop):
        wide[:] = i
        swapped[:] = [i, -i, 0.5 * i]
        yield VinOfflineSample(
            sample_key=f"k{i}",
            scene_id=f"scene{i % 3}",
            snippet_id=f"snip{i}",
            arrays={
                "vin.points_world": wide[:, ::2],  # not contiguous
                "vin.t_world_rig": swapped,
                "gt.mask": np.array([i % 2 == 0, True]),
                "vin.lengths": np.array([i], dtype=np.int64),
            },
            records={"oracle.candidate_pcs": {"i": i, "xs": [0.5] * (i % 4)}},
            sample_index=None if i % 4 else 10 * i,
        )


def _sources(n: int) -> list[VinOfflineShardSource]:
    return [VinOfflineShardSource(reused_buffers, a, min(n, a + 7)) for a in range(0, n, 7)]


def test_streamed_packed_and_direct_builds_write_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 45
    options: dict[str, Any] = {"rows_per_shard": 10, "val_fraction": 0.3}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:  # whole shards, pickled
        packed = build_vin_offline_store(
            reused_buffers(0, n), tmp_path / "packed", executor=pool, **options
        )
    monkeypatch.setattr(_submit, "STREAM_BLOCK_BYTES", 300)  # a few rows per block
    monkeypatch.setattr(_shard_task, "DIRECT_ROW_BYTES", 16)  # most rows straight to file
    with ThreadPoolExecutor(1) as pool:
        streamed = build_vin_offline_store(
            reused_buffers(0, n), tmp_path / "streamed", executor=pool, **options
        )
        direct = build_vin_offline_store(_sources(n), tmp_path / "direct", executor=pool, **options)
    assert packed.num_shards == streamed.num_shards == direct.num_shards == 5  # last one short
    assert packed.root_sha256 == streamed.root_sha256 == direct.root_sha256
    files = _files(tmp_path / "packed")
    assert files == _files(tmp_path / "streamed") == _files(tmp_path / "direct")
    reader = VinOfflineStoreReader(tmp_path / "streamed")
    last = reader.index_records[-1]
    np.testing.assert_array_equal(
        reader.read_numeric_block(last, "vin.points_world"), np.full((4, 5), n - 1, np.float32)
    )


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _build_in_thread(**kwargs: Any) -> BaseException | None:
    """Run a build on a thread; fail the test if it does not end (a deadlock)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            build_vin_offline_store(**kwargs)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert outcome, "the build hung"
    return outcome[0]


def test_a_writer_thread_that_fails_stops_the_build_and_keeps_the_finished_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_submit, "STREAM_BLOCK_BYTES", 300)
    original = _shard_files.ShardFiles.write_block
    calls = {"n": 0}

    def failing(self: _shard_files.ShardFiles, block: Any) -> None:
        if self.shard_dir.name == "shard-000002":
            calls["n"] += 1
            if calls["n"] == 3:  # its third block
                raise OSError(28, "No space left on device")
        original(self, block)

    monkeypatch.setattr(_shard_files.ShardFiles, "write_block", failing)
    before = _open_fds()
    with ThreadPoolExecutor(1) as pool:
        error = _build_in_thread(
            samples=reused_buffers(0, 45), out=tmp_path / "out", rows_per_shard=10, executor=pool
        )
    assert isinstance(error, OSError) and error.errno == 28
    assert not (tmp_path / "out").exists()
    shards = sorted(p.name for p in (tmp_path / ".out.vin-build" / "shards").iterdir())
    records = sorted(p.name for p in (tmp_path / ".out.vin-build-state").glob("*.rec"))
    # The failed shard left nothing; those before it, and any the driver had already
    # handed over when the failure surfaced, are finished and kept for a re-run.
    assert "shard-000002" not in shards
    assert {"shard-000000", "shard-000001"} <= set(shards)
    assert records == [f"{name}.rec" for name in shards]
    assert _open_fds() == before  # the failed shard's files were closed


def test_a_caller_crash_mid_shard_cuts_only_the_open_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crashing() -> Iterator[VinOfflineSample]:
        yield from reused_buffers(0, 25)  # shards 0 and 1 complete, shard 2 half filled
        raise ValueError("the camera archive went away")

    before = _open_fds()
    with ThreadPoolExecutor(1) as pool:
        error = _build_in_thread(
            samples=crashing(), out=tmp_path / "out", rows_per_shard=10, executor=pool
        )
        assert isinstance(error, ValueError)
        shards = sorted(p.name for p in (tmp_path / ".out.vin-build" / "shards").iterdir())
        assert shards == ["shard-000000", "shard-000001"]
        assert _open_fds() == before

        def no_rehash(*_args: object, **_kwargs: object) -> None:
            raise AssertionError("publication hashed the store again")

        # Every file, a reused shard's too, is stamped: publication rechecks by identity.
        monkeypatch.setattr(publish, "verify_tree", no_rehash)
        resumed = build_vin_offline_store(
            reused_buffers(0, 45), tmp_path / "out", rows_per_shard=10, executor=pool
        )
        fresh = build_vin_offline_store(
            reused_buffers(0, 45), tmp_path / "fresh", rows_per_shard=10, executor=pool
        )
    assert resumed.reused_shards == 2
    assert resumed.root_sha256 == fresh.root_sha256
