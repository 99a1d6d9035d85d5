"""A package's public names imported from their modules on first use (PEP 562).

A package that re-exports every name of its modules would otherwise import all of them when
any one name is used: a DataLoader worker that only reads, or a shard writer that only takes
file stamps, would pay for building, verifying and publishing too. The integrity core and
the VIN store both export this way, through this one implementation.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, module_of: Mapping[str, str], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of *package*, called from its ``__init__``.

    *module_of* maps each public name to the submodule (relative to *package*) that defines
    it. A name is imported on its first lookup and then stored in the package's namespace,
    so later lookups never reach ``__getattr__``.
    """
    namespace = sys.modules[package].__dict__
    names = frozenset(public)

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
