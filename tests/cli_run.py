"""Run the real ``dataset-devkit`` CLI in a child process, as a user would."""

from __future__ import annotations

import subprocess
import sys


def run_devkit(
    env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m dataset_devkit ARGS`` with captured text output; never raises on failure."""
    return subprocess.run(
        [sys.executable, "-m", "dataset_devkit", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
