"""Serve an ASGI app with a real uvicorn in a background thread, on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerThread:
    def __init__(self, app: Any, tls: tuple[Path, Path] | None = None) -> None:
        """`tls`: (certificate chain, key) files to serve HTTPS with."""
        # the socket is bound here, on port 0, and handed to uvicorn: no window in which another
        # test (or xdist worker) could take the port between choosing it and listening on it. Its
        # protocol is named: asyncio turns Nagle off only on sockets whose `proto` is TCP, and with
        # Nagle on, every response's body waited for the client's delayed ACK of its headers (40 ms
        # a request, measured; a task makes dozens of forge requests)
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.socket.bind(("127.0.0.1", 0))
        self.port = int(self.socket.getsockname()[1])
        certificate, key = tls or (None, None)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on",
                                ssl_certfile=certificate, ssl_keyfile=key)
        self.scheme = "https" if tls else "http"
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()


@contextlib.contextmanager
def serving(app: Any, tls: tuple[Path, Path] | None = None) -> Iterator[ServerThread]:
    server = ServerThread(app, tls)
    server.start()
    try:
        yield server
    finally:
        server.stop()
