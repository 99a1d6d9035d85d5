"""A fault-injecting HTTP proxy on 127.0.0.1, in front of the test S3 server or Azurite.

Clients are pointed at the proxy through ``AWS_ENDPOINT_URL`` like at any endpoint; it
forwards every request to moto unchanged, except those a :class:`Fault` matches: those get
a ``500 InternalError``, or a connection dropped half-way through the response body (a
read) or before any answer (a write). Faults fire a set number of times, so a test can make
a server flaky (the client must retry) or dead for one object (it must give up and say
which).

The one fault proxy of the suite: the publish and verify tests and the remote reader
tests share it.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["Fault", "FaultProxy", "fault_proxy"]

_ERROR_500 = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
)


@dataclass
class Fault:
    """Break requests whose method is *method* and whose path contains *path_part*.

    *kind* is ``"500"`` (answer 500), ``"drop"`` (a GET gets half its body and a closed
    connection; any other method gets its connection closed unanswered, unforwarded) or
    ``"hold"`` (no answer until the proxy stops: a client killed meanwhile never learns).
    *times* is how many matching requests to break (``-1``: all of them). With *suffix*
    the path must end with *path_part* (a plain key, not the parts of an upload to it).
    """

    method: str
    path_part: str
    kind: str = "500"
    times: int = 1
    suffix: bool = False
    fired: int = 0

    def matches(self, method: str, path: str) -> bool:
        found = path.endswith(self.path_part) if self.suffix else self.path_part in path
        if method != self.method or not found:
            return False
        return self.times < 0 or self.fired < self.times


@dataclass
class FaultProxy:
    """The running proxy: its endpoint, the faults to inject, and the requests seen."""

    endpoint: str
    faults: list[Fault] = field(default_factory=list)
    seen: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    def pick(self, method: str, path: str) -> Fault | None:
        with self.lock:
            self.seen.append((method, path))
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.fired += 1
                    return fault
        return None


def _handler(proxy: FaultProxy, upstream: str) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            assert "chunked" not in (self.headers.get("Transfer-Encoding") or "")
            body = self.rfile.read(length) if length else b""
            fault = proxy.pick(self.command, self.path)
            if fault is not None and fault.kind == "500":
                self._answer(500, _ERROR_500, {"Content-Type": "application/xml"})
                return
            if fault is not None and fault.kind == "hold":
                proxy.stopping.wait(60)
                self.close_connection = True
                return
            if fault is not None and fault.kind == "drop" and self.command != "GET":
                self.close_connection = True
                return
            host = target.hostname or "127.0.0.1"
            connection = http.client.HTTPConnection(host, target.port, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                dropped = {"connection", "transfer-encoding", "content-length"}
                if self.command == "HEAD":  # the size of the object, not of this empty body
                    dropped.discard("content-length")
                passed = {k: v for k, v in response.getheaders() if k.lower() not in dropped}
            finally:
                connection.close()
            if fault is not None and fault.kind == "drop":  # a GET: half the body, then gone
                self.send_response(response.status)
                for name, value in passed.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self._answer(response.status, data, passed)

        def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if self.command != "HEAD" or status >= 300:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Handler


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    """Run a proxy on a free loopback port in front of *upstream* (the moto endpoint)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    proxy = FaultProxy(endpoint=f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(proxy, upstream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()
