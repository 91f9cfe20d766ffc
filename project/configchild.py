"""`.forgebot.yml` validated in a child process, killed when it takes too long.

The receiver reads a repository's trigger labels from its `.forgebot.yml` before it answers a label
delivery. Validation is CPU work on text anyone with push access writes, and on the receiver's
event loop it stalled every project's webhooks and `/healthz` for 30-54 s (a 64 KB file of 8,000
invalid entries, whose error description grew quadratically); a timeout around synchronous work
cannot interrupt it, and a thread would still hold the interpreter. So the receiver hands the text
to one long-lived child process (`python -m project.configchild`) and awaits its answer: the
loop stays free, and a parse that outlasts its time kills the child, which really stops the work.

The child is started ahead of need (when the receiver starts, and again at once after a kill) and
says when it is ready; only the validation itself counts against the time limit. Starting a Python
with pydantic takes a fraction of a second on a quiet machine but several seconds on a busy one,
and counted against a 3 s limit it turned every repository's own labels into the server's
whenever the receiver's machine was loaded.

The child gets no secret (no `FORGEBOT_*` variable), limits its own address space, and answers
only the repository's labels (small, re-validated here). Requests and answers are one line of
JSON each; an answer past `MAX_ANSWER` bytes is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import sys
from typing import Any

from project.repoconfig import Labels, RepoConfigError, parse_repo_config

MEMORY_BYTES = 1024 * 1024 * 1024  # the child's address space: Python, pydantic and a 64 KiB file
MAX_ANSWER = 64 * 1024
# A child not ready by then is killed and the request refused (the server's labels apply). The child
# is normally ready long before a delivery needs it; this bounds the rare cold start after a kill so
# that the hook's answer still comes before the forges' 10 s webhook deadline.
START_SECONDS = 5.0
READY = b'{"ready": true}\n'


class ConfigChild:
    """A child process that validates `.forgebot.yml` texts one at a time, restarted after a kill."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._process: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Future[asyncio.subprocess.Process] | None = None
        self._lock = asyncio.Lock()

    def start(self) -> None:
        """Start the child in the background, so the first validation does not wait for it."""
        if self._starting is None and self._process is None:
            self._starting = asyncio.ensure_future(_start())
            self._starting.add_done_callback(_retrieved)

    async def labels(self, text: str, source: str) -> Labels:
        """The file's `labels`; `RepoConfigError` when it is invalid or took longer than the timeout.

        A caller that gives up does not stop a validation under way: it finishes (or is killed at its
        own timeout) for the callers queued behind it, instead of costing each of them a new child.
        """
        request = json.dumps({"text": text, "source": source}).encode() + b"\n"
        served = asyncio.ensure_future(self._serve(request, source))
        served.add_done_callback(_retrieved)
        answer = await asyncio.shield(served)
        if "error" in answer:
            raise RepoConfigError(str(answer["error"]))
        return Labels.model_validate(answer["labels"])

    async def _serve(self, request: bytes, source: str) -> dict[str, Any]:
        async with self._lock:
            try:
                process = await self._ready()
                return await asyncio.wait_for(self._exchange(process, request), self._timeout)
            except TimeoutError:
                await self._kill()
                raise RepoConfigError(f"`{source}` took longer than {self._timeout:g} s to validate") from None
            except BaseException:  # the child died or answered nonsense: its next answer would be this one's
                await self._kill()
                raise

    async def _ready(self) -> asyncio.subprocess.Process:
        """The running child, started (or its start awaited) outside the validation's time."""
        if self._process is not None and self._process.returncode is None:
            return self._process
        self._process = None
        self.start()
        starting, self._starting = self._starting, None
        assert starting is not None
        try:
            self._process = await asyncio.wait_for(asyncio.shield(starting), START_SECONDS)
        except TimeoutError:
            starting.add_done_callback(_killed)
            raise RepoConfigError(f"the configuration check did not start within {START_SECONDS:g} s") from None
        return self._process

    async def _exchange(self, process: asyncio.subprocess.Process, request: bytes) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(request)
        await process.stdin.drain()
        try:
            line = await process.stdout.readline()
            answer = json.loads(line) if line.endswith(b"\n") else None
        except ValueError:  # past the stream's limit, or not JSON
            answer = None
        if not isinstance(answer, dict) or not ("labels" in answer or "error" in answer):
            raise RepoConfigError("the configuration check stopped without an answer")
        return answer

    async def _kill(self, restart: bool = True) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()
        if restart:  # the next request finds a child ready, as the first one did
            self.start()

    async def close(self) -> None:
        async with self._lock:
            await self._kill(restart=False)
            starting, self._starting = self._starting, None
            if starting is not None:
                starting.cancel()
                with contextlib.suppress(asyncio.CancelledError, RepoConfigError, OSError):
                    await _killed_and_waited(await starting)


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a background outcome as seen, when nobody awaited it."""
    if not future.cancelled():
        future.exception()


def _killed(starting: asyncio.Future[asyncio.subprocess.Process]) -> None:
    """Kill a child whose start nobody waits for any more."""
    if not starting.cancelled() and starting.exception() is None and starting.result().returncode is None:
        starting.result().kill()


async def _killed_and_waited(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
    await process.wait()


async def _start() -> asyncio.subprocess.Process:
    """A child that has imported what it validates with and said so."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("FORGEBOT_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "project.configchild", env=env, limit=MAX_ANSWER + 2,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    try:
        line = await process.stdout.readline()
    except BaseException:
        await _killed_and_waited(process)
        raise
    if line != READY:
        await _killed_and_waited(process)
        raise RepoConfigError("the configuration check stopped without an answer")
    return process


def _answer(line: bytes) -> dict[str, Any]:
    request = json.loads(line)
    try:
        config = parse_repo_config(str(request["text"]), str(request["source"]))
    except RepoConfigError as exc:
        return {"error": str(exc)[:MAX_ANSWER // 2]}
    return {"labels": config.labels.model_dump()}


def main() -> None:
    """The child: one JSON request per line on stdin, one answer per line on stdout, until EOF."""
    with contextlib.suppress(ValueError, OSError):  # a platform that refuses still works, unlimited
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    for line in sys.stdin.buffer:
        sys.stdout.write(json.dumps(_answer(line)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
