"""Optional dependencies a test needs: import them, or skip only where the run allows it.

Two dependencies cannot be installed on every Python we support: the torch CPU wheel we
test (``torch==2.13.0``) exists for Python 3.11 only, and nuscenes-devkit 1.2.0 requires
``numpy<2``, which has no wheels for Python 3.13. A test that needs one calls :func:`need`
(at module level, in a fixture or in the test). Where the dependency is installed, that is a
plain import. Where it is missing, the test fails, unless the ``DEVKIT_MISSING_OK``
environment variable names the module (comma-separated: ``torch,nuscenes``), which the
Python 3.13 leg of CI sets: then the test is skipped with a reason that names the dependency
and why it is missing, and :func:`skip_summary` lists those reasons at the end of the run.
Every other skip in such a run fails the session (``DEVKIT_ONLY_OPTIONAL_SKIPS``), so a
missing browser or emulator cannot hide behind the allowed ones.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from types import ModuleType
from typing import Final

import pytest

#: Module -> (distribution, why it may be missing).
OPTIONAL: Final = {
    "torch": (
        "torch",
        "the torch CPU wheel we test (2.13.0) is for Python 3.11; any other torch on PyPI "
        "is a multi-GB CUDA build",
    ),
    "nuscenes": (
        "nuscenes-devkit",
        "nuscenes-devkit 1.2.0 requires numpy<2, which has no wheels for Python 3.13",
    ),
}

#: Every skip reason :func:`need` gives starts with this.
PREFIX: Final = "optional dependency missing: "


def allowed_missing() -> set[str]:
    """The modules this run may lack (``DEVKIT_MISSING_OK``)."""
    return {m.strip() for m in os.environ.get("DEVKIT_MISSING_OK", "").split(",") if m.strip()}


def reason(module: str) -> str:
    """The skip reason for a missing *module*."""
    distribution, why = OPTIONAL[module]
    return f"{PREFIX}{distribution} ({why})"


def need(module: str) -> ModuleType:
    """Import *module* (a key of :data:`OPTIONAL`), or skip where the run allows its absence."""
    if module not in OPTIONAL:
        raise KeyError(
            f"{module!r} is not an optional dependency: expected one of {list(OPTIONAL)}"
        )
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if module in allowed_missing():
            pytest.skip(reason(module), allow_module_level=True)
        raise ImportError(
            f"{module} is needed by this test and is not installed ({exc}); a run that cannot "
            f"install it sets DEVKIT_MISSING_OK={module} to skip such tests"
        ) from exc


def optional_skips(skips: Iterable[tuple[str, str]]) -> list[str]:
    """The node ids (or module files) of ``(reason, where)`` skips for a dependency this run
    may lack, each once, in the order they ran: a test may read what an earlier one of its
    module built (a module-scoped fixture's build), so a run of just these keeps the order."""
    allowed = {reason(m) for m in allowed_missing() if m in OPTIONAL}
    return list(dict.fromkeys(where for text, where in skips if text in allowed))


def skip_summary(skips: Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Lines ``reason: N tests, M whole modules (names)`` for ``(reason, where)`` skips, and the
    reasons that are not allowed (anything but :func:`need` for a module the run may lack).

    *where* is the test's node id, or the file of a module skipped whole.
    """
    by_reason: dict[str, list[str]] = {}
    for text, where in skips:
        by_reason.setdefault(text, []).append(where)
    allowed = {reason(m) for m in allowed_missing() if m in OPTIONAL}
    lines = []
    for text, places in sorted(by_reason.items()):
        modules = sorted(p for p in places if "::" not in p)
        tests = len(places) - len(modules)
        counts = [f"{tests} tests"] if tests else []
        if modules:
            counts.append(f"{len(modules)} whole modules ({', '.join(modules)})")
        lines.append(f"{text}: {', '.join(counts)}")
    return lines, sorted(text for text in by_reason if text not in allowed)
