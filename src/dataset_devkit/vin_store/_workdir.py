"""Where a build lives until it is published, so that a killed build can be resumed.

Two siblings of the final path (same filesystem, so publication is one rename):

- ``.NAME.vin-build``: the tree being built (``shards/shard-NNNNNN/`` as they finish, then
  the index, manifest and content manifest); publication renames it to ``NAME``.
- ``.NAME.vin-build-state``: one record per finished shard (its key, spec, digests and
  index part) and the lock a live build holds. Removed once ``NAME`` is published.

A re-run of the same build takes the lock, keeps the finished shards whose records still
match, and rewrites everything else; a second build of the same name while one runs is
refused. A tree sealed by a publication that was interrupted is made writable again.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from dataset_devkit.errors import PublicationError
from dataset_devkit.integrity import remove_staging
from dataset_devkit.integrity.oserrors import creating_in
from dataset_devkit.vin_store.spec import SHARDS_DIR

__all__ = ["BuildDirs"]

_LOCK = "lock"


class BuildDirs:
    """The tree and state directories of one build of *out*, locked while alive."""

    def __init__(self, out: Path, *, resume: bool) -> None:
        self.tree = out.parent / f".{out.name}.vin-build"
        self.state = out.parent / f".{out.name}.vin-build-state"
        with creating_in(out.parent, out):  # a folder the user may not write is named
            self.state.mkdir(mode=0o700, exist_ok=True)
        self._lock = os.open(
            self.state / _LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(self._lock, 32, 0).decode(errors="replace").strip() or "?"
            os.close(self._lock)
            raise PublicationError(
                f"{out}: another build of it is running (pid {pid}); wait for it to finish"
            ) from None
        os.ftruncate(self._lock, 0)
        os.pwrite(self._lock, f"{os.getpid()}\n".encode(), 0)
        if not resume:
            remove_staging(self.tree)
            for entry in self.state.iterdir():
                if entry.name != _LOCK:
                    entry.unlink()
        if self.tree.exists():
            self._reopen()
        else:
            with creating_in(out.parent, out):
                self.tree.mkdir(mode=0o700)
        (self.tree / SHARDS_DIR).mkdir(exist_ok=True)

    def _reopen(self) -> None:
        """Make an interrupted tree writable and drop all but its shards (rebuilt anyway)."""
        for root, dirs, _ in os.walk(self.tree):
            for name in dirs:
                (Path(root) / name).chmod(0o700, follow_symlinks=False)
        self.tree.chmod(0o700)
        for entry in self.tree.iterdir():
            if entry.name == SHARDS_DIR and entry.is_dir() and not entry.is_symlink():
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def drop_shards_except(self, names: set[str]) -> None:
        """Remove shard directories a previous, different build left beyond this one's."""
        for entry in (self.tree / SHARDS_DIR).iterdir():
            if entry.name not in names:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()

    def finish(self) -> None:
        """The tree is published: forget the state (records and lock)."""
        shutil.rmtree(self.state, ignore_errors=True)
        self.release()

    def discard(self) -> None:
        """Remove tree and state: the build failed on its input, a re-run cannot reuse it."""
        remove_staging(self.tree)
        self.finish()

    def release(self) -> None:
        """Drop the lock (the state stays for a re-run)."""
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1
