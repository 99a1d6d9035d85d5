"""The extras each command needs, checked before the command reads or writes anything.

A command that needs an extra which is not installed stops with one line naming every
missing package and the ``pip install 'dataset-devkit[...]'`` that brings them
(:func:`dataset_devkit.extras.require_extras`), before it creates an output folder, starts a
worker or draws a bar: never a traceback, never a half-written result. What a command needs
can depend on what it is given: the kind of tree (``validate``, ``inspect``, ``preview``),
the recordings a ``build.toml`` lists (``build`` asks
:func:`dataset_devkit.nuscenes.build.service.required_extras`, which the library's own
``build_dataset`` checks too), or a URL instead of a path. This module is that table;
``tests/cli/test_missing_extras.py`` runs every entry with its packages absent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from dataset_devkit.demo import DEMO_EXTRAS
from dataset_devkit.extras import require_extras
from dataset_devkit.kinds import TreeKind

__all__ = [
    "COMMAND_EXTRAS",
    "KIND_EXTRAS",
    "URL_EXTRAS",
    "require_for",
]

#: What a command needs whatever it is given (the words after ``dataset-devkit``).
COMMAND_EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "stereo build": ("video",),
    "stereo validate": ("video",),
    "preview": ("preview",),
    "recording inspect": ("mcap",),
    "demo": DEMO_EXTRAS,
}

#: What a command needs for the kind of tree it reads (kinds not listed need nothing).
KIND_EXTRAS: Final[dict[str, dict[TreeKind, tuple[str, ...]]]] = {
    "validate": {
        TreeKind.NUSCENES_DATAROOT: ("nuscenes",),
        TreeKind.STEREO_DATASET: ("video",),
    },
    "inspect": {TreeKind.NUSCENES_DATAROOT: ("nuscenes",)},
    "preview": {TreeKind.STEREO_DATASET: ("video",)},
}

#: What a command needs to read or write an object store URL (``s3://``, ``file://``, ...).
URL_EXTRAS: Final = ("s3",)


def require_for(command: str, extras: Iterable[str] = (), *, kind: TreeKind | None = None) -> None:
    """Stop *command* unless everything it needs is installed: its own extras
    (:data:`COMMAND_EXTRAS`), those of the *kind* of tree it was given
    (:data:`KIND_EXTRAS`) and *extras*; one message names every missing package."""
    needed = [*COMMAND_EXTRAS.get(command, ()), *extras]
    purpose = f"dataset-devkit {command}"
    if kind is not None:
        needed += KIND_EXTRAS.get(command, {}).get(kind, ())
        purpose += f" of a {kind.value}"
    require_extras(purpose, dict.fromkeys(needed))
