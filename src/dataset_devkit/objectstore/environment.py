"""Each cloud's standard environment, turned into obstore options for one URL's store.

obstore already reads most of it by itself (``AWS_*``, ``AZURE_STORAGE_*``,
``GOOGLE_SERVICE_ACCOUNT*``). What it leaves out, and what this module adds, is what makes
the *same* command run against a cloud, a self-hosted server and a local emulator:

- Plain HTTP for a loopback endpoint (a local MinIO, Azurite or test server) without a
  separate switch; any other plain-HTTP endpoint needs the cloud's own ``*_ALLOW_HTTP``.
- ``AZURE_STORAGE_CONNECTION_STRING``, the one variable the Azure SDKs, the ``az`` CLI and
  Azurite's documentation all use, which obstore does not read.
- ``STORAGE_EMULATOR_HOST``, the variable every Google Cloud Storage client honours to talk
  to an emulator, which obstore does not read either; it maps to the service-account
  document with ``gcs_base_url`` and ``disable_oauth`` that obstore documents for that case.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

__all__ = ["BACKENDS", "backend_of", "credentials_hint", "store_options"]

#: The backend each URL scheme names.
BACKENDS: Final[Mapping[str, str]] = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "azure": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "file": "local",
    "memory": "memory",
}

_CREDENTIALS: Final[Mapping[str, str]] = {
    "s3": "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile or role",
    "azure": "set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY, "
    "AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_SAS_TOKEN",
    "gcs": "set GOOGLE_APPLICATION_CREDENTIALS or GOOGLE_SERVICE_ACCOUNT to a service account file",
}

#: Azure connection string fields and the obstore options they set.
_CONNECTION_FIELDS: Final[Mapping[str, str]] = {
    "accountname": "account_name",
    "accountkey": "account_key",
    "blobendpoint": "endpoint",
    "sharedaccesssignature": "sas_key",
}
#: The environment variables obstore reads for each of those options: set, they win.
_AZURE_VARIABLES: Final[Mapping[str, tuple[str, ...]]] = {
    "account_name": ("AZURE_STORAGE_ACCOUNT_NAME",),
    "account_key": (
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_ACCESS_KEY",
        "AZURE_STORAGE_MASTER_KEY",
    ),
    "endpoint": ("AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT"),
    "sas_key": ("AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_SAS_TOKEN"),
    "use_emulator": ("AZURE_STORAGE_USE_EMULATOR",),
}


def backend_of(url: str) -> str:
    """``s3``, ``azure``, ``gcs``, ``local`` or ``memory``: the store *url* names."""
    return BACKENDS.get(url.partition("://")[0].lower(), "")


def credentials_hint(url: str) -> str:
    """What to set when the store for *url* found no credentials (empty for local)."""
    return _CREDENTIALS.get(backend_of(url), "")


def _env(*names: str) -> str:
    return next((os.environ[n] for n in names if os.environ.get(n)), "")


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def _loopback(endpoint: str) -> bool:
    host = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _plain_http_allowed(endpoint: str, allow_variable: str) -> bool:
    """Plain HTTP to a loopback endpoint, or anywhere the user said so."""
    if _truthy(os.environ.get(allow_variable, "")):
        return True
    return endpoint.startswith("http://") and _loopback(endpoint)


def _s3_options() -> dict[str, object]:
    endpoint = _env("AWS_ENDPOINT_URL", "AWS_ENDPOINT")
    options: dict[str, object] = {}
    if endpoint.startswith("http://") and _plain_http_allowed(endpoint, "AWS_ALLOW_HTTP"):
        options["client_options"] = {"allow_http": True}
    # Skip hashing each request body into its signature where nobody can alter it in
    # transit: over TLS (what AWS SDKs do for S3) or on the loopback interface. Plain HTTP
    # to another host keeps the signed payload. The content is SHA-256-checked end to end
    # anyway (``verify``), so the signature's hash would only read every byte once more.
    options["unsigned_payload"] = not endpoint.startswith("http://") or _loopback(endpoint)
    return options


def parse_connection_string(text: str) -> dict[str, object]:
    """The obstore options an Azure storage connection string names.

    ``UseDevelopmentStorage=true`` is Azurite on its default port; otherwise the account,
    key, SAS and blob endpoint fields are taken, and the rest (protocol, suffix, other
    services' endpoints) are left to obstore's defaults.
    """
    fields: dict[str, str] = {}
    for part in text.split(";"):
        name, sep, value = part.partition("=")
        if sep:
            fields[name.strip().lower()] = value.strip()
    if _truthy(fields.get("usedevelopmentstorage", "")):
        return {"use_emulator": True}
    return {option: fields[name] for name, option in _CONNECTION_FIELDS.items() if fields.get(name)}


def _azure_options() -> dict[str, object]:
    config: dict[str, object] = {}
    connection = os.environ.get("AZURE_STORAGE_CONNECTION_STRING", "")
    if connection:
        for option, value in parse_connection_string(connection).items():
            if not _env(*_AZURE_VARIABLES[option]):  # an explicit variable wins
                config[option] = value
    options: dict[str, object] = {"config": config} if config else {}
    endpoint = str(config.get("endpoint") or _env(*_AZURE_VARIABLES["endpoint"]))
    if endpoint.startswith("http://") and _plain_http_allowed(endpoint, "AZURE_ALLOW_HTTP"):
        options["client_options"] = {"allow_http": True}
    return options


def emulator_service_account(host: str) -> str:
    """The service-account document that points obstore's GCS client at an emulator.

    ``STORAGE_EMULATOR_HOST`` is ``host:port`` or a URL; emulators speak plain HTTP and take
    no OAuth token.
    """
    base = host.rstrip("/") if "://" in host else f"http://{host.rstrip('/')}"
    # The key fields must be present (obstore's documented example omits private_key_id,
    # which its parser requires); with disable_oauth they are never used.
    return json.dumps(
        {
            "gcs_base_url": base,
            "disable_oauth": True,
            "client_email": "",
            "private_key": "",
            "private_key_id": "",
        }
    )


def _gcs_options() -> dict[str, object]:
    host = os.environ.get("STORAGE_EMULATOR_HOST", "").strip()
    if not host:
        return {}
    base = host if "://" in host else f"http://{host}"
    options: dict[str, object] = {"config": {"service_account_key": emulator_service_account(host)}}
    if base.startswith("http://") and _plain_http_allowed(base, "GOOGLE_ALLOW_HTTP"):
        options["client_options"] = {"allow_http": True}
    return options


def store_options(url: str) -> dict[str, object]:
    """Keyword arguments for ``obstore.store.from_url(url, ...)`` from the environment."""
    backend = backend_of(url)
    if backend == "s3":
        return _s3_options()
    if backend == "azure":
        return _azure_options()
    if backend == "gcs":
        return _gcs_options()
    return {}
