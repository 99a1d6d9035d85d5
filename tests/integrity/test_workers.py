"""Pool workers die with the process that started them (``integrity.workers``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import dataset_devkit
from dataset_devkit.integrity.workers import StartMethod, worker_pool

ENV = {**os.environ, "PYTHONPATH": str(Path(dataset_devkit.__file__).resolve().parents[1])}


def test_a_worker_whose_builder_is_already_gone_exits_at_once() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from dataset_devkit.integrity.workers import die_with; "
            f"die_with({gone.pid}); print('still running')",
        ],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (1, "")


def _environment(name: str) -> str | None:
    return os.environ.get(name)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_workers_run_tasks_with_the_environment_of_now(
    method: StartMethod, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKER_POOL_TEST_VARIABLE", "now")
    with worker_pool(1, method=method) as pool:
        assert pool.submit(_environment, "WORKER_POOL_TEST_VARIABLE").result() == "now"
