"""Retries with exponential backoff around whole object operations.

obstore already retries each HTTP request (5xx answers, refused or dropped connections)
with backoff. What it cannot retry is a response body cut off half-way: the request
succeeded, the bytes did not arrive. Every upload and every ranged read is therefore wrapped
once more here, as a whole, so a flaky server costs time, never a wrong or partial result;
when the attempts run out the error names the object.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

from dataset_devkit.errors import DevkitError
from dataset_devkit.integrity.bucket.failures import is_transient, store_error

if TYPE_CHECKING:
    from obstore.store import RetryConfig

__all__ = ["RetryPolicy", "with_retries"]

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try before giving up on one object.

    Attributes
    ----------
    attempts
        Tries of a whole operation (an upload, a ranged read) before its error is raised.
    request_retries
        obstore's retries of each HTTP request inside one try.
    initial_backoff, max_backoff
        Seconds to wait before the second try, and the cap of the doubling wait (with
        jitter, so many workers do not retry in lockstep).
    timeout
        Seconds obstore keeps retrying one request before it gives up.

    The defaults give up on a dead object after about half a minute (obstore's own
    default, 10 retries within 3 minutes per request, left a user waiting for minutes per
    object on a server that is down, or for credentials that are not there).
    """

    attempts: int = 4
    request_retries: int = 5
    initial_backoff: float = 0.2
    max_backoff: float = 5.0
    timeout: float = 60.0

    def obstore_config(self) -> RetryConfig:
        """The same policy as obstore's per-request retry configuration."""
        return {
            "max_retries": self.request_retries,
            "retry_timeout": timedelta(seconds=self.timeout),
            "backoff": {
                "init_backoff": timedelta(seconds=self.initial_backoff),
                "max_backoff": timedelta(seconds=self.max_backoff),
                "base": 2,
            },
        }

    def delay(self, attempt: int) -> float:
        """Seconds to sleep after failed try number *attempt* (1-based), with full jitter."""
        ceiling = min(self.max_backoff, self.initial_backoff * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not a secret


def with_retries(policy: RetryPolicy, url: str, action: str, operation: Callable[[], T]) -> T:
    """Run *operation*, retrying transient failures; raise a one-line typed error naming *url*.

    *action* is what the operation does (``upload``, ``read bytes 0-8388607``), for the
    message.
    """
    for attempt in range(1, policy.attempts + 1):
        try:
            return operation()
        except DevkitError:
            raise
        except Exception as exc:
            if attempt == policy.attempts or not is_transient(exc):
                raise store_error(exc, url, action, tries=attempt) from exc
            time.sleep(policy.delay(attempt))
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
