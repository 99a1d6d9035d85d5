"""Stereo-specific failures, each a subclass of the one devkit exception tree."""

from __future__ import annotations

from collections.abc import Sequence

from dataset_devkit.errors import FormatError, IntegrityError, NotFoundError


class SourceError(FormatError):
    """The rendered export does not match its documented schema or its own files."""


class SourceIssues(IntegrityError):
    """Several problems were found in a rendered export; ``issues`` lists all of them."""

    def __init__(self, source: str, issues: Sequence[str]) -> None:
        super().__init__(f"{source}: the rendered export has {len(issues)} problem(s)", issues)


class DepthOverflowError(FormatError):
    """A finite depth value does not fit the uint32 millimetre encoding."""


class OutOfRangeError(NotFoundError, IndexError):
    """A sample or frame number outside the dataset.

    Also an :class:`IndexError`, so sequence iteration and samplers stop as they expect.
    """


class DepthNotInstalledError(NotFoundError):
    """Depth was asked for but the depth family is not installed under the root."""
