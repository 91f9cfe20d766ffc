"""An outbound HTTP proxy on this machine, as operators run them: `CONNECT host:port`, then bytes.

Used where the product must go through one: git's network environment (`tests/bot/test_git_network.py`)
and an install's tunnels behind a mandatory corporate proxy (`tests/security/test_sandbox_host.py`).
"""

from __future__ import annotations

import base64
import socket
import threading


class ConnectProxy:
    """Answers CONNECT and records each request's head and target. With `credentials`, only a request
    carrying them as `Proxy-Authorization` gets through (407 otherwise). It tunnels to the target, or with
    `greet` answers through the tunnel itself (`HELLO <target>`: a machine without the internet). `routes`
    maps a target only it can resolve (`registry.corp.invalid:443`) to where it is served here."""

    def __init__(self, credentials: tuple[str, str] | None = None, greet: bool = False,
                 routes: dict[str, tuple[str, int]] | None = None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        port = self.listener.getsockname()[1]
        user = f"{credentials[0]}:{credentials[1]}@" if credentials else ""
        self.url = f"http://{user}127.0.0.1:{port}"
        self.expected = "Basic " + base64.b64encode(":".join(credentials).encode()).decode() if credentials else ""
        self.greet = greet
        self.routes = routes or {}
        self.heads: list[str] = []
        self.targets: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 8192:
            chunk = client.recv(4096)
            if not chunk:
                break
            head += chunk
        text = head.decode("latin-1")
        self.heads.append(text)
        method, target, _ = (text.split("\r\n", 1)[0].split(" ", 2) + ["", ""])[:3]
        if method != "CONNECT":
            client.close()
            return
        if self.expected and f"Proxy-Authorization: {self.expected}" not in text:
            client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
            client.close()
            return
        self.targets.append(target)
        if self.greet:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\nHELLO " + target.encode())
            client.close()
            return
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection(self.routes.get(target, (host, int(port))))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()
