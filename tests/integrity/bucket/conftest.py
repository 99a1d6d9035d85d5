"""Fixtures of the object storage tests: a tree to publish, a bucket behind a fault proxy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from dataset_devkit.integrity import write_manifest
from dataset_devkit.integrity.bucket import RetryPolicy
from tests.cli_run import run_many
from tests.integrity.helpers import SAMPLE, make_tree
from tests.s3_faults import Fault, FaultProxy, fault_proxy
from tests.s3_server import S3Server

#: Retries that give up in well under a second, so a dead object fails a test fast.
FAST = RetryPolicy(
    attempts=3, request_retries=2, initial_backoff=0.01, max_backoff=0.05, timeout=10
)
#: S3's smallest multipart part; the large file below takes three parts.
PART = 5 << 20
LARGE = "large/blob.bin"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A tree with its manifest: small files in subdirectories, an empty one."""
    root = make_tree(tmp_path / "tree")
    write_manifest(root)
    return root


@pytest.fixture
def large_tree(tmp_path: Path) -> Path:
    """The same small files and one large file that goes up in three multipart parts."""
    root = make_tree(tmp_path / "large-tree", {**SAMPLE, LARGE: os.urandom(2 * PART + 12345)})
    write_manifest(root)
    return root


def run_cli_batch(env: dict[str, str], *commands: Sequence[str]) -> list[tuple[int, str, str]]:
    """Run several ``dataset-devkit`` command lines in one child process (a process per
    command costs a second or two of imports): ``(exit code, stdout, stderr)`` each."""
    return run_many(env, [list(c) for c in commands])


def kill_publish_while_held(
    command: Sequence[str], env: dict[str, str], proxy: FaultProxy, held: Fault
) -> None:
    """Run the CLI *command* in a child and SIGKILL it (no cleanup code runs) once the proxy
    holds the request *held* matches, so the kill lands mid-upload with the claim and the
    earlier files already stored."""
    proxy.faults = [held]
    child = subprocess.Popen(
        [sys.executable, "-m", "dataset_devkit", *command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while held.fired == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held.fired, "the upload never reached the held request"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    proxy.faults = []


@pytest.fixture
def proxied(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    """The AWS environment pointed at a fault proxy in front of the test server."""
    with fault_proxy(s3_server.endpoint) as proxy:
        for name, value in s3_server.environment.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
        yield proxy


@pytest.fixture
def proxied_bucket(s3_server: S3Server, proxied: FaultProxy) -> str:
    """A fresh bucket reached through the proxy."""
    return s3_server.create_bucket()
