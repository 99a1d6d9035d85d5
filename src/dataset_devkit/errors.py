"""The one exception tree of dataset-devkit: every user-facing failure is one of these.

::

    DevkitError                         base; the CLI maps it to exit code 1
    ├── ConfigError (ValueError)        a bad option, config key or argument value
    ├── FormatError (ValueError)        a file on disk does not match its format
    │                                   (names the file and the ``$.json.path`` field)
    ├── NotFoundError (KeyError)        a lookup (token, sample index, member) has no match
    ├── MissingPathError (FileNotFoundError)
    │                                   a file or directory the user named does not exist
    ├── MissingDependencyError (ImportError)
    │                                   an optional extra is not installed
    ├── UnsafePathError (PermissionError)
    │                                   a symlink, hard link, special file or unsafe name
    ├── ObjectStoreError (OSError)      an object store request failed after its retries
    ├── IntegrityError                  content does not match its manifest; carries
    │   │                               every issue found, sorted
    │   └── VerificationFailed          ``verify`` found differences
    └── PublicationError                an atomic publication could not complete
        └── DestinationExistsError (FileExistsError)

Systems may subclass these in their own packages; they never raise bare builtins for a
user mistake. Messages say what, where and expected versus found; the same facts are kept
as attributes so programs need not parse messages.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ConfigError",
    "DestinationExistsError",
    "DevkitError",
    "FormatError",
    "IntegrityError",
    "MissingDependencyError",
    "MissingPathError",
    "NotFoundError",
    "ObjectStoreError",
    "PublicationError",
    "UnsafePathError",
    "VerificationFailed",
]


class DevkitError(Exception):
    """Base of every error dataset-devkit raises on purpose."""


class ConfigError(DevkitError, ValueError):
    """A configuration value, option or argument is not acceptable.

    Parameters
    ----------
    message
        What is wrong, and what was expected.
    key
        The config key or option name, when there is one.
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class FormatError(DevkitError, ValueError):
    """A file does not match its on-disk format.

    Parameters
    ----------
    message
        What is wrong, and what was expected.
    path
        The offending file.
    field
        The JSON path of the offending field (``$.shards[0].num_rows``), if any.
    """

    def __init__(
        self, message: str, *, path: str | Path | None = None, field: str | None = None
    ) -> None:
        prefix = ""
        if path is not None:
            prefix = f"{path}"
            if field:
                prefix += f" at {field}"
            prefix += ": "
        super().__init__(prefix + message)
        self.path = None if path is None else Path(path)
        self.field = field
        self.detail = message


class NotFoundError(DevkitError, KeyError):
    """A lookup has no match (a token, a sample index, a member)."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain message
        return str(self.args[0]) if self.args else ""


class MissingPathError(DevkitError, FileNotFoundError):
    """A file or directory that was named does not exist."""

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        super().__init__(f"{path}: {message}" if path is not None else message)
        self.path = None if path is None else Path(path)

    def __str__(self) -> str:  # OSError's own formatting would drop our message
        return str(self.args[0])


class MissingDependencyError(DevkitError, ImportError):
    """An optional extra is needed for this operation but is not installed.

    Parameters
    ----------
    module
        The import name that failed.
    extra
        The ``dataset-devkit[extra]`` that provides it.
    purpose
        What needs it.
    package
        The distribution to install, when its name is not the module's (``Pillow``).
    more
        Further ``(package, extra)`` pairs missing too, named in the same message.
    """

    def __init__(
        self,
        module: str,
        *,
        extra: str,
        purpose: str,
        package: str | None = None,
        more: Sequence[tuple[str, str]] = (),
    ) -> None:
        if package is None:  # the distribution's name, where it is not the module's
            from dataset_devkit.extras import package_of  # extras imports this module

            package = package_of(module)
        self.module = module
        self.extra = extra
        self.purpose = purpose
        self.package = package
        self.more = tuple((str(p), str(e)) for p, e in more)
        self.packages = (self.package, *(p for p, _ in self.more))
        self.extras = tuple(dict.fromkeys([extra, *(e for _, e in self.more)]))
        names = ", ".join(repr(name) for name in self.packages)
        one = len(self.packages) == 1
        what = "package" if one else "packages"
        are, them = ("is", "it") if one else ("are", "them")
        super().__init__(
            f"{purpose} needs the Python {what} {names}, which {are} not installed; install "
            f"{them} with: pip install 'dataset-devkit[{','.join(self.extras)}]'"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Raised in a worker process and sent back pickled, or copied to add a subject:
        # the keyword-only arguments must come back too.
        rebuild = functools.partial(
            MissingDependencyError,
            extra=self.extra,
            purpose=self.purpose,
            package=self.package,
            more=self.more,
        )
        return (rebuild, (self.module,))


class UnsafePathError(DevkitError, PermissionError):
    """A path is a link, a special file or otherwise unsafe to read or write."""

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        super().__init__(f"{path}: {message}" if path is not None else message)
        self.path = None if path is None else Path(path)


class IntegrityError(DevkitError):
    """Content does not match what was recorded for it.

    Parameters
    ----------
    message
        A summary line.
    issues
        Every issue found, already sorted; rendered one per line after the summary.
    """

    def __init__(self, message: str, issues: Sequence[str] = ()) -> None:
        self.summary = message
        self.issues = list(issues)
        text = message
        if self.issues:
            text += "\n" + "\n".join(f"  - {issue}" for issue in self.issues)
        super().__init__(text)


class VerificationFailed(IntegrityError):
    """A tree, store or release does not verify; ``issues`` lists every difference."""


class PublicationError(DevkitError):
    """An atomic publication could not complete; the final name was left untouched."""


class DestinationExistsError(PublicationError, FileExistsError):
    """The destination of a publication or export already exists and is never replaced."""


class ObjectStoreError(DevkitError, OSError):
    """An object store request failed after its retries (server errors, dropped
    connections, a missing bucket or credentials); the message names the object's URL."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(f"{url}: {message}" if url is not None else message)
        self.url = url

    def __str__(self) -> str:  # OSError's own formatting would drop our message
        return str(self.args[0])
