"""The install command's only way out: HTTPS tunnels (`CONNECT host:port`) to public addresses.

An install that a repository opts into network still runs in a network namespace of its own, with
nothing but loopback. Its init listens there and hands each accepted connection's socket to the
worker over a Unix socket pair (`SCM_RIGHTS`); this module answers it as an HTTP proxy (the command
sees `HTTPS_PROXY=http://127.0.0.1:<port>`, which composer, pip, npm and git honour). The worker
resolves the host itself and connects only to a global address — never loopback (the worker's
Redis, database, console), link-local (cloud metadata), private, shared or reserved ranges — on
the ports in `PORTS`, to the address it checked, so a name that resolves to both a public and an
internal address reaches only the public one. Everything else — plain HTTP, other ports, raw TCP,
DNS — has no route at all. An operator may name hosts (an internal package mirror) that may resolve
to private addresses (`private_hosts`); loopback, link-local and unspecified addresses stay refused
even for those.

Behind a mandatory corporate proxy (`foundation.proxy.HttpProxy`, the operator's `http://HOST:PORT`), a
tunnel to any other host is asked of that proxy, by name: its allow-lists name hosts, and it may
be the only one that resolves names outside. The worker still refuses what it can tell is internal:
an address that is not public, and a name this machine resolves to one (any of its addresses: the
proxy resolves it again, so no address can be pinned). A name this machine cannot resolve is the
proxy's to decide. The proxy's password goes only in the worker's own request to it: the install
sees only the worker's address.
"""

from __future__ import annotations

import ipaddress
import selectors
import socket
import threading
from contextlib import suppress

from foundation.proxy import HttpProxy

PORTS = frozenset({443, 80})
_HEAD_LIMIT = 8192
_CONNECT_SECONDS = 10.0
_IDLE_SECONDS = 300.0


class Egress:
    """Serves one command's tunnels while it runs; `refused` lists what it asked for and did not get.

    `upstream`: the operator's proxy URL, or None to connect directly (an unusable URL refuses every
    tunnel, saying why, rather than leave through some other way)."""

    def __init__(self, private_hosts: tuple[str, ...] = (), upstream: str | None = None) -> None:
        self._private_hosts = {host.lower().rstrip(".") for host in private_hosts}
        self._upstream: HttpProxy | None = None
        self._unusable = ""
        if upstream:
            try:
                self._upstream = HttpProxy.parse(upstream)
            except ValueError as exc:
                self._unusable = str(exc)
        self._ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.theirs.set_inheritable(True)
        self.refused: list[str] = []
        self.reached: list[str] = []
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def started(self) -> None:
        """The command holds its end now: the worker's copy must not keep the pair open."""
        self.theirs.close()

    def close(self) -> None:
        """Stop: no new tunnel, and every open one closed (the command has ended)."""
        with suppress(OSError):
            self._ours.shutdown(socket.SHUT_RDWR)
        self._ours.close()
        self.theirs.close()
        with self._lock:
            for sock in list(self._open):
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=2)

    def _receive(self) -> None:
        while True:
            try:
                _data, fds, _flags, _addr = socket.recv_fds(self._ours, 16, 8)
            except OSError:
                return
            if not fds:
                return  # the init exited: its end is closed
            for fd in fds:
                client = socket.socket(fileno=fd)
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        with self._lock:
            self._open.add(client)
        try:
            client.settimeout(_CONNECT_SECONDS)
            head, rest = _read_head(client)
            target, problem = _target(head)
            if problem:
                _answer(client, problem)
                return
            upstream, problem, early = self._connect(target)
            if upstream is None:
                _answer(client, problem)
                return
            with self._lock:
                self._open.add(upstream)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n" + early)
            if rest:
                upstream.sendall(rest)
            _relay(client, upstream)
        except OSError:
            pass
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with self._lock:
                        self._open.discard(sock)
                    sock.close()

    def _connect(self, target: tuple[str, int]) -> tuple[socket.socket | None, str, bytes]:
        """A tunnel's far end for `target` (and what it already sent), or None and the answer's reason."""
        host, port = target
        internal = host.lower().rstrip(".") in self._private_hosts
        if self._unusable:
            return None, self._refuse(f"{host}:{port} (the install proxy setting is unusable)",
                                      f"502 {self._unusable}"), b""
        if self._upstream is None or internal:  # an internal mirror is reached directly, never via the proxy
            return (*self._direct(host, port, internal), b"")
        return self._via(self._upstream, host, port)

    def _refuse(self, what: str, answer: str) -> str:
        with self._lock:
            self.refused.append(what)
        return answer

    def _direct(self, host: str, port: int, internal: bool) -> tuple[socket.socket | None, str]:
        """A connection to a global address of `host`, or None and the 403 reason."""
        name = f"{host}:{port}"
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return None, f"502 cannot resolve {host}: {exc.strerror or exc}"
        public = [info for info in infos if _is_public(str(info[4][0]), internal)]
        if not public:
            return None, self._refuse(f"{name} (not a public address)",
                                      f"403 {host} is not a public address: the install may reach only the internet")
        family, kind, proto, _name, address = public[0]
        upstream = socket.socket(family, kind, proto)
        upstream.settimeout(_CONNECT_SECONDS)
        try:
            upstream.connect(address)
        except OSError as exc:
            upstream.close()
            return None, f"502 cannot connect to {name}: {exc.strerror or exc}"
        with self._lock:
            self.reached.append(name)
        return upstream, ""

    def _via(self, proxy: HttpProxy, host: str, port: int) -> tuple[socket.socket | None, str, bytes]:
        """A tunnel through the operator's proxy, asked by name, unless `host` is known to be internal."""
        name = f"{host}:{port}"
        if _known_internal(host, port):
            return None, self._refuse(f"{name} (not a public address)", f"403 {host} is not a public address: "
                                      "the install may reach only the internet"), b""
        try:
            upstream = socket.create_connection((proxy.host, proxy.port), _CONNECT_SECONDS)
        except OSError as exc:
            # the proxy's own address stays out of what the install's failure (a merge request's gate) says
            return None, self._refuse(f"{name} (the install proxy did not answer)",
                                      f"502 cannot connect to the install proxy: {exc.strerror or exc}"), b""
        try:
            upstream.sendall(proxy.request(host, port))
            head, early = _read_head(upstream)
        except OSError as exc:
            upstream.close()
            return None, self._refuse(f"{name} (the install proxy failed: {exc.strerror or exc})",
                                      f"502 the install proxy failed: {exc.strerror or exc}"), b""
        status = head.split(b"\r\n", 1)[0].decode("latin-1", "replace")[:200]
        if status.split(" ")[1:2] != ["200"]:
            upstream.close()
            return None, self._refuse(f"{name} (the install proxy answered {status or 'nothing'})",
                                      f"502 the install proxy answered {status or 'nothing'}"), b""
        with self._lock:
            self.reached.append(f"{name} via the install proxy")
        return upstream, "", early


def _known_internal(host: str, port: int) -> bool:
    """Whether `host` is, or this machine resolves it to, an address that is not public (any of them)."""
    try:
        return not _is_public(host)
    except ValueError:
        pass  # a name, not an address
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return False  # a name only the proxy resolves: the proxy's to decide
    return any(not _is_public(str(info[4][0])) for info in infos)


def _is_public(address: str, internal: bool = False) -> bool:
    """Whether an address may be reached: globally routable, or for an `internal` host anything but
    loopback, link-local (cloud metadata), unspecified and multicast."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
        return False
    return internal or ip.is_global


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    """The request head (up to the blank line) and whatever arrived after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk:
            break
        data += chunk
        if len(data) > _HEAD_LIMIT:
            return b"", b""
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _target(head: bytes) -> tuple[tuple[str, int], str]:
    """`CONNECT host:port` → (host, port), or the error answer for anything else."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return ("", 0), "400 not an HTTP request"
    method, target = parts[0], parts[1]
    if method != "CONNECT":
        return ("", 0), "405 only HTTPS tunnels (CONNECT): plain HTTP is not proxied"
    host, _, port_text = target.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port_text.isdigit():
        return ("", 0), "400 CONNECT needs host:port"
    port = int(port_text)
    if port not in PORTS:
        return ("", 0), f"403 port {port} is not allowed (only {', '.join(map(str, sorted(PORTS)))})"
    return (host, port), ""


def _answer(client: socket.socket, status: str) -> None:
    body = status.split(" ", 1)[1].encode() + b"\n"
    head = f"HTTP/1.1 {status.split(' ', 1)[0]} {status.split(' ', 1)[1]}\r\n"
    head += f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with suppress(OSError):
        client.sendall(head.encode("latin-1", "replace") + body)


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until one side closes or both stay idle too long."""
    client.settimeout(None)
    upstream.settimeout(None)
    peers = {client: upstream, upstream: client}
    with selectors.DefaultSelector() as selector:
        for sock in peers:
            selector.register(sock, selectors.EVENT_READ)
        while True:
            events = selector.select(timeout=_IDLE_SECONDS)
            if not events:
                return
            for key, _ in events:
                source = key.fileobj
                assert isinstance(source, socket.socket)
                chunk = source.recv(65536)
                if not chunk:
                    return
                peers[source].sendall(chunk)
