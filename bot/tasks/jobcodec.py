"""How arq's job and result records are written to Redis: JSON only, never pickle.

arq pickles by default. Pickle in the queue means anyone who can write to Redis runs code in every
worker, and a pickled exception carries whatever it holds: a model client's error keeps the
request, `authorization: Bearer …` header included, for as long as arq keeps the result.

`JobCodec` is given to every arq object that reads or writes those records (the pool in
`bot.tasks.queue`, the `Worker` in `bot.worker.jobs`, each `Job` handle). Its `dumps` writes plain JSON and
reduces an exception to its type name and a redacted, shortened message; any other value JSON
cannot hold is refused (arq then stores "unable to serialize result"). Its `loads` accepts only a
JSON object, so a pickle written into the queue is a failed job, never code that runs. Reading a
stored failure back builds a `JobFailed` (or `asyncio.CancelledError` for an aborted job, which is
what `Job.abort` waits for): data, never an instance of a class named by the record.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

ERROR_KEY = "__error__"
MESSAGE_LIMIT = 500
_CANCELLED = "CancelledError"


class JobFailed(RuntimeError):
    """A job's stored failure: the exception's type name and its redacted message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind, self.message = kind, message


class JobCodec:
    """arq's `job_serializer` / `job_deserializer` pair; `secrets` are also removed from messages."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = tuple(s for s in secrets if s)

    def dumps(self, data: dict[str, Any]) -> bytes:
        return json.dumps(data, default=self._plain, separators=(",", ":")).encode()

    def loads(self, raw: bytes) -> dict[str, Any]:
        data = json.loads(raw)  # a pickle (or anything not JSON) raises here: arq fails the job
        if not isinstance(data, dict):
            raise ValueError("a job record is a JSON object")
        if isinstance(data.get("a"), list):
            data["a"] = tuple(data["a"])  # arq's records hold the arguments as a tuple
        if isinstance(data.get("r"), dict) and ERROR_KEY in data["r"]:
            data["r"] = _failure(data["r"])
        return data

    def _plain(self, value: object) -> Any:
        if isinstance(value, BaseException):
            return {ERROR_KEY: type(value).__name__, "message": self.reduce(value)}
        raise TypeError(f"{type(value).__name__} is not stored in Redis")

    def reduce(self, exc: BaseException) -> str:
        """The exception's message without credentials, at most `MESSAGE_LIMIT` characters."""
        from foundation.redact import redact  # only a worker stores exceptions: the receiver never imports graph

        return redact(str(exc), self._secrets)[:MESSAGE_LIMIT]


def _failure(record: dict[str, Any]) -> BaseException:
    kind, message = str(record.get(ERROR_KEY, "")), str(record.get("message", ""))
    if kind == _CANCELLED:
        return asyncio.CancelledError(message)
    return JobFailed(kind, message)


PLAIN = JobCodec()  # for processes that never store an exception (the receiver, tests, CLIs)
