"""A real Azure Blob Storage emulator on 127.0.0.1 for tests: Microsoft's Azurite.

Azurite comes from the npm registry (``bash scripts/quickstart.sh emulators`` installs the
pinned version into ``.cache/emulators``; CI runs that first). It listens on a free loopback
port only, keeps its blobs in memory, and runs with telemetry off: by default it reports to
a Microsoft endpoint, and a test must never talk to any address but loopback. Clients find
it through the standard Azure environment (account name, key and blob endpoint), exactly as
they would find a storage account, so the code under test has no test-only switch.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

#: Azurite's well-known development account and key (public, documented by Microsoft).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
#: Where ``scripts/quickstart.sh emulators`` installs the emulators (overridable).
EMULATORS = Path(
    os.environ.get("DEVKIT_EMULATORS", Path(__file__).resolve().parents[1] / ".cache/emulators")
)
_LISTENING = re.compile(r"listens on (http://127\.0\.0\.1:\d+)")
_container_numbers = itertools.count()


def azurite_command() -> str | None:
    """The ``azurite-blob`` executable: the project's pinned install, else one on PATH."""
    local = EMULATORS / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    return shutil.which("azurite-blob")


def _shared_key(method: str, path: str, query: str, headers: dict[str, str]) -> str:
    """The ``Authorization`` header of Azure's Shared Key scheme, for one bodiless request.

    Only the test fixture needs this (to create a container, which obstore cannot); it saves
    a dependency on the Azure SDK for one call.
    """
    canonical_headers = "".join(
        f"{name}:{value}\n"
        for name, value in sorted((k.lower(), v) for k, v in headers.items())
        if name.startswith("x-ms-")
    )
    resource = f"/{ACCOUNT}{path}" + "".join(
        f"\n{name}:{value}" for name, _, value in (p.partition("=") for p in query.split("&"))
    )
    text = f"{method}\n" + "\n" * 11 + canonical_headers + resource
    key = base64.b64decode(ACCOUNT_KEY)
    digest = hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()
    return f"SharedKey {ACCOUNT}:{base64.b64encode(digest).decode('ascii')}"


@dataclass(frozen=True)
class AzuriteServer:
    """A running Azurite blob service: its endpoint and the environment a client needs."""

    endpoint: str

    @property
    def blob_endpoint(self) -> str:
        """The account's blob endpoint (Azurite puts the account in the path)."""
        return f"{self.endpoint}/{ACCOUNT}"

    @property
    def environment(self) -> dict[str, str]:
        """The Azure variables that point any client (obstore, adlfs, the az CLI) here."""
        return {
            "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT,
            "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
            "AZURE_STORAGE_ENDPOINT": self.blob_endpoint,
        }

    def create_container(self, prefix: str = "container") -> str:
        """Create a fresh, empty container with a unique name and return that name."""
        name = f"{prefix}-{os.getpid()}-{next(_container_numbers)}"
        headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": "2021-08-06"}
        query = "restype=container"
        headers["Authorization"] = _shared_key("PUT", f"/{ACCOUNT}/{name}", query, headers)
        request = urllib.request.Request(
            f"{self.blob_endpoint}/{name}?{query}", method="PUT", headers=headers
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 201, answer.status
        return name


@contextmanager
def running_azurite(command: str) -> Iterator[AzuriteServer]:
    """Start Azurite's blob service on a free loopback port, in memory; stop it on exit."""
    with tempfile.TemporaryDirectory(prefix="azurite-") as workdir:
        log = Path(workdir) / "azurite.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    command,
                    "--blobHost",
                    "127.0.0.1",
                    "--blobPort",
                    "0",
                    "--inMemoryPersistence",
                    "--disableTelemetry",
                    "--skipApiVersionCheck",
                    "--silent",
                ],
                cwd=workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            deadline = time.monotonic() + 60
            found = None
            while found is None:
                found = _LISTENING.search(log.read_text(errors="replace"))
                if found is None:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"Azurite did not start: {log.read_text()[-2000:]}")
                    time.sleep(0.1)
            yield AzuriteServer(endpoint=found.group(1))
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
