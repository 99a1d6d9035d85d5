"""Atomic rename that never replaces an existing name (Linux ``renameat2(RENAME_NOREPLACE)``).

``os.rename`` silently replaces an empty directory or a file at the destination, so it is
never used for publication. Where no no-replace primitive exists, publication refuses
rather than falling back to something that could overwrite.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from typing import Final

from dataset_devkit.errors import DestinationExistsError, PublicationError

__all__ = ["rename_noreplace"]

_RENAME_NOREPLACE: Final = 1
_SYSCALL_NUMBERS: Final = {"x86_64": 316, "aarch64": 276, "arm64": 276}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def rename_noreplace(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str) -> None:
    """Rename ``src`` to ``dst`` (both relative to pinned directories) or fail if it exists.

    Raises
    ------
    DestinationExistsError
        *dst* exists (anything: file, directory, symlink).
    PublicationError
        The platform or filesystem offers no atomic no-replace rename.
    """
    if not sys.platform.startswith("linux"):
        raise PublicationError(
            f"atomic no-replace rename is not implemented on {sys.platform}; "
            "refusing to publish with a rename that could overwrite"
        )
    libc = _libc()
    src_b, dst_b = os.fsencode(src), os.fsencode(dst)
    func = getattr(libc, "renameat2", None)
    if func is not None:
        result = func(src_dir_fd, src_b, dst_dir_fd, dst_b, _RENAME_NOREPLACE)
    else:  # pragma: no cover - glibc older than 2.28
        number = _SYSCALL_NUMBERS.get(platform.machine())
        if number is None:
            raise PublicationError(f"renameat2 unavailable on {platform.machine()}")
        result = libc.syscall(number, src_dir_fd, src_b, dst_dir_fd, dst_b, _RENAME_NOREPLACE)
    if result == 0:
        return
    code = ctypes.get_errno()
    if code == errno.EEXIST:
        raise DestinationExistsError(f"{dst}: already exists; it is never replaced")
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        raise PublicationError(
            "this filesystem does not support an atomic no-replace rename "
            f"({errno.errorcode.get(code, code)}); refusing to publish"
        )
    raise PublicationError(f"rename {src} -> {dst} failed: {os.strerror(code)}")
