"""Run a child Python as if some packages were not installed.

A ``sitecustomize`` module on the child's ``PYTHONPATH`` puts a finder first on
``sys.meta_path`` that answers every import of the named modules (and their submodules)
with ``ModuleNotFoundError``, exactly as an absent package does. Python imports
``sitecustomize`` at start-up, so the worker processes a command spawns or forks from its
fork server see the same absence as the command itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

_SITECUSTOMIZE = """
import importlib.abc
import os
import sys

_ABSENT = tuple(m for m in os.environ.get("DEVKIT_TEST_ABSENT", "").split(",") if m)


class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == m or name.startswith(m + ".") for m in _ABSENT):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if _ABSENT:
    sys.meta_path.insert(0, _Absent())
"""


def without(env: dict[str, str], folder: Path, modules: Iterable[str]) -> dict[str, str]:
    """*env* for a child in which *modules* cannot be imported (*folder* holds the hook)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    path = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH")) if p)
    return {**env, "PYTHONPATH": path, "DEVKIT_TEST_ABSENT": ",".join(modules)}
