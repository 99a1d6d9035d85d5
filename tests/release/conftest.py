"""Release tests: a test marked ``unpack_script`` calls unpack.py only through
:mod:`tests.release.unpack_script`, so it runs under ``DEVKIT_UNPACK_PYTHON`` when set."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.release import unpack
from tests.release import unpack_script

_TESTS = Path(__file__).resolve().parents[1]


def _not_from_tests(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        caller = Path(sys._getframe(1).f_code.co_filename).resolve()
        if caller.is_relative_to(_TESTS):
            raise AssertionError(
                f"unpack.{name} called in this process by a test marked unpack_script: call "
                f"tests.release.unpack_script.{name} so it runs under {unpack_script.PYTHON}"
            )
        return real(*args, **kwargs)  # the packer's own restore test runs here, as it should

    return guarded


@pytest.fixture(autouse=True)
def _only_the_other_python(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where another interpreter runs the script, a marked test cannot call it here."""
    if unpack_script.OTHER is None or request.node.get_closest_marker("unpack_script") is None:
        return
    for name in ("unpack_release", "verify_release", "main"):
        monkeypatch.setattr(unpack, name, _not_from_tests(name, getattr(unpack, name)))
