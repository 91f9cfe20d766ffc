"""An operator's HTTP proxy given as a URL (`http://[user:password@]host:port`): parsed once, here.

The settings check it when they are read (`FORGEBOT_SANDBOX__INSTALL_PROXY`) and the install's egress
(`project.egress`) tunnels through it. Its password becomes a `Proxy-Authorization` header and is
never quoted in an error.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class HttpProxy:
    """The operator's proxy that tunnels leave through, and the `Proxy-Authorization` its URL gives."""

    host: str
    port: int
    authorization: str = ""

    @classmethod
    def parse(cls, url: str) -> HttpProxy:
        """`http://[user:password@]host:port`; ValueError (never quoting a password) for anything else."""
        parts = urlsplit(url.strip())
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme != "http" or not parts.hostname or port is None or parts.path not in ("", "/"):
            raise ValueError("an install proxy must be http://HOST:PORT (with USER:PASSWORD@ before the host when "
                             f"it asks for them), not {parts.scheme or 'no scheme'}://{parts.hostname or ''}…")
        authorization = ""
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            authorization = "Basic " + base64.b64encode(pair).decode()
        return cls(parts.hostname, port, authorization)

    def request(self, host: str, port: int) -> bytes:
        """The tunnel's request to the proxy: the target by name, with the credentials if any."""
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
        lines += [f"Proxy-Authorization: {self.authorization}"] if self.authorization else []
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
