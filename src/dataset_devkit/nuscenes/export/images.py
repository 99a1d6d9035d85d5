"""Verified JPEG copy from the evidence directory into the staging dataroot.

The source must be a single-link regular file reached without following links, whose inode
and size do not change while it is read, whose bytes hash to what the evidence and its
content manifest record, and whose JPEG header has the recorded dimensions. The exclusive
destination copy is re-read through the descriptor that wrote it, re-hashed and decoded
(strictly, at 1/8 scale: see :func:`dataset_devkit.nuscenes.common.jpeg.decode_jpeg`); the
source is proven by being byte for byte that copy, so each frame is hashed once. That decode
is most of an export's cost — libjpeg's entropy decoding runs at about 120 MB/s per core
against well over 1 GB/s for SHA-256 — so the copies run on a thread pool: reading, hashing,
writing and decoding all release the GIL.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from hashlib import sha256
from pathlib import Path
from types import TracebackType

from dataset_devkit.errors import FormatError, IntegrityError
from dataset_devkit.integrity import (
    ContentManifest,
    ManifestEntry,
    SafeDir,
    read_stable,
    write_new_read_back,
)
from dataset_devkit.nuscenes.common.jpeg import decode_jpeg, jpeg_dimensions
from dataset_devkit.nuscenes.evidence.records import EvImage

__all__ = [
    "MAX_DEFAULT_WORKERS",
    "SMALL_FRAME_BYTES",
    "FrameSource",
    "copy_all",
    "copy_verified",
    "default_copy_threads",
    "small_frames",
]

#: Default copying threads: one per core, up to this many. The export is bound by the JPEG
#: decode, which releases the GIL, so it keeps scaling with cores; past a few dozen the
#: disk, not the CPU, is the limit.
MAX_DEFAULT_WORKERS = 32
#: Mean frame size under which the default is one copying thread. Such a frame is copied in
#: a dozen short steps (system calls, a hash, a small decode), each releasing and retaking
#: the GIL, so threads hand it back and forth instead of running side by side. Measured on
#: two cores: 1 KB and 3 KB frames exported 1.32x and 1.12x faster on one thread than on
#: two, 8 KB frames as fast, 16 KB and 52 KB frames 1.43x and 1.78x faster on two.
SMALL_FRAME_BYTES = 8 << 10
#: Most frames one pool task copies (fewer for small exports, so every thread gets work).
_BATCH = 32


class FrameSource:
    """The pinned evidence root, its manifest and a cache of pinned frame folders."""

    def __init__(self, root: Path, manifest: ContentManifest) -> None:
        self.root = SafeDir.open(root)
        self.entries: dict[str, ManifestEntry] = manifest.by_path()
        self._dirs: dict[str, SafeDir] = {}

    def pin(self, folders: Iterable[str]) -> None:
        """Pin every frame folder up front, so worker threads only read the cache."""
        for rel in sorted(set(folders)):
            if rel not in self._dirs:
                self._dirs[rel] = self.root.opendir(rel)

    def folder(self, rel: str) -> SafeDir:
        pinned = self._dirs.get(rel)
        if pinned is None:
            pinned = self._dirs[rel] = self.root.opendir(rel)
        return pinned

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for pinned in self._dirs.values():
            pinned.close()
        self.root.close()


def _fail(image: EvImage, what: str) -> IntegrityError:
    return IntegrityError(f"evidence frame {image.path}: {what}; not exporting", [image.path])


def copy_verified(source: FrameSource, image: EvImage, dest: SafeDir, name: str) -> int:
    """Copy one evidence JPEG to ``dest/name`` exclusively, verifying both ends; returns bytes."""
    path = image.path
    entry = source.entries.get(path)
    if entry is None:
        raise _fail(image, "not listed in the evidence content manifest")
    parent_rel, leaf = path.rsplit("/", 1)
    data, _ = read_stable(source.folder(parent_rel), leaf)
    if not len(data) == image.size == entry.size:
        raise _fail(
            image,
            f"size {len(data)} bytes, evidence says {image.size}, manifest says {entry.size}",
        )
    # One SHA-256 proves both ends: the copy read back is hashed (the contract's re-hash),
    # and the source through byte equality with it (a memcmp, fifty times cheaper than a
    # second hash: most of what the copy costs beyond the decode). A source that fails is
    # refused as before, after its copy was written into the staging root, which a failed
    # export leaves for audit anyway.
    copy = write_new_read_back(dest, name, data)
    if copy != data:
        raise IntegrityError(f"{dest.path / name}: staged copy differs from its source")
    digest = sha256(copy).hexdigest()
    if not digest == image.sha256 == entry.sha256:
        raise _fail(image, f"SHA-256 {digest} differs from the evidence {image.sha256}")
    dims = jpeg_dimensions(copy, path)
    if dims != (image.width, image.height):
        raise _fail(
            image, f"JPEG is {dims[0]}x{dims[1]}, evidence says {image.width}x{image.height}"
        )
    try:
        # dims are this copy's header: not parsed again; the decode must fill that frame
        decode_jpeg(copy, name, header=dims)
    except FormatError as exc:
        raise IntegrityError(f"{dest.path / name}: staged copy does not decode ({exc})") from exc
    return len(data)


def copy_all(
    source: FrameSource,
    jobs: Sequence[tuple[EvImage, SafeDir, str]],
    *,
    workers: int | None = None,
    report: Callable[[str, int, int], None] | None = None,
    alongside: Callable[[], None] | None = None,
) -> int:
    """Run :func:`copy_verified` for every job on a thread pool; returns the bytes copied.

    *alongside* runs in the calling thread while the pool copies: the rest of an export
    (tables, extensions) is Python that holds the GIL, which the copying threads need only
    between decodes, so it fills the cores instead of waiting for the copies to end. With
    one worker it runs after the copies. The first failing copy (in job order) is raised
    after the pending copies are cancelled; else a failure of *alongside* is.
    """
    source.pin(image.path.rsplit("/", 1)[0] for image, _, _ in jobs)
    count = workers if workers is not None else default_copy_threads(image for image, _, _ in jobs)
    total = 0
    if count <= 1:
        for i, (image, dest, name) in enumerate(jobs):
            total += copy_verified(source, image, dest, name)
            if report is not None:
                report("images", i + 1, len(jobs))
        if alongside is not None:
            alongside()
        return total
    # Frames go to the pool in batches: one task per frame would cost the pool's own
    # queueing and wake-ups per frame, while holding the GIL, which small frames notice.
    size = max(1, min(_BATCH, len(jobs) // (4 * count)))
    batches = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    done = 0
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="nuscenes-copy") as pool:
        futures: list[Future[int]] = [pool.submit(_copy_batch, source, b) for b in batches]
        try:
            side_failure: BaseException | None = None
            if alongside is not None:
                try:
                    alongside()
                except BaseException as exc:  # a failing copy, if any, is the first cause
                    side_failure = exc
                    for future in futures:
                        future.cancel()
            for batch, future in zip(batches, futures, strict=True):
                if future.cancelled():
                    break
                total += future.result()
                done += len(batch)
                if report is not None:
                    report("images", done, len(jobs))
            if side_failure is not None:
                raise side_failure
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return total


def small_frames(images: Iterable[EvImage]) -> bool:
    """Whether the mean frame is under :data:`SMALL_FRAME_BYTES`: copies whose cost is
    Python's work per frame, which threads cannot spread over the cores (processes can)."""
    count = total = 0
    for image in images:
        count += 1
        total += image.size
    return total < SMALL_FRAME_BYTES * count


def default_copy_threads(images: Iterable[EvImage]) -> int:
    """Copying threads when the caller names none: one per core (at most
    :data:`MAX_DEFAULT_WORKERS`), or one for :func:`small_frames`."""
    if small_frames(images):
        return 1
    return min(MAX_DEFAULT_WORKERS, os.cpu_count() or 1)


def _copy_batch(source: FrameSource, batch: Sequence[tuple[EvImage, SafeDir, str]]) -> int:
    return sum(copy_verified(source, image, dest, name) for image, dest, name in batch)
