"""Run the real ``dataset-devkit`` CLI in a child process, as a user would."""

from __future__ import annotations

import json
import subprocess
import sys


def run_devkit(
    env: dict[str, str], *args: str, timeout: float = 300, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m dataset_devkit ARGS`` with captured text output; never raises on failure."""
    return subprocess.run(
        [sys.executable, "-m", "dataset_devkit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


#: Runs many command lines in one child process through the real entry point, each with its
#: own stdout/stderr: a process per command line costs a second of start-up each.
_RUN_MANY = """
import contextlib, io, json, sys
from dataset_devkit.cli.app import main
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:  # None is success; a message (not a number) is failure
            code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def run_many(
    env: dict[str, str], argvs: list[list[str]], cwd: str | None = None, columns: int = 200
) -> list[tuple[int, str, str]]:
    """``(exit code, stdout, stderr)`` of each command line, in one child process, its
    output piped (not a terminal) as if ``COLUMNS`` were *columns*."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN_MANY, json.dumps(argvs)],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": str(columns)},
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [(code, out, err) for code, out, err in json.loads(done.stdout)]
