"""Each cloud's standard environment maps to the client options the docs promise.

Google Cloud Storage has no emulator here that speaks the XML API its client writes with
(see docs/object-storage.md), so ``gs://`` is covered by these mapping tests and by the
requests the real client sends to a loopback socket that records them and answers 404.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import obstore
import pytest

from dataset_devkit.objectstore import credentials_hint, open_location
from dataset_devkit.objectstore.environment import (
    emulator_service_account,
    parse_connection_string,
    store_options,
)

_CLOUD_VARIABLES = (
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ENDPOINT",
    "AZURE_ENDPOINT",
    "AZURE_ALLOW_HTTP",
    "STORAGE_EMULATOR_HOST",
    "GOOGLE_ALLOW_HTTP",
    "GOOGLE_SERVICE_ACCOUNT",
    "GOOGLE_SERVICE_ACCOUNT_PATH",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _CLOUD_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_a_connection_string_names_the_account_key_and_endpoint() -> None:
    text = (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;"
        "BlobEndpoint=https://acct.blob.example.net;EndpointSuffix=core.windows.net"
    )
    assert parse_connection_string(text) == {
        "account_name": "acct",
        "account_key": "a2V5",
        "endpoint": "https://acct.blob.example.net",
    }
    assert parse_connection_string("UseDevelopmentStorage=true") == {"use_emulator": True}
    assert parse_connection_string("BlobEndpoint=https://x;SharedAccessSignature=sv=1&sig=2") == {
        "endpoint": "https://x",
        "sas_key": "sv=1&sig=2",
    }


@pytest.mark.parametrize(
    ("endpoint", "allow", "plain_http"),
    [
        ("http://127.0.0.1:10000/devstoreaccount1", "", True),
        ("http://localhost:10000/devstoreaccount1", "", True),
        ("http://10.1.2.3:10000/acct", "", False),
        ("http://10.1.2.3:10000/acct", "true", True),
        ("https://acct.blob.core.windows.net", "", False),
    ],
)
def test_plain_http_to_azure_only_on_loopback_or_when_allowed(
    endpoint: str, allow: str, plain_http: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_STORAGE_ENDPOINT", endpoint)
    if allow:
        monkeypatch.setenv("AZURE_ALLOW_HTTP", allow)
    options = store_options("az://container/prefix")
    assert options.get("client_options") == ({"allow_http": True} if plain_http else None)
    assert "config" not in options  # obstore reads the variables itself


def test_an_explicit_azure_variable_wins_over_the_connection_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "AZURE_STORAGE_CONNECTION_STRING",
        "AccountName=fromstring;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/fromstring",
    )
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "fromvariable")
    options = store_options("az://container/prefix")
    assert options["config"] == {
        "account_key": "a2V5",
        "endpoint": "http://127.0.0.1:1/fromstring",
    }
    assert options["client_options"] == {"allow_http": True}


@pytest.mark.parametrize(
    ("host", "base", "plain_http"),
    [
        ("localhost:4443", "http://localhost:4443", True),
        ("127.0.0.1:9023", "http://127.0.0.1:9023", True),
        ("http://127.0.0.1:9023/", "http://127.0.0.1:9023", True),
        ("https://gcs.example.org", "https://gcs.example.org", False),
    ],
)
def test_storage_emulator_host_points_the_gcs_client_at_the_emulator(
    host: str, base: str, plain_http: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", host)
    options = store_options("gs://bucket/prefix")
    config: dict[str, Any] = options["config"]  # type: ignore[assignment]
    account = json.loads(config["service_account_key"])
    assert account == json.loads(emulator_service_account(host))
    assert (account["gcs_base_url"], account["disable_oauth"]) == (base, True)
    assert options.get("client_options") == ({"allow_http": True} if plain_http else None)
    assert store_options("gcs://bucket/prefix") == options


def test_without_an_emulator_gcs_is_left_to_obstore() -> None:
    assert store_options("gs://bucket/prefix") == {}
    assert store_options("file:///tmp/x") == {}


def test_credentials_hints_name_each_clouds_variables() -> None:
    assert "AWS_ACCESS_KEY_ID" in credentials_hint("s3://b/p")
    assert "AZURE_STORAGE_ACCOUNT_KEY" in credentials_hint("az://c/p")
    assert "GOOGLE_APPLICATION_CREDENTIALS" in credentials_hint("gs://b/p")
    assert credentials_hint("file:///tmp/x") == ""


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, str, dict[str, str]]]

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_HEAD = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, str, dict[str, str]]]]]:
    seen: list[tuple[str, str, dict[str, str]]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("scheme", ["gs", "gcs"])
def test_the_gcs_client_sends_unauthenticated_create_only_requests_to_the_emulator_host(
    scheme: str,
    recorder: tuple[str, list[tuple[str, str, dict[str, str]]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host, seen = recorder
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", host)
    store = open_location(f"{scheme}://bucket/datasets/one", retry={"max_retries": 0}).store
    with pytest.raises(FileNotFoundError):
        obstore.get(store, "content_manifest.json")
    with pytest.raises(Exception):  # noqa: B017 - the socket answers 404 to everything
        obstore.put(store, "content_manifest.json", b"{}", mode="create")
    (get_method, get_path, get_headers), (put_method, put_path, put_headers) = seen
    assert (get_method, put_method) == ("GET", "PUT")
    assert get_path == put_path  # the XML API: /BUCKET/KEY, the key percent-encoded
    assert unquote(put_path) == "/bucket/datasets/one/content_manifest.json"
    for headers in (get_headers, put_headers):  # no token: at most an empty "Bearer "
        assert headers.get("authorization", "").removeprefix("Bearer").strip() == ""
    # The manifest's conditional put: GCS's "only if no live generation exists".
    assert put_headers["x-goog-if-generation-match"] == "0"
