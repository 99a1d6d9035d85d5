"""Hash many remote objects at once: whole-object streams or parallel ranged reads, bounded.

Objects up to ``whole_limit`` (most of a dataset's) are each read by one GET, streamed
through the hasher piece by piece, several objects at once: one request per object, as a
download does. A ranged GET is not free on every server (moto reads the whole object to
answer each range: 8 MiB ranges of a 64 MiB object cost it seven times the CPU of one
GET, measured), and parallelism across objects already keeps every worker busy. A stream
cut off half-way resumes from the byte it reached (a ranged GET with the same entity tag).

Larger objects are split into ranges read in parallel, so one huge object still keeps
every worker busy. SHA-256 is sequential, so one object's ranges may arrive in any order
but are fed to its hasher in order. Ranges are submitted object by object, range by
range, and each holds a slot of a fixed window until it has been hashed (a stream holds
one slot: one piece at a time): memory is at most ``window x range_size`` whatever the
object sizes, and the earliest unhashed range of every object is always already
submitted, so the window can never fill with ranges that wait for one that is not.

Each read carries the object's entity tag from the listing (``If-Match``): an object
replaced while it is read fails the precondition and is reported as raced, never hashed
as a mixture of two versions.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

from dataset_devkit.errors import DevkitError
from dataset_devkit.integrity.bucket.objects import RemoteObject
from dataset_devkit.integrity.bucket.retry import RetryPolicy, with_retries
from dataset_devkit.integrity.issues import Issue, IssueKind
from dataset_devkit.objectstore import ObjectLocation

__all__ = ["DEFAULT_RANGE_SIZE", "DEFAULT_WHOLE_LIMIT", "hash_objects"]

#: Bytes per ranged read (and per streamed piece): large enough that request overhead
#: vanishes, small enough that the window in flight (workers + 4 ranges) stays around a
#: hundred megabytes.
DEFAULT_RANGE_SIZE: Final = 8 << 20
#: Objects up to this size are read by one streamed GET each; larger ones in ranges.
DEFAULT_WHOLE_LIMIT: Final = 256 << 20


class _Raced(DevkitError):
    """The object changed or vanished between the listing and the read."""


@dataclass
class _Digest:
    """One object's hasher and the ranges that arrived ahead of their turn."""

    key: str
    size: int
    count: int
    hasher: hashlib._Hash = field(default_factory=hashlib.sha256)
    next_index: int = 0
    raced: bool = False
    parked: dict[int, bytes | memoryview] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _get(location: ObjectLocation, key: str, info: RemoteObject, start: int, end: int) -> Any:
    """GET bytes *start* to *end* of *key* (the whole object when that is all of it), only
    if it is still the listed version."""
    import obstore

    options: dict[str, object] = {}
    if start or end != info.size:
        options["range"] = (start, end)
    if info.e_tag:
        options["if_match"] = info.e_tag
    try:
        return obstore.get(location.store, key, options=options)  # type: ignore[arg-type]
    except FileNotFoundError:
        raise _Raced("vanished while read") from None
    except Exception as exc:
        if type(exc).__name__ == "PreconditionError":
            raise _Raced("replaced while read") from None
        raise


def _read(
    location: ObjectLocation, key: str, info: RemoteObject, start: int, end: int
) -> bytes | memoryview:
    view = memoryview(_get(location, key, info, start, end).bytes())
    if len(view) != end - start:  # a truncated body is a transient fault: retry it
        raise ConnectionError(f"got {len(view)} of {end - start} bytes")
    return view


def hash_objects(
    location: ObjectLocation,
    objects: Iterable[tuple[str, RemoteObject]],
    *,
    workers: int,
    policy: RetryPolicy,
    range_size: int = DEFAULT_RANGE_SIZE,
    whole_limit: int = DEFAULT_WHOLE_LIMIT,
    window: int | None = None,
    progress: Callable[[int], None] | None = None,
    finished: Callable[[], None] | None = None,
) -> dict[str, str | Issue]:
    """SHA-256 of every object, or an :class:`Issue` when it changed or vanished meanwhile.

    Objects up to *whole_limit* bytes are streamed whole (in pieces of about *range_size*),
    larger ones read in ranges of *range_size*. *progress* is called with each piece's or
    range's byte count once hashed, *finished* once per object whose digest is complete.

    Raises
    ------
    ObjectStoreError, MissingPathError
        An object could not be read after the retries (the message names it).
    """
    slots = threading.BoundedSemaphore(window or workers + 4)
    results: dict[str, str | Issue] = {}
    failures: list[BaseException] = []
    stop = threading.Event()

    def consume(state: _Digest, index: int, data: bytes | memoryview) -> None:
        with state.lock:
            if state.raced:  # its verdict is in; the bytes are not needed
                slots.release()
                return
            state.parked[index] = data
            while state.next_index in state.parked:
                chunk = state.parked.pop(state.next_index)
                state.hasher.update(chunk)
                state.next_index += 1
                slots.release()
                if progress is not None:
                    progress(len(chunk))
            if state.next_index == state.count and state.key not in results:
                results[state.key] = state.hasher.hexdigest()
                if finished is not None:
                    finished()

    def fetch(state: _Digest, info: RemoteObject, index: int) -> None:
        start = index * range_size
        end = min(start + range_size, state.size)
        url = location.describe(state.key)
        try:
            if state.raced or stop.is_set():
                slots.release()
                return
            data = with_retries(
                policy,
                url,
                f"read bytes {start}-{end - 1}",
                lambda: _read(location, state.key, info, start, end),
            )
        except _Raced as exc:
            with state.lock:
                if not state.raced:
                    state.raced = True
                    results[state.key] = Issue(state.key, IssueKind.RACED, str(exc))
                for _ in state.parked:
                    slots.release()
                state.parked.clear()
            slots.release()
            return
        except BaseException as exc:
            failures.append(exc)
            stop.set()
            slots.release()
            return
        consume(state, index, data)

    def stream(key: str, info: RemoteObject) -> None:
        """Hash one object from one GET, resuming where a cut-off stream stopped."""
        hasher = hashlib.sha256()
        done = 0

        def attempt() -> None:
            nonlocal done
            response = _get(location, key, info, done, info.size)
            for piece in response.stream(min_chunk_size=range_size):
                if done + len(piece) > info.size:
                    raise _Raced("longer than listed while read")
                hasher.update(piece)
                done += len(piece)
                if progress is not None:
                    progress(len(piece))
            if done != info.size:  # a body cut short: resume from here on the next try
                raise ConnectionError(f"got {done} of {info.size} bytes")

        try:
            if stop.is_set():
                return
            with_retries(policy, location.describe(key), f"read bytes 0-{info.size - 1}", attempt)
        except _Raced as exc:
            results[key] = Issue(key, IssueKind.RACED, str(exc))
            return
        except BaseException as exc:
            failures.append(exc)
            stop.set()
            return
        finally:
            slots.release()
        results[key] = hasher.hexdigest()
        if finished is not None:
            finished()

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="remote-hash") as pool:
        pending: list[Future[None]] = []
        for key, info in objects:
            if stop.is_set():
                break
            if info.size == 0:
                results[key] = hashlib.sha256().hexdigest()
                if finished is not None:
                    finished()
                continue
            if info.size <= whole_limit:
                slots.acquire()  # one piece of this object in memory at a time
                if stop.is_set():
                    slots.release()
                    break
                pending.append(pool.submit(stream, key, info))
                pending = [f for f in pending if not f.done()]
                continue
            count = -(-info.size // range_size)
            state = _Digest(key=key, size=info.size, count=count)
            for index in range(count):
                slots.acquire()
                if stop.is_set():
                    slots.release()
                    break
                pending.append(pool.submit(fetch, state, info, index))
            pending = [f for f in pending if not f.done()]
    if failures:
        raise failures[0]
    return results
