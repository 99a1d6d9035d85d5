"""Azure Blob Storage's own answers (a missing container, a wrong key, no credentials) are
one line each, like S3's; tested against Azurite on 127.0.0.1."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from dataset_devkit.errors import MissingPathError, ObjectStoreError
from dataset_devkit.integrity.bucket import RetryPolicy, publish_remote, verify_remote
from tests.integrity.bucket.conftest import FAST, run_cli_batch


def test_a_missing_container_is_one_line(tree: Path, az_container: str) -> None:
    url = f"az://{az_container}-absent/p"
    for call in (
        lambda: publish_remote(tree, url, retry=FAST),
        lambda: verify_remote(url, retry=FAST),
    ):
        with pytest.raises(MissingPathError) as missing:
            call()
        assert str(missing.value) == f"{url}: the container '{az_container}-absent' does not exist"


def test_a_wrong_key_is_access_denied_without_retrying(
    az_container: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", base64.b64encode(b"not the key").decode())
    with pytest.raises(ObjectStoreError) as denied:
        verify_remote(f"az://{az_container}/p", retry=FAST)
    assert "access denied" in str(denied.value) and "after" not in str(denied.value)
    assert "\n" not in str(denied.value)


def test_missing_credentials_name_the_azure_variables(
    az_container: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY")
    # With no key the client asks the managed identity endpoint: point it at a closed
    # loopback port, never at a real address.
    monkeypatch.setenv("AZURE_MSI_ENDPOINT", "http://127.0.0.1:9")
    quick = RetryPolicy(attempts=2, request_retries=1, initial_backoff=0.01, timeout=2)
    with pytest.raises(ObjectStoreError) as failed:
        verify_remote(f"az://{az_container}/p", retry=quick)
    assert "no usable credentials (set AZURE_STORAGE_ACCOUNT_NAME" in str(failed.value)
    assert "\n" not in str(failed.value)


def test_cli_errors_are_one_line_without_a_traceback(
    tree: Path, az_container: str, package_env: dict[str, str]
) -> None:
    env = {**package_env, **os.environ}
    cases = [
        ("verify", f"az://{az_container}-absent/p"),
        ("publish", str(tree), "--out", f"az://{az_container}-absent/p"),
        ("verify", "az:///nocontainer"),
        ("verify", "file:///no/such/folder"),
    ]
    for args, (code, _, err) in zip(cases, run_cli_batch(env, *cases), strict=True):
        assert code == 1, (args, err)
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in err, (args, err)
