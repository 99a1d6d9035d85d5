"""Name the file in errors of the environment (a full disk, a denied permission).

``os.write``, ``os.fsync`` and ``os.fchmod`` work on descriptors, so the ``OSError`` they
raise carries no file name and the CLI could only say "No space left on device". Wrapping
each write-side step in :func:`naming` attaches the path the descriptor was opened for,
without changing the exception's type or ``errno``, so callers still catch what they did.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

__all__ = ["naming", "naming_in"]


@contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """Re-raise an ``OSError`` that names no file as the same error naming *path*."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or not exc.errno or type(exc).__module__ != "builtins":
            raise  # already named, or a devkit error with its own message
        raise type(exc)(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path)) from exc


def naming_in(
    folder: str | os.PathLike[str], name: str | os.PathLike[str]
) -> AbstractContextManager[None]:
    """:func:`naming` for *name* in *folder*, joined as a string.

    Called once per file written, with names a caller may keep by the ten thousand: a
    ``Path`` built here would intern each name (``pathlib`` does), and the interpreter's
    table of interned strings grows with them and never shrinks.
    """
    return naming(os.path.join(folder, name))  # noqa: PTH118 (a Path interns the name)
