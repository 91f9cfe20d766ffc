"""Fixtures of the attack tests: listeners standing in for the attacker's host."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest


@pytest.fixture
def attacker() -> Iterator[tuple[int, list[bytes]]]:
    """A listener standing in for the attacker's host: records whatever connects."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(1)
            try:
                received.append(conn.recv(65536) or b"<connected>")
            except OSError:
                received.append(b"<connected>")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join(2)
    server.close()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A bare listening socket (accepting is the test's): did a sandboxed command reach it at all?"""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.5)
        yield server


def accepted(server: socket.socket) -> bool:
    """Whether something connected to the `listener` within its timeout."""
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return False
    connection.close()
    return True
