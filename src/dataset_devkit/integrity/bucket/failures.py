"""Turn an object store client's exception into one line a user can act on.

obstore's messages are multi-line (the request, the server's XML body, a debug dump); a
user needs to know which object, what went wrong and, for a missing bucket or missing
credentials, what to do. The typed error keeps the original as ``__cause__`` for
``--debug``.
"""

from __future__ import annotations

import re
from typing import Final

from dataset_devkit.errors import DevkitError, MissingPathError, ObjectStoreError
from dataset_devkit.objectstore import credentials_hint

__all__ = ["ObjectStoreError", "is_transient", "short_reason", "store_error"]

_CODE: Final = re.compile(r"<Code>([A-Za-z]+)</Code>")
_MAX_REASON: Final = 240
#: Server error codes that no retry can cure.
_PERMANENT_CODES: Final = frozenset(
    {
        # S3 (and Google Cloud Storage's XML API)
        "NoSuchBucket",
        "AccessDenied",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        # Azure Blob Storage
        "ContainerNotFound",
        "AuthenticationFailed",
        "AuthorizationFailure",
        "AuthorizationPermissionMismatch",
    }
)
#: Codes that say the bucket (an Azure container) is not there.
_MISSING_BUCKET_CODES: Final = frozenset({"NoSuchBucket", "ContainerNotFound"})


def short_reason(exc: BaseException) -> str:
    """The first line of *exc*'s message, with the server's error code when it sent one."""
    text = str(exc) or type(exc).__name__
    code = _CODE.search(text)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    first = first.split(": <?xml", 1)[0].rstrip(": ")
    if len(first) > _MAX_REASON:
        first = first[: _MAX_REASON - 3] + "..."
    return f"{first} ({code.group(1)})" if code and code.group(1) not in first else first


def _is_credentials(text: str) -> bool:
    """Whether the client failed to find credentials: with none in the environment it asks
    the instance metadata service (AWS ``/latest/api/token``, Azure ``/metadata/identity``,
    Google ``computeMetadata``), which is absent off a cloud VM."""
    lowered = text.lower()
    return any(
        mark in lowered
        for mark in (
            "credential",
            "/latest/api/token",
            "/latest/meta-data",
            "/metadata/identity",
            "token request",
            "computemetadata",
        )
    )


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the whole operation may help (a 5xx, a dropped connection).

    A missing object, an existing one, a failed precondition, a denied permission, a
    missing bucket or missing credentials are answers, not accidents: retrying them only
    delays the message.
    """
    if isinstance(exc, DevkitError):
        return False
    code = _CODE.search(str(exc))
    if code and code.group(1) == "NoSuchUpload":
        # A multipart upload aborted under us: by the stale-upload sweep of another run
        # of the same publish (see stale_uploads.py). Uploading the file again succeeds.
        return True
    if isinstance(exc, FileNotFoundError | FileExistsError | PermissionError):
        return False
    name = type(exc).__name__
    if name in {
        "AlreadyExistsError",
        "PreconditionError",
        "NotModifiedError",
        "PermissionDeniedError",
        "UnauthenticatedError",
        "InvalidPathError",
        "NotSupportedError",
        "UnknownConfigurationKeyError",
    }:
        return False
    text = str(exc)
    if code and code.group(1) in _PERMANENT_CODES:
        return False
    return not _is_credentials(text)


def store_error(exc: BaseException, url: str, action: str, *, tries: int = 1) -> DevkitError:
    """A typed one-line error for *exc*, raised while doing *action* on *url*.

    *tries* is how many times the operation was attempted, said in the message when > 1.
    """
    if isinstance(exc, DevkitError):
        return exc
    text = str(exc)
    code = _CODE.search(text)
    if code and code.group(1) in _MISSING_BUCKET_CODES:
        bucket = url.split("://", 1)[-1].split("/", 1)[0]
        what = "container" if code.group(1) == "ContainerNotFound" else "bucket"
        return MissingPathError(f"the {what} {bucket!r} does not exist", path=url)
    name = type(exc).__name__
    if name in ("PermissionDeniedError", "UnauthenticatedError") or (
        code and code.group(1) in _PERMANENT_CODES
    ):
        return ObjectStoreError(f"{action}: access denied ({short_reason(exc)})", url=url)
    if _is_credentials(text):
        hint = credentials_hint(url) or "check the store's credentials"
        return ObjectStoreError(
            f"{action}: no usable credentials ({hint}): " + short_reason(exc), url=url
        )
    after = f" after {tries} tries" if tries > 1 else ""
    return ObjectStoreError(f"{action} failed{after}: {short_reason(exc)}", url=url)
