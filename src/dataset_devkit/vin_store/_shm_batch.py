"""Hand a worker's batch to the DataLoader's main process through one ``/dev/shm`` file.

torch's default ``file_descriptor`` sharing sends every storage's descriptor through a
``multiprocessing.resource_sharer`` connection with an HMAC handshake: about 1.5 ms per
batch in the main process, several times the cost of reading the batch (profiled with
cProfile on the issue's benchmark). Here the worker gathers the batch into a fresh file in
``/dev/shm`` and sends only its name; unpickling in the main process maps the file, unlinks
it at once and wraps the bytes as tensors without a copy. Measured with 2 fork workers,
batches of 32: about 30,000 samples/s against 20,000 through torch's path.

A batch that is pickled but never unpickled (an iteration stopped early discards the
prefetched results) would leave its file behind, so files carry the main process's pid,
the main process removes its own at exit, and any process sweeps files whose main process
is gone. Where ``/dev/shm`` does not exist the caller keeps torch's own transport.
"""

from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import secrets
import threading
from pathlib import Path
from typing import Any, Final

import numpy as np

__all__ = ["SHM_DIR", "ShmBatch", "install_cleanup", "new_batch_buffer", "shm_available"]

SHM_DIR: Final = Path("/dev/shm")  # noqa: S108 - names are random, created O_EXCL, mode 0600
_PREFIX: Final = "ddk-vin-"

# (name, shape, dtype, offset, nbytes) of each numeric block inside the buffer
Layout = list[tuple[str, tuple[int, ...], np.dtype[Any], int, int]]

_installed: set[int] = set()
_install_lock = threading.Lock()


def shm_available() -> bool:
    """Whether this platform has a POSIX shared-memory filesystem at ``/dev/shm``."""
    return SHM_DIR.is_dir() and os.access(SHM_DIR, os.W_OK)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_pid(name: str) -> int | None:
    try:
        return int(name[len(_PREFIX) :].split("-", 1)[0])
    except ValueError:
        return None


def remove_batches(owner: int | None = None) -> int:
    """Remove leftover batch files of *owner* (default: of main processes that are gone)."""
    removed = 0
    try:
        names = [p.name for p in SHM_DIR.iterdir() if p.name.startswith(_PREFIX)]
    except OSError:
        return 0
    for name in names:
        pid = _owner_pid(name)
        if pid is None or (pid != owner if owner is not None else _pid_alive(pid)):
            continue
        with contextlib.suppress(FileNotFoundError):
            (SHM_DIR / name).unlink()
            removed += 1
    return removed


def install_cleanup() -> None:
    """In the main process: sweep files of dead owners now, and our own at exit."""
    pid = os.getpid()
    with _install_lock:
        if pid in _installed:
            return
        _installed.add(pid)
    remove_batches()

    def _at_exit() -> None:
        if os.getpid() == pid:  # forked children inherit atexit handlers
            remove_batches(owner=pid)

    atexit.register(_at_exit)


def new_batch_buffer(total: int) -> tuple[str, mmap.mmap]:
    """Create a fresh ``/dev/shm`` file of *total* bytes owned by this worker's parent."""
    name = f"{_PREFIX}{os.getppid()}-{os.getpid()}-{secrets.token_hex(8)}"
    path = SHM_DIR / name
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, max(total, 1))
        buffer = mmap.mmap(fd, max(total, 1))
    except BaseException:
        path.unlink()
        raise
    finally:
        os.close(fd)
    return str(path), buffer


def _attach(path: str, total: int, layout: Layout, rest: dict[str, Any]) -> dict[str, Any]:
    """Unpickle in the main process: map the batch file, unlink it, wrap it as tensors."""
    import torch

    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        Path(path).unlink()
        buffer = mmap.mmap(fd, max(total, 1))
    finally:
        os.close(fd)
    flat = np.frombuffer(buffer, dtype=np.uint8)
    batch = dict(rest)
    for name, shape, dtype, offset, nbytes in layout:
        batch[name] = torch.from_numpy(flat[offset : offset + nbytes].view(dtype).reshape(shape))
    return batch


class ShmBatch:
    """A batch gathered in a worker; unpickles into a dict of tensors in the main process."""

    __slots__ = ("_args",)

    def __init__(self, path: str, total: int, layout: Layout, rest: dict[str, Any]) -> None:
        self._args = (path, total, layout, rest)

    def __reduce__(self) -> tuple[Any, tuple[str, int, Layout, dict[str, Any]]]:
        return (_attach, self._args)
