"""Run the real ``dataset-devkit`` CLI on a pseudo-terminal, as in a user's shell."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios

#: What rich's bar is drawn with; no other output of ours contains it.
BAR = "━"

_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def last_frames(shown: str) -> dict[str, str]:
    """The last frame drawn of each bar, by stage, escape codes removed.

    A frame reads ``STAGE  ━━━━ 5.8 MB/5.8 MB · 41/41 files 695.6 MB/s 0:00:00 0:00:00``
    (bar, counts, rate, time left, time spent).
    """
    frames: dict[str, str] = {}
    for line in re.split(r"[\r\n]+", _ESCAPE.sub("", shown)):
        if BAR in line:
            stage, _, rest = line.partition(BAR)
            frames[stage.strip()] = BAR + rest
    return frames


def assert_full(frame: str, count: int, unit: str = "files") -> None:
    """*frame* ends with all its bytes and all *count* items done, a byte rate and times."""
    size = r"\d[\d.]* (?:B|[KMGT]iB)"  # the toolkit's one size format (integrity.numbers)
    pattern = rf"({size})/\1 · {count}/{count} {unit}\s+{size}/s\s+\d+:\d\d:\d\d"
    assert re.search(pattern, frame), (frame, count, unit)


def run_on_tty(
    env: dict[str, str], *args: str, timeout: float = 300, cwd: str | None = None
) -> tuple[int, str]:
    """``python -m dataset_devkit ARGS`` with stdout and stderr on one pseudo-terminal.

    Returns the exit code and everything written to the terminal, escape codes included.
    """
    return run_program_on_tty(env, "-m", "dataset_devkit", *args, timeout=timeout, cwd=cwd)


def run_program_on_tty(
    env: dict[str, str],
    *args: str,
    timeout: float = 300,
    cwd: str | None = None,
    python: str = sys.executable,
) -> tuple[int, str]:
    """``python ARGS`` (a module with ``-m``, or a script) on one pseudo-terminal."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    child = subprocess.Popen(
        [python, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**env, "TERM": "xterm-256color", "COLUMNS": "120"},
    )
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: the child closed its end of the terminal
                break
            if not data:
                break
            chunks.append(data)
        code = child.wait(timeout=timeout)
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
            child.wait()
    return code, b"".join(chunks).decode("utf-8", "replace")
