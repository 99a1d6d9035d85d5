"""Name the file in errors of the environment (a full disk, a denied permission).

``os.write``, ``os.fsync`` and ``os.fchmod`` work on descriptors, so the ``OSError`` they
raise carries no file name and the CLI could only say "No space left on device". Wrapping
each write-side step in :func:`naming` attaches the path the descriptor was opened for,
without changing the exception's type or ``errno``, so callers still catch what they did.

Publication creates entries the user never named (a hidden ``.NAME.staging-*``
directory, a ``.NAME.partial-*`` temp file) in the user's folder. When that folder may not
be written (a permission, a read-only filesystem), :func:`creating_in` names the folder,
which the user can act on, rather than the hidden entry, which is not there to look at.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

__all__ = ["creating_in", "named", "naming", "naming_in"]

#: Errors that mean "this folder may not be written", whatever was being created in it.
_DENIED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


@contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """Re-raise an ``OSError`` that names no file as the same error naming *path*."""
    try:
        yield
    except OSError as exc:
        renamed = named(exc, path)
        if renamed is exc:
            raise
        raise renamed from exc


def named(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """*exc* as :func:`naming` re-raises it: a copy naming *path*, or *exc* itself when it
    names a file already or is a devkit error with its own message.

    For a hot loop that catches the error itself instead of entering a context manager
    (a generator, two calls) per file, as :func:`naming` does with it.
    """
    if exc.filename is not None or not exc.errno or type(exc).__module__ != "builtins":
        return exc
    return type(exc)(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path))


def naming_in(
    folder: str | os.PathLike[str], name: str | os.PathLike[str]
) -> AbstractContextManager[None]:
    """:func:`naming` for *name* in *folder*, joined as a string.

    Called once per file written, with names a caller may keep by the ten thousand: a
    ``Path`` built here would intern each name (``pathlib`` does), and the interpreter's
    table of interned strings grows with them and never shrinks.
    """
    return naming(os.path.join(folder, name))  # noqa: PTH118 (a Path interns the name)


@contextmanager
def creating_in(
    folder: str | os.PathLike[str], shown: str | os.PathLike[str] | None = None
) -> Iterator[None]:
    """Name *folder* in a denied or read-only error raised while an entry is created in it.

    Any other error of the environment (a full disk) names *shown*, what the entry stands
    for (the final file a temp file becomes), when it names nothing or only a bare name.
    """
    try:
        yield
    except OSError as exc:
        if not exc.errno or type(exc).__module__ != "builtins":
            raise  # a devkit error with its own message
        strerror = exc.strerror or os.strerror(exc.errno)
        if exc.errno in _DENIED:
            raise type(exc)(exc.errno, strerror, os.fspath(folder)) from exc
        bare = exc.filename is None or not os.fsdecode(exc.filename).startswith(os.sep)
        if shown is not None and bare:
            raise type(exc)(exc.errno, strerror, os.fspath(shown)) from exc
        raise
