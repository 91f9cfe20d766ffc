"""A repository file read through the forge is streamed and stopped at its size limit, on both forges.

The receiver reads `.forgebot.yml` for every label delivery with a 64 KiB limit; the adapters used to
download the whole file before comparing its size (a 40 MB file: +75 MB and past the look-up's
timeout). Here each adapter, with its real SDK client, reads from a server that streams a 100 MB
file and counts what it managed to send: the read fails with "larger than", and the server was
stopped long before the end (what is in flight in the sockets' buffers aside). A file that declares
its length is refused without being read.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import github
import pytest

from foundation.forge import ForgeError, RepoRef
from foundation.forge.github import GitHubForge
from foundation.forge.gitlab import GitLabClient, GitLabForge
from foundation.forge.protocol import Forge

TOTAL = 100 * 1024 * 1024
CHUNK = b"labels: " + b"x" * (64 * 1024 - 9) + b"\n"
LIMIT = 64 * 1024
# what can sit in the loopback sockets' buffers (the server's send buffer is kept small; the client's
# receive buffer grows to a few MB) when the client stops reading: far from the whole file
IN_FLIGHT = 24 * 1024 * 1024


@dataclass
class Served:
    """A file server that writes with blocking sends: `sent` is what the client's socket accepted."""

    declare: bool = False
    sent: int = 0
    listener: socket.socket = field(default_factory=lambda: socket.create_server(("127.0.0.1", 0)))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.listener.accept()
                with conn:
                    self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(65536) or b"\r\n\r\n"
        framing = f"Content-Length: {TOTAL}" if self.declare else "Transfer-Encoding: chunked"
        with contextlib.suppress(OSError):  # the client closed: it stopped reading
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n{framing}\r\n\r\n".encode())
            piece = CHUNK if self.declare else b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n"
            while self.sent < TOTAL:
                conn.sendall(piece)
                self.sent += len(CHUNK)
            if not self.declare:
                conn.sendall(b"0\r\n\r\n")


@pytest.fixture
def served() -> Iterator[Served]:
    state = Served()
    thread = threading.Thread(target=state.serve, daemon=True)
    thread.start()
    yield state
    with contextlib.suppress(OSError):
        state.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (close alone does not)
    state.listener.close()
    thread.join(5)


def _forge(kind: str, url: str) -> tuple[Forge, RepoRef]:
    if kind == "gitlab":
        client = GitLabClient(url, private_token="glpat-file-reads", timeout=30)
        return GitLabForge(client), RepoRef(forge="gitlab", project="1", path="group/app")
    hub = github.Github(auth=github.Auth.Token("ghp_file_reads"), base_url=url, timeout=30, retry=None)
    return GitHubForge(hub), RepoRef(forge="github", project="group/app", path="group/app")


@pytest.mark.parametrize("kind", ["gitlab", "github"])
async def test_a_huge_file_is_refused_before_it_is_downloaded(served: Served, kind: str) -> None:
    forge, repo = _forge(kind, served.url)
    with pytest.raises(ForgeError, match="larger than 65536 bytes"):
        await forge.read_file(repo, ".forgebot.yml", "main", LIMIT)
    assert served.sent < IN_FLIGHT, served.sent


@pytest.mark.parametrize("kind", ["gitlab", "github"])
async def test_a_declared_huge_file_is_refused_unread(served: Served, kind: str) -> None:
    served.declare = True
    forge, repo = _forge(kind, served.url)
    with pytest.raises(ForgeError, match="larger than 65536 bytes"):
        await forge.read_file(repo, ".forgebot.yml", "main", LIMIT)
    assert served.sent < IN_FLIGHT, served.sent
