"""Turn a user's URL into an object store client plus the prefix the dataset lives under.

Endpoint and credentials come from each cloud's standard environment (see
:mod:`dataset_devkit.objectstore.environment`), so the same command works against the cloud,
a self-hosted server or a local emulator: ``AWS_*`` for ``s3://``, ``AZURE_STORAGE_*`` for
``az://``, ``GOOGLE_*`` and ``STORAGE_EMULATOR_HOST`` for ``gs://``. Plain HTTP is allowed
only for a loopback endpoint (a local MinIO, Azurite or test server) or when the user sets
the cloud's ``*_ALLOW_HTTP=true``; anything else must use TLS.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from dataset_devkit.errors import ConfigError, MissingDependencyError, MissingPathError
from dataset_devkit.objectstore.environment import BACKENDS, store_options

if TYPE_CHECKING:
    from obstore.store import ObjectStore, RetryConfig

__all__ = [
    "SCHEMES",
    "ObjectLocation",
    "forked_after_use",
    "is_url",
    "looks_like_mangled_url",
    "open_location",
    "refuse_url",
]

_forked = False
_watching = False


def _mark_forked() -> None:
    global _forked
    _forked = True


def _watch_forks() -> None:
    """From now on, a forked child knows obstore was in use in its parent."""
    global _watching
    if not _watching and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_mark_forked)
        _watching = True


def forked_after_use() -> bool:
    """Whether this process was forked from one that had obstore loaded.

    obstore's runtime threads do not survive ``fork``: a forked child that touches any
    client hangs, so such a process must leave object store requests to a fresh one.
    """
    return _forked


if "obstore" in sys.modules:  # loaded by the user before us: its runtime may be running
    _watch_forks()

#: URL schemes that name an object store rather than a local path.
SCHEMES = tuple(BACKENDS)


@dataclass(frozen=True)
class ObjectLocation:
    """A dataset's place in an object store.

    Attributes
    ----------
    url
        The URL as the user wrote it, without a trailing slash (for messages).
    store
        The obstore client, already scoped to the dataset's prefix: keys are relative
        paths inside the dataset (``content_manifest.json``, ``shards/0.npy``).
    """

    url: str
    #: Not in the repr: obstore's own repr of a store configured from the environment can
    #: panic (an ``AzureStore`` whose account name came from a variable).
    store: ObjectStore = field(repr=False)

    def describe(self, key: str) -> str:
        """The full URL of one object, for messages that name it."""
        return f"{self.url}/{key}"


def is_url(text: object) -> bool:
    """Whether ``text`` names an object store (``s3://...``) rather than a local path."""
    if not isinstance(text, str):
        return False
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def looks_like_mangled_url(value: object) -> bool:
    """Whether *value* is a URL that went through ``Path`` (``s3:/bucket``: one slash eaten)."""
    text = os.fspath(value) if isinstance(value, str | os.PathLike) else ""
    scheme, sep, rest = str(text).partition(":/")
    return bool(sep) and scheme.lower() in SCHEMES and bool(rest) and not rest.startswith("/")


def refuse_url(value: object, what: str) -> None:
    """One clear line for a reader that takes local directories only, given a URL.

    Without it, ``s3://bucket/x`` reaches ``Path`` as ``s3:/bucket/x`` and the user reads
    "no such directory" about a path they never wrote.
    """
    if is_url(value) or looks_like_mangled_url(value):
        raise ConfigError(
            f"{value}: {what} reads a local directory, not an object store URL; download the "
            "dataset first (it verifies there with its content_manifest.json)",
            key="root",
        )


def _local_folder(url: str) -> Path:
    """The folder a ``file://`` URL names."""
    from urllib.request import url2pathname  # imports http.client, email, ssl: only here

    return Path(url2pathname(urlsplit(url).path))


def open_location(
    url: str, *, retry: RetryConfig | None = None, create: bool = False
) -> ObjectLocation:
    """Open the object store that ``url`` names, scoped to its prefix.

    *retry* overrides obstore's request retries (5xx, dropped connections, timeouts:
    10 retries with exponential backoff from 100 ms by default); ``file://`` and
    ``memory://`` make no requests and ignore it. *create* makes a ``file://`` prefix's
    directory when it does not exist yet (a publish's destination).

    Raises
    ------
    ConfigError
        ``url`` is not a URL of a supported scheme, or names no bucket.
    MissingPathError
        A ``file://`` URL names no folder (and *create* is false).
    MissingDependencyError
        The ``[s3]`` extra (obstore) is not installed.
    """
    if not is_url(url):
        raise ConfigError(
            f"{url}: expected an object store URL ({', '.join(s + '://' for s in SCHEMES)})"
        )
    _watch_forks()
    try:
        from obstore.store import from_url
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise MissingDependencyError("obstore", extra="s3", purpose=f"opening {url}") from exc
    scheme, _, rest = url.partition("://")
    rest = rest.rstrip("/")
    cleaned = f"{scheme}://{rest}"
    if scheme.lower() not in ("file", "memory") and not rest.split("/", 1)[0]:
        raise ConfigError(f"{url}: expected {scheme}://BUCKET/PREFIX, found no bucket")
    remote = scheme.lower() not in ("file", "memory")
    # obstore knows Google Cloud Storage as gs:// only; gcs:// is fsspec's other spelling.
    target = f"gs://{rest}" if scheme.lower() == "gcs" else cleaned
    options = store_options(target)
    if remote and retry:
        options["retry_config"] = retry
    if scheme.lower() == "file" and create:
        options["mkdir"] = True
    elif scheme.lower() == "file" and not _local_folder(cleaned).is_dir():
        raise MissingPathError("no such directory", path=cleaned)
    try:
        store = from_url(target, **options)  # type: ignore[call-overload]
    except Exception as exc:  # obstore raises its own config errors; name the URL once
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{url}: cannot open object store: {reason}") from exc
    return ObjectLocation(url=cleaned, store=store)
