"""Request bodies are signed only where they could be altered in transit."""

from __future__ import annotations

import pytest

from dataset_devkit.objectstore.environment import store_options


@pytest.mark.parametrize(
    ("endpoint", "unsigned"),
    [
        ("", True),  # AWS itself: TLS
        ("https://minio.example.org:9000", True),
        ("http://127.0.0.1:9000", True),
        ("http://localhost:9000", True),
        ("http://10.1.2.3:9000", False),  # plain HTTP across a network (AWS_ALLOW_HTTP)
    ],
)
def test_payload_signing_follows_the_transport(
    endpoint: str, unsigned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    assert store_options("s3://bucket/x")["unsigned_payload"] is unsigned
