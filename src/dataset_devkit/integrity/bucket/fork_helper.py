"""Downloads for a process forked from one that already used obstore, done in a fresh one.

obstore's clients run on a runtime whose threads do not survive ``fork``: a child that
touches any client afterwards hangs (shown by ``test_dataloader_workers_share_one_cold_cache``
with fork workers). A forked DataLoader worker therefore hands its downloads to one helper
it starts with ``python -m`` (a fresh interpreter), talking over a pipe: one relative path
per line in, one JSON answer per line out. The helper runs the very same
:meth:`RemoteTree.held` (same locks, temporary files, checks and cache limit), and keeps
holding the file until the worker holds it too, so a size-limited cache cannot evict it
in between; it exits when the pipe closes, so it never outlives its worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dataset_devkit import errors

__all__ = ["ForkHelper", "main"]

_RAISABLE = (
    "ConfigError",
    "IntegrityError",
    "MissingPathError",
    "ObjectStoreError",
    "FormatError",
)


class ForkHelper:
    """A helper process that fetches files of one remote tree into its cache."""

    def __init__(
        self, url: str, cache_dir: Path, retry: dict[str, Any], limit: int | None = None
    ) -> None:
        env = dict(os.environ)
        source_root = str(Path(errors.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dataset_devkit.integrity.bucket.fork_helper",
                url,
                str(cache_dir),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self._send({"retry": retry, "limit": limit})

    def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise errors.ObjectStoreError("the download helper process died", url=None)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def manifest(self) -> str:
        """The remote content manifest's text, fetched by the helper."""
        answer = self._send({"manifest": True})
        self._raise(answer)
        return str(answer["text"])

    def _raise(self, answer: dict[str, Any]) -> None:
        if "error" in answer:
            kind = answer["error"] if answer["error"] in _RAISABLE else "ObjectStoreError"
            raise getattr(errors, kind)(answer["message"])

    def fetch(self, rel: str) -> None:
        """Have the helper put a verified copy of *rel* into the cache and hold it there
        (shared) until :meth:`release`, or raise its error."""
        self._raise(self._send({"rel": rel}))

    def close(self) -> None:
        """End the helper (it also ends by itself when this process exits)."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)

    def release(self, rel: str) -> None:
        """Let the helper drop its hold on *rel* (once this process holds it itself)."""
        self._send({"release": rel})


def main() -> None:
    """Serve fetch requests on stdin until it closes (``python -m ...fork_helper URL DIR``)."""
    from dataset_devkit.integrity.bucket import cache as remote

    tree = remote.RemoteTree(sys.argv[1], Path(sys.argv[2]))
    holds: dict[str, contextlib.ExitStack] = {}
    for line in sys.stdin:
        request = json.loads(line)
        answer: dict[str, Any] = {}
        if "retry" in request:
            remote.RETRY.update(request["retry"])
            tree.limit = request.get("limit")
        elif "release" in request:
            hold = holds.pop(request["release"], None)
            if hold is not None:
                hold.close()
        else:
            try:
                if "manifest" in request:
                    answer = {"text": tree.manifest_bytes().decode("utf-8")}
                else:
                    hold = contextlib.ExitStack()
                    hold.enter_context(tree.held([request["rel"]]))
                    earlier = holds.pop(request["rel"], None)
                    if earlier is not None:
                        earlier.close()
                    holds[request["rel"]] = hold
            except errors.DevkitError as exc:
                answer = {"error": type(exc).__name__, "message": str(exc)}
        try:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # the worker is gone (killed with its loader): so are we
            os._exit(0)


if __name__ == "__main__":
    main()
