"""`.forgebot.yml` validated in a child process, killed when it takes too long.

The receiver reads a repository's trigger labels from its `.forgebot.yml` before it answers a label
delivery. Validation is CPU work on text anyone with push access writes, and on the receiver's
event loop it stalled every project's webhooks and `/healthz` for 30-54 s (a 64 KB file of 8,000
invalid entries, whose error description grew quadratically); a timeout around synchronous work
cannot interrupt it, and a thread would still hold the interpreter. So the receiver hands the text
to one long-lived child process (`python -m project.configchild`) and awaits its answer: the
loop stays free, and a parse that outlasts its time kills the child, which really stops the work;
the next request starts a new one.

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


class ConfigChild:
    """A child process that validates `.forgebot.yml` texts one at a time, restarted after a kill."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

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
                return await asyncio.wait_for(self._exchange(request), self._timeout)
            except TimeoutError:
                await self._kill()
                raise RepoConfigError(f"`{source}` took longer than {self._timeout:g} s to validate") from None
            except BaseException:  # the child died or answered nonsense: its next answer would be this one's
                await self._kill()
                raise

    async def _exchange(self, request: bytes) -> dict[str, Any]:
        process = self._process if self._process is not None and self._process.returncode is None else None
        if process is None:
            process = self._process = await _start()
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

    async def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()

    async def close(self) -> None:
        async with self._lock:
            await self._kill()


def _retrieved(served: asyncio.Future[dict[str, Any]]) -> None:
    """Mark a validation's outcome as seen, when its caller gave up before it ended."""
    if not served.cancelled():
        served.exception()


async def _start() -> asyncio.subprocess.Process:
    env = {key: value for key, value in os.environ.items() if not key.startswith("FORGEBOT_")}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "project.configchild", env=env, limit=MAX_ANSWER + 2,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )


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
    for line in sys.stdin.buffer:
        sys.stdout.write(json.dumps(_answer(line)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
