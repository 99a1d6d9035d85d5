"""A small fault-injecting HTTP proxy on 127.0.0.1, in front of the test S3 server.

Clients point ``AWS_ENDPOINT_URL`` at the proxy; it forwards every request to moto and,
while a fault is armed for requests whose path contains a given text, answers them with a
500 or sends the headers and half the body and then drops the connection: the two ways a
real server fails mid-download.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["FaultProxy", "fault_proxy"]


@dataclass
class FaultProxy:
    """The proxy's endpoint and its armed faults (``kind`` is ``"500"`` or ``"drop"``)."""

    endpoint: str
    upstream: str
    faults: list[list[object]] = field(default_factory=list)  # [text, kind, remaining]
    injected: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, text: str, kind: str, times: int = 1_000_000) -> None:
        """Fail the next *times* GETs whose path contains *text* (default: all of them)."""
        with self.lock:
            self.faults.append([text, kind, times])

    def disarm(self) -> None:
        with self.lock:
            self.faults.clear()

    def take(self, method: str, path: str) -> str | None:
        with self.lock:
            for fault in self.faults:
                text, kind, remaining = fault
                if method == "GET" and str(text) in path and int(str(remaining)) > 0:
                    fault[2] = int(str(remaining)) - 1
                    self.injected += 1
                    return str(kind)
        return None


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    up = urlsplit(proxy.upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            fault = proxy.take(self.command, self.path)
            if fault == "500":
                payload = b"<Error><Code>InternalError</Code></Error>"
                self.send_response(500)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            conn = http.client.HTTPConnection(up.hostname or "127.0.0.1", up.port, timeout=30)
            try:
                conn.request(self.command, self.path, body=body, headers=dict(self.headers))
                response = conn.getresponse()
                data = response.read()
            finally:
                conn.close()
            self.send_response(response.status)
            head = self.command == "HEAD"  # keeps the object's length, sends no body
            for name, value in response.getheaders():
                if name.lower() in ("transfer-encoding", "connection"):
                    continue
                if name.lower() != "content-length" or head:
                    self.send_header(name, value)
            if not head:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if fault == "drop" and len(data) > 1:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

    return Handler


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    """Run a proxy on a free loopback port in front of *upstream*; stop it on exit."""
    proxy = FaultProxy(endpoint="", upstream=upstream)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    server.daemon_threads = True
    proxy.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
