"""The builder's process pool: workers forked from a fork server, gone with the builder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from dataset_devkit.vin_store import (
    VinOfflineShardSource,
    build_process_pool,
    build_vin_offline_store,
)
from tests.vin_store import _sources

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}

_POOL_SCRIPT = """
import os, sys, time
from dataset_devkit.vin_store._pool import process_pool
if __name__ == "__main__":
    pool = process_pool(2)
    futures = [pool.submit(time.sleep, 0.5) for _ in range(2)]
    for future in futures:
        future.result()
    print(os.getpid(), flush=True)
    time.sleep(60)
"""


def test_workers_forked_by_the_fork_server_die_with_the_builder(tmp_path: Path) -> None:
    script = tmp_path / "builder.py"
    script.write_text(_POOL_SCRIPT)
    child = subprocess.Popen(
        [sys.executable, str(script)], env=ENV, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert int(child.stdout.readline()) == child.pid
        family = psutil.Process(child.pid).children(recursive=True)
        workers = [p for p in family if p.ppid() != child.pid]
        assert len(workers) >= 2, "the workers are the fork server's children, not spawned"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    _, alive = psutil.wait_procs(family, timeout=5)
    assert not alive, f"orphaned after the builder was killed: {[p.pid for p in alive]}"


def _worker_pid(_: int) -> int:
    return os.getpid()


def test_a_kept_pool_serves_several_builds_with_the_same_workers(tmp_path: Path) -> None:
    sources = [VinOfflineShardSource(_sources.produce, a, a + 4) for a in range(0, 12, 4)]
    default = build_vin_offline_store(sources, tmp_path / "default", rows_per_shard=3)
    with build_process_pool(2) as pool:
        first = build_vin_offline_store(
            sources, tmp_path / "first", rows_per_shard=3, executor=pool, workers=2
        )
        workers = set(pool.map(_worker_pid, range(8)))
        second = build_vin_offline_store(
            sources, tmp_path / "second", rows_per_shard=3, executor=pool, workers=2
        )
        assert set(pool.map(_worker_pid, range(8))) <= workers  # the same processes
    assert first.root_sha256 == second.root_sha256 == default.root_sha256
    assert first.reused_shards == second.reused_shards == 0


def _environment_and_directory(name: str) -> tuple[str | None, str]:
    return os.environ.get(name), os.getcwd()


def test_workers_see_the_builder_s_environment_and_directory_of_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with build_process_pool(1) as pool:  # the fork server runs from here on
        pool.submit(_worker_pid, 0).result()
    monkeypatch.setenv("VIN_POOL_TEST_VARIABLE", "set after the fork server started")
    monkeypatch.chdir(tmp_path)
    with build_process_pool(1) as pool:
        seen = pool.submit(_environment_and_directory, "VIN_POOL_TEST_VARIABLE").result()
    assert seen == ("set after the fork server started", str(tmp_path))
