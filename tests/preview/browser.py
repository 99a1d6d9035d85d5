"""Open a page in headless Chromium over the DevTools protocol, stdlib only.

``--remote-debugging-pipe`` speaks CDP as NUL-separated JSON on file descriptors 3 (to the
browser) and 4 (from it), so no websocket client or browser download is needed: the test
uses Debian's ``chromium`` as a user would. We collect failed requests, console errors and
exceptions, each ``<img>``'s load state and natural size, and a screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

_IMAGES_JS = (
    "JSON.stringify(Array.from(document.images).map("
    "i => [i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight]))"
)


@dataclass
class PageReport:
    """What the browser saw while loading one page."""

    failed_requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    images: list[tuple[str, bool, int, int]] = field(default_factory=list)
    screenshot: bytes = b""


class _Pipe:
    def __init__(self, to_browser: int, from_browser: int) -> None:
        self.to_browser, self.from_browser = to_browser, from_browser
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        result: dict[str, Any] = json.loads(message)
        return result

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        request: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            request["sessionId"] = session
        os.write(self.to_browser, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + 60
        while True:
            message = self._read(deadline)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                answer: dict[str, Any] = message.get("result", {})
                return answer
            self.events.append(message)

    def wait_for(self, method: str, session: str) -> None:
        deadline = time.monotonic() + 60
        while not any(
            e.get("method") == method and e.get("sessionId") == session for e in self.events
        ):
            self.events.append(self._read(deadline))


def open_page(page: Path, width: int = 1280, height: int = 2000) -> PageReport:
    """Load ``file://page`` in headless Chromium and report what happened."""
    return open_pages([page], width, height)[0]


def open_pages(pages: Sequence[Path], width: int = 1280, height: int = 2000) -> list[PageReport]:
    """Load each page in its own tab of one headless Chromium (one launch: launches are
    the slow part) and report what happened on each."""
    # The protocol wants descriptors 3 and 4 exactly. The child ends are moved above 10 so
    # they cannot be 3 or 4 themselves, then a tiny Python trampoline places them and execs
    # chromium (subprocess would close them again after a preexec_fn).
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    for name in ("to_r", "from_w"):
        fd = locals()[name]
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        if name == "to_r":
            to_r = high
        else:
            from_w = high
    trampoline = (
        f"import os, sys; os.dup2({to_r}, 3); os.dup2({from_w}, 4);"
        f" os.close({to_r}); os.close({from_w}); os.execv(sys.argv[1], sys.argv[1:])"
    )
    with tempfile.TemporaryDirectory() as profile:
        args = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        proc = subprocess.Popen(
            [sys.executable, "-c", trampoline, *args],
            pass_fds=(to_r, from_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in (to_r, from_w):
            os.close(fd)
        pipe = _Pipe(to_w, from_r)
        try:
            return [_drive(pipe, page, width, height) for page in pages]
        finally:
            with contextlib.suppress(EOFError, OSError, RuntimeError, TimeoutError):
                pipe.call("Browser.close")
            os.close(to_w)
            os.close(from_r)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _drive(pipe: _Pipe, page: Path, width: int, height: int) -> PageReport:
    target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
    session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        pipe.call(f"{domain}.enable", session)
    pipe.call(
        "Emulation.setDeviceMetricsOverride",
        session,
        width=width,
        height=height,
        deviceScaleFactor=1,
        mobile=False,
    )
    pipe.events.clear()
    pipe.call("Page.navigate", session, url=page.resolve().as_uri())
    pipe.wait_for("Page.loadEventFired", session)
    report = PageReport()
    for event in pipe.events:
        if event.get("sessionId") != session:  # a late event of an earlier tab
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.loadingFailed":
            report.failed_requests.append(f"{params.get('errorText')} {params.get('requestId')}")
        elif method == "Runtime.exceptionThrown":
            report.console_errors.append(str(params.get("exceptionDetails")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            report.console_errors.append(str(params.get("args")))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            report.console_errors.append(str(params["entry"].get("text")))
    value = pipe.call("Runtime.evaluate", session, expression=_IMAGES_JS, returnByValue=True)
    report.images = [tuple(i) for i in json.loads(value["result"]["value"])]
    shot = pipe.call("Page.captureScreenshot", session, format="png")
    report.screenshot = base64.b64decode(shot["data"])
    pipe.call("Target.closeTarget", targetId=target)
    return report
