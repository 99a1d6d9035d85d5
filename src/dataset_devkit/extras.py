"""The optional extras, the modules each one installs, and the one check that names them.

``pip install dataset-devkit`` gives the integrity core, release packaging and the VIN
store; the heavy parts sit behind extras (``dataset-devkit[video]``, ``[mcap]``, ...). Two
things use this table, so a missing package is reported the same way everywhere:

- every command checks the extras it needs before it reads or writes anything
  (:func:`require_extras`, called from ``dataset_devkit.cli.needs``), naming every missing
  package at once and the ``pip install`` line that brings them;
- the library imports optional modules lazily where it uses them, and an absent one raises
  :class:`~dataset_devkit.errors.MissingDependencyError` naming the extra
  (:func:`import_optional`), also in a worker process.

A module counts as installed when the import system can find it
(:func:`importlib.util.find_spec`): nothing heavy is imported to ask. ``tests/
test_extras.py`` keeps :data:`EXTRAS` equal to the extras ``pyproject.toml`` declares.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Final

from dataset_devkit.errors import MissingDependencyError

__all__ = [
    "EXTRAS",
    "PACKAGES",
    "import_optional",
    "missing_modules",
    "package_of",
    "require_extras",
]

#: Each extra and the modules (import names) it installs.
EXTRAS: Final[Mapping[str, tuple[str, ...]]] = {
    "video": ("av", "PIL", "simplejpeg"),
    "mcap": (
        "mcap",
        "mcap_protobuf",
        "mcap_ros2",
        "google.protobuf",
        "pyproj",
        "PIL",
        "simplejpeg",
        "av",
        "yaml",
        "rosbags",
        "zstandard",
        "lz4",
    ),
    "nuscenes": ("nuscenes", "simplejpeg", "pyproj"),
    "torch": ("torch", "torchdata"),
    "dask": ("distributed",),
    "preview": ("matplotlib", "PIL"),
    "croissant": ("mlcroissant",),
    "s3": ("obstore", "botocore"),
}

#: The distribution (what ``pip install`` takes) of each module whose name differs.
PACKAGES: Final[Mapping[str, str]] = {
    "PIL": "Pillow",
    "mcap_protobuf": "mcap-protobuf-support",
    "mcap_ros2": "mcap-ros2-support",
    "google.protobuf": "protobuf",
    "yaml": "PyYAML",
    "nuscenes": "nuscenes-devkit",
    "distributed": "dask[distributed]",
}


def package_of(module: str) -> str:
    """The distribution to ``pip install`` for *module* (``PIL.Image`` → ``Pillow``)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        if name in PACKAGES:
            return PACKAGES[name]
    return parts[0]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing; a module set to None
        return False


def missing_modules(extras: Iterable[str]) -> list[tuple[str, str]]:
    """``(module, extra)`` for each module of *extras* that is not installed, in order."""
    found: dict[str, str] = {}
    for extra in extras:
        for module in EXTRAS[extra]:
            if module not in found and not _installed(module):
                found[module] = extra
    return list(found.items())


def _error(purpose: str, missing: list[tuple[str, str]]) -> MissingDependencyError:
    (module, extra), *more = missing
    return MissingDependencyError(
        module, extra=extra, purpose=purpose, more=[(package_of(m), e) for m, e in more]
    )


def require_extras(purpose: str, extras: Iterable[str]) -> None:
    """Raise one :class:`MissingDependencyError` naming every missing package of *extras*.

    *purpose* says what needs them (``"dataset-devkit preview"``); nothing is imported.
    """
    missing = missing_modules(extras)
    if missing:
        raise _error(purpose, missing)


def import_optional(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import *module*, or raise :class:`MissingDependencyError` naming *extra*.

    An import that fails inside an installed package (a broken install) is raised as it
    is: only an absent module is a missing extra.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and not (module == exc.name or module.startswith(exc.name + ".")):
            raise
        raise _error(purpose, [(module, extra)]) from exc
