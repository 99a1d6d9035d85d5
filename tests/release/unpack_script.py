"""unpack.py as the release tests run it: under this Python, or under the one CI names.

``unpack.py`` promises Python 3.9 or newer and needs nothing but the standard library, so its
tests can run it under any interpreter without installing this project there: set
``DEVKIT_UNPACK_PYTHON`` to that interpreter and run the tests marked ``unpack_script``
(``pytest tests/release -m unpack_script``). The tests themselves (packing, hostile archives,
checks) still run here; every call of the script goes to the other interpreter:

- :data:`PYTHON` is the interpreter that runs the script as a command (``[PYTHON, "-I",
  "unpack.py", ...]``, or :func:`main`);
- :func:`unpack_release` and :func:`verify_release` call the script's functions in that
  interpreter and give back what they returned or raised (as this process's
  ``UnpackError`` classes, so ``pytest.raises(unpack.UnpackError, match=...)`` reads the
  same), and replay its log lines into ``log``.

Without the variable, all of this is the script imported here, called directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Final

from dataset_devkit.release import unpack

#: The interpreter named by ``DEVKIT_UNPACK_PYTHON``, or ``None`` (this one, in process).
OTHER: Final = os.environ.get("DEVKIT_UNPACK_PYTHON") or None
#: The interpreter that runs unpack.py as a command.
PYTHON: Final = OTHER or sys.executable
#: The script itself (the same bytes every release ships).
SCRIPT: Final = Path(unpack.__file__).resolve()

# Loads the script from its path (never from an installed package), calls one function
# with JSON arguments and prints what it returned, raised and logged as JSON.
_CALL = r"""
import json, runpy, sys
module = runpy.run_path(sys.argv[1])
call = json.loads(sys.argv[2])
notes = []
kwargs = call["kwargs"]
if call["log"]:
    kwargs["log"] = notes.append
try:
    summary = module[call["function"]](*call["args"], **kwargs)
except module["UnpackError"] as exc:
    result = {"raised": type(exc).__name__, "summary": exc.summary, "issues": exc.issues}
except OSError as exc:
    result = {"oserror": [exc.errno, exc.strerror, exc.filename]}
else:
    result = {"returned": vars(summary)}
result["log"] = notes
sys.stdout.write(json.dumps(result))
"""


def run(*args: str | os.PathLike[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``unpack.py ARGS`` as a command under :data:`PYTHON` (text output captured)."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("check", False)
    return subprocess.run([PYTHON, "-I", str(SCRIPT), *map(str, args)], **kwargs)


def main(argv: Sequence[str]) -> int:
    """The command line, as :func:`unpack.main` (its output goes to ``sys.stdout``/``stderr``,
    where ``capsys`` reads it)."""
    if OTHER is None:
        return unpack.main(argv)
    done = run(*argv)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


def _call(
    function: str, args: list[Any], kwargs: dict[str, Any], log: Callable[[str], None] | None
) -> Any:
    call = {"function": function, "args": args, "kwargs": kwargs, "log": log is not None}
    done = subprocess.run(
        [PYTHON, "-I", "-c", _CALL, str(SCRIPT), json.dumps(call)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout:
        raise RuntimeError(f"unpack.py under {PYTHON} crashed ({done.returncode}):\n{done.stderr}")
    result = json.loads(done.stdout)
    for note in result["log"]:
        assert log is not None
        log(note)
    if "raised" in result:
        raised: type[unpack.UnpackError] = getattr(unpack, result["raised"])
        raise raised(result["summary"], result["issues"])
    if "oserror" in result:
        raise OSError(*result["oserror"])
    return SimpleNamespace(**result["returned"])


def unpack_release(
    release_dir: str,
    output: str,
    families: Sequence[str] = (),
    everything: bool = False,
    *,
    log: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> Any:
    """:func:`unpack.unpack_release` run by :data:`PYTHON` (keyword options as JSON values)."""
    if OTHER is None:
        if log is not None:
            kwargs["log"] = log
        return unpack.unpack_release(release_dir, output, families, everything, **kwargs)
    return _call("unpack_release", [release_dir, output, list(families), everything], kwargs, log)


def verify_release(
    release_dir: str,
    families: Sequence[str] = (),
    everything: bool = False,
    *,
    log: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> Any:
    """:func:`unpack.verify_release` run by :data:`PYTHON`."""
    if OTHER is None:
        if log is not None:
            kwargs["log"] = log
        return unpack.verify_release(release_dir, families, everything, **kwargs)
    return _call("verify_release", [release_dir, list(families), everything], kwargs, log)
