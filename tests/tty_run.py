"""Run the real ``dataset-devkit`` CLI on a pseudo-terminal, as in a user's shell."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios

#: What rich's bar is drawn with; no other output of ours contains it.
BAR = "━"


def run_on_tty(env: dict[str, str], *args: str, timeout: float = 300) -> tuple[int, str]:
    """``python -m dataset_devkit ARGS`` with stdout and stderr on one pseudo-terminal.

    Returns the exit code and everything written to the terminal, escape codes included.
    """
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    child = subprocess.Popen(
        [sys.executable, "-m", "dataset_devkit", *args],
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
