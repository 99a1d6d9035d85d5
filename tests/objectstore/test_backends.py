"""Every backend is a real store on 127.0.0.1, reached through its cloud's own environment."""

from __future__ import annotations

import os

import obstore
import pytest

from dataset_devkit.errors import PublicationError
from dataset_devkit.integrity.bucket import RetryPolicy
from dataset_devkit.integrity.bucket.commit import commit
from dataset_devkit.integrity.manifest import ContentManifest, ManifestEntry
from dataset_devkit.objectstore import open_location
from tests.azurite import ACCOUNT, ACCOUNT_KEY, AzuriteServer


def test_azurite_listens_on_loopback_and_keys_are_scoped_to_the_prefix(az_container: str) -> None:
    assert os.environ["AZURE_STORAGE_ENDPOINT"].startswith("http://127.0.0.1:")
    location = open_location(f"az://{az_container}/datasets/one/")
    assert location.url == f"az://{az_container}/datasets/one"
    obstore.put(location.store, "a/b.txt", b"hello")
    assert bytes(obstore.get(location.store, "a/b.txt", options={"range": (1, 4)}).bytes()) == (
        b"ell"
    )
    root = open_location(f"az://{az_container}")
    keys = [meta["path"] for batch in obstore.list(root.store) for meta in batch]
    assert keys == ["datasets/one/a/b.txt"]
    assert "store" not in repr(location)  # obstore's repr of this store can panic


@pytest.mark.parametrize("spelling", ["full", "endpoint only", "development storage"])
def test_a_connection_string_alone_reaches_azurite(
    azurite_server: AzuriteServer, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    container = azurite_server.create_container()
    for name in azurite_server.environment:
        monkeypatch.delenv(name, raising=False)
    if spelling == "full":
        text = (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={azurite_server.blob_endpoint};"
        )
    elif spelling == "development storage":  # Azurite's own shorthand, on our port
        monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", azurite_server.endpoint)
        text = "UseDevelopmentStorage=true"
    else:  # an explicit variable wins over the connection string's field
        monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT)
        monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", ACCOUNT_KEY)
        text = f"AccountName=someone-else;BlobEndpoint={azurite_server.blob_endpoint}"
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", text)
    store = open_location(f"az://{container}/x").store
    obstore.put(store, "k", b"v")
    assert bytes(obstore.get(store, "k").bytes()) == b"v"


def _manifest(text: str) -> ContentManifest:
    import hashlib

    data = text.encode()
    entry = ManifestEntry(path="a.txt", size=len(data), sha256=hashlib.sha256(data).hexdigest())
    return ContentManifest.from_entries([entry])


def test_every_backend_refuses_to_overwrite_with_a_conditional_put(bucket_url: str) -> None:
    # The manifest is the commit marker: the store itself must refuse a second one.
    location = open_location(f"{bucket_url}/p", create=True)
    obstore.put(location.store, "m.json", b"1", mode="create")
    with pytest.raises(Exception) as refused:
        obstore.put(location.store, "m.json", b"2", mode="create")
    assert (
        isinstance(refused.value, FileExistsError)
        or "AlreadyExists" in type(refused.value).__name__
    )
    assert bytes(obstore.get(location.store, "m.json").bytes()) == b"1"


def test_a_store_without_conditional_puts_is_refused_not_overwritten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from obstore.exceptions import NotSupportedError

    def unsupported(*args: object, **kwargs: object) -> None:
        raise NotSupportedError("put mode create is not supported")

    location = open_location("memory:///any")
    monkeypatch.setattr(obstore, "put", unsupported)
    with pytest.raises(PublicationError) as refused:
        commit(location, "content_manifest.json", _manifest("a\n"), RetryPolicy(attempts=1))
    assert "only if absent" in str(refused.value) and "\n" not in str(refused.value)
