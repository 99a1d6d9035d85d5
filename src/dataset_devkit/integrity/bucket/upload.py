"""Upload one file of a tree, proving the bytes sent are the bytes in the manifest.

This is where a publish checks file contents: each file is read once, and hashed as it is
read for sending. A small file is read whole, checked, then sent in one request (a file
that does not match is never sent). A large one goes as a multipart upload fed by a
generator that checks size and SHA-256 when it reaches the end and raises instead of
finishing: obstore then aborts the upload instead of completing it, so bytes that do not
match the manifest (a corrupted file, one edited during the publish) never become an
object, and the manifest, written only after every upload succeeded, is not written.

Where the store keeps user metadata (S3, GCS, Azure) the digest is recorded with the object
(``x-amz-meta-sha256``), in the same request that creates it. A re-run trusts that record
to skip the object instead of reading it back: it was written by this code only after the
bytes hashed to it, and an object replaced by any other writer loses it. This is the
cooperative threat model of the whole integrity core, not a defence against a hostile
writer; ``verify`` re-reads everything when that matters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

from dataset_devkit.errors import VerificationFailed
from dataset_devkit.integrity.bucket.objects import SHA256_METADATA
from dataset_devkit.integrity.manifest import ManifestEntry
from dataset_devkit.integrity.safefs import SafeDir
from dataset_devkit.objectstore import ObjectLocation

__all__ = ["upload_file"]


def _mismatch(root: Path, entry: ManifestEntry, size: int, digest: str) -> VerificationFailed:
    found = f"size {size}" if size != entry.size else f"sha256 {digest}"
    expected = f"{entry.size} bytes" if size != entry.size else entry.sha256
    return VerificationFailed(
        f"{root / entry.path}: does not match the content manifest ({found}, expected "
        f"{expected}); it was not uploaded and no manifest was written"
    )


def upload_file(
    location: ObjectLocation,
    root: Path,
    entry: ManifestEntry,
    *,
    part_size: int,
    part_concurrency: int,
    metadata: bool,
    single_put_limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Put ``root/entry.path`` at key ``entry.path``; raise if its bytes are not *entry*'s.

    Files up to *single_put_limit* (default: *part_size*) go in one request, held whole in
    memory; larger ones as a multipart upload of *part_size* parts, *part_concurrency* at
    a time.

    Raises
    ------
    VerificationFailed
        The file's size or SHA-256 differs from *entry*; no object was created for it.
    """
    import obstore

    attributes = {SHA256_METADATA: entry.sha256} if metadata else None
    with SafeDir.open(root) as pinned, pinned.open_read(entry.path) as handle:
        if entry.size <= (part_size if single_put_limit is None else single_put_limit):
            data = handle.read(entry.size + 1)
            digest = hashlib.sha256(data).hexdigest()
            if len(data) != entry.size or digest != entry.sha256:
                raise _mismatch(root, entry, len(data), digest)
            # use_multipart=False: left to itself, obstore sends anything over its 5 MiB
            # default chunk as a multipart upload of 5 MiB parts (measured: twice the
            # server's work of one request, on moto).
            obstore.put(
                location.store, entry.path, data, attributes=attributes, use_multipart=False
            )
            if progress is not None:
                progress(len(data))
            return

        def parts() -> Iterator[bytes]:
            hasher = hashlib.sha256()
            sent = 0
            while block := handle.read(part_size):
                hasher.update(block)
                sent += len(block)
                if sent > entry.size:
                    break
                yield block
                if progress is not None:
                    progress(len(block))
            if sent != entry.size or hasher.hexdigest() != entry.sha256:
                raise _mismatch(root, entry, sent, hasher.hexdigest())

        obstore.put(
            location.store,
            entry.path,
            parts(),
            attributes=attributes,
            use_multipart=True,
            chunk_size=part_size,
            max_concurrency=part_concurrency,
        )
