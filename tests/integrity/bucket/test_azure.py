"""Azure Blob Storage's own answers (a missing container, a wrong key, no credentials) are
one line each, like S3's, and its faults are retried or resumed; tested against Azurite
on 127.0.0.1, behind the fault-injecting proxy where a fault is needed."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import obstore
import pytest

from dataset_devkit.errors import MissingPathError, ObjectStoreError
from dataset_devkit.integrity import read_manifest
from dataset_devkit.integrity.bucket import RetryPolicy, publish_remote, verify_remote
from dataset_devkit.objectstore import open_location
from tests.azurite import ACCOUNT, AzuriteServer
from tests.integrity.bucket.conftest import (
    FAST,
    LARGE,
    PART,
    kill_publish_while_held,
    run_cli_batch,
)
from tests.s3_faults import Fault, FaultProxy, fault_proxy


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


@pytest.fixture
def az_proxied(
    azurite_server: AzuriteServer, az_container: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, FaultProxy]]:
    """A container reached through the fault proxy (Shared Key signs the path, not the
    host, so the proxy needs no keys)."""
    with fault_proxy(azurite_server.endpoint) as proxy:
        monkeypatch.setenv("AZURE_STORAGE_ENDPOINT", f"{proxy.endpoint}/{ACCOUNT}")
        yield az_container, proxy


def test_a_flaky_azure_is_retried_to_a_correct_result(
    large_tree: Path, az_proxied: tuple[str, FaultProxy]
) -> None:
    container, proxy = az_proxied
    url = f"az://{container}/p"
    proxy.faults = [
        Fault("PUT", "/p/a.txt", "500", times=2),
        Fault("PUT", "comp=block&", "drop", times=1),
        Fault("PUT", "/p/content_manifest.json", "500", times=1),
    ]
    result = publish_remote(large_tree, url, part_size=PART, retry=FAST)
    assert not result.already_published
    assert [f.fired for f in proxy.faults] == [2, 1, 1]
    proxy.faults = [
        Fault("GET", "/p/b/c.bin", "drop", times=2),
        Fault("GET", f"/p/{LARGE}", "drop", times=2),
        Fault("GET", "comp=list", "500", times=1),
    ]
    report = verify_remote(url, retry=FAST, range_size=PART)
    assert report.ok, report.issues
    assert [f.fired for f in proxy.faults] == [2, 2, 1]


def test_a_publish_killed_mid_upload_to_azure_resumes(
    large_tree: Path, az_proxied: tuple[str, FaultProxy], package_env: dict[str, str]
) -> None:
    container, proxy = az_proxied
    url = f"az://{container}/killed"
    env = {**package_env, **os.environ}
    # 5 MiB parts: the large file goes in blocks (with the default 32 MiB parts a file up to
    # 64 MiB goes in one request). A block never gets an answer while the publisher is killed.
    command = ["publish", str(large_tree), "--out", url, "--part-size", "5MiB"]
    kill_publish_while_held(command, env, proxy, Fault("PUT", "comp=block&", "hold", times=-1))
    keys = {m["path"] for b in obstore.list(open_location(url).store) for m in b}
    assert "content_manifest.json" not in keys and "content_manifest.json.publishing" in keys
    assert LARGE not in keys  # uncommitted blocks are no blob
    assert not verify_remote(url, retry=FAST).ok
    [(code, out, err)] = run_cli_batch(env, command)
    assert code == 0, err
    assert out.startswith(f"published {url}: ")
    root = read_manifest(large_tree).root_sha256
    assert verify_remote(url, retry=FAST, expect_root=root).ok
