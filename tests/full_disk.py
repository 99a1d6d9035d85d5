"""Real faults of the machine for command-line tests: a full disk, a folder one may not write.

A full disk is a small ``tmpfs`` mounted for the test (root only: ``mount -t tmpfs -o
size=N``), so every write path, buffered or not, in this process or a worker, fails with
``ENOSPC`` wherever the space runs out; elsewhere ``RLIMIT_FSIZE`` makes every write past
N bytes of one file fail with ``EFBIG`` (a real fault too, in every path, but it hits the
first large file rather than the file being written when space runs out).

A folder one may not write is one of another user, mode 0555, written to by a child that
cannot override permissions: as root, the child drops ``CAP_DAC_OVERRIDE``,
``CAP_DAC_READ_SEARCH`` and ``CAP_FOWNER`` from its bounding set before it starts (the
interpreter may live in root's home, which another user could not even reach).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.scale_tree import run_limited

#: The errors a full disk is reported with, by the way it is made.
FULL_DISK_LINES = ("error: No space left on device: ", "error: File too large: ")

_PR_CAPBSET_DROP = 24
_DAC_CAPS = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
_OTHER_USER = 65534


def can_mount() -> bool:
    """Whether this process may mount a tmpfs (root, with the capability to)."""
    return os.geteuid() == 0 and Path("/proc/mounts").exists()


@contextlib.contextmanager
def small_disk(folder: Path, size: int) -> Iterator[None]:
    """*folder* is a filesystem of *size* bytes while the block runs (see :func:`can_mount`)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
        check=True,
        capture_output=True,
    )
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True, capture_output=True)


def run_on_a_full_disk(
    env: dict[str, str],
    args: list[str],
    folder: Path,
    size: int,
    prepare: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``dataset-devkit ARGS`` writing into *folder*, where only *size* bytes fit;
    *prepare* runs first (it puts on the disk what the command works on)."""
    if can_mount():
        with small_disk(folder, size):
            if prepare is not None:
                prepare()
            return run_limited(env, args)
    folder.mkdir(parents=True, exist_ok=True)
    if prepare is not None:
        prepare()
    return run_limited(env, args, fsize=size)


def _drop_permission_overrides() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _DAC_CAPS:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def not_writable(folder: Path) -> Path:
    """Make *folder* (existing) a folder the child of :func:`run_denied` may not write."""
    if os.geteuid() == 0:
        os.chown(folder, _OTHER_USER, _OTHER_USER)
    folder.chmod(0o555)
    return folder


def run_denied(env: dict[str, str], args: list[str]) -> subprocess.CompletedProcess[str]:
    """``dataset-devkit ARGS`` as a process that the folders' modes apply to."""
    return subprocess.run(
        [sys.executable, "-m", "dataset_devkit", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=_drop_permission_overrides if os.geteuid() == 0 else None,
    )
