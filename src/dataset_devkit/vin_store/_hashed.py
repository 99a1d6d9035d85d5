"""A new file that hashes exactly the bytes written to it, for manifests made as we write.

Created exclusively and without following links (a file is never replaced). Large files are
fsynced by the thread or worker that wrote them, so publication's seal finds them already on
disk and the flush overlaps with the rest of the build; small ones (a journal commit each)
are left to the seal.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Final

from dataset_devkit.errors import DestinationExistsError

__all__ = ["HashedFile"]

_OPEN_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FSYNC_FROM: Final = 1 << 20


class HashedFile:
    """A new file (exclusive, no-follow) that hashes exactly the bytes written to it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.fd = os.open(path, _OPEN_FLAGS, 0o644)
        except FileExistsError:
            raise DestinationExistsError(f"{path}: already exists") from None
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes | memoryview, *, hashed: bool = False) -> None:
        """Write all of *data*; ``hashed=True``: ``sha`` already holds it (see prehashed)."""
        view = memoryview(data).cast("B")
        if not hashed:
            self.sha.update(view)  # releases the GIL on large buffers, as os.write does
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
            self.size += written

    def close(self) -> tuple[int, str]:
        """Close (fsyncing a large file) and return (size, SHA-256 hex) of what was written."""
        try:
            if self.size >= _FSYNC_FROM:
                os.fsync(self.fd)
        finally:
            os.close(self.fd)
        return self.size, self.sha.hexdigest()
