"""Fixtures of the object storage tests: a tree to publish, a bucket behind a fault proxy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dataset_devkit.integrity import write_manifest
from dataset_devkit.integrity.remote import RetryPolicy
from tests.integrity.helpers import SAMPLE, make_tree
from tests.s3_faults import FaultProxy, fault_proxy
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
    """A published-looking tree: small files, an empty one, a three-part large file."""
    root = make_tree(tmp_path / "tree", {**SAMPLE, LARGE: os.urandom(2 * PART + 12345)})
    write_manifest(root)
    return root


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
