"""Batcher: callers submit one item each and await its result; items submitted while a batch is
being processed go together into the next one.

The receiver's inbox commit costs mostly fixed overhead (a disk sync and a thread hand-over)
rather than work per item. Under load, batching turns N of those into one without delaying a lone
delivery: a batch starts as soon as the event loop is free, it never waits for company. (The Redis
push is arq's own `enqueue_job`, one call per delivery: arq's public API over a re-implementation.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


class Batcher(Generic[In, Out]):
    """Run `process` on batches of submitted items; one event loop per batcher."""

    def __init__(self, process: Callable[[list[In]], Awaitable[list[Out]]]) -> None:
        self._process = process
        self._pending: list[tuple[In, asyncio.Future[Out]]] = []
        self._runner: asyncio.Task[None] | None = None

    async def submit(self, item: In) -> Out:
        done: asyncio.Future[Out] = asyncio.get_running_loop().create_future()
        self._pending.append((item, done))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._drain())
        return await done

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                results = await self._process([item for item, _ in batch])
            except Exception:  # one bad item must not fail its neighbours: retry them one by one
                await self._one_by_one(batch)
                continue
            for (_, done), result in zip(batch, results, strict=True):
                if not done.done():
                    done.set_result(result)

    async def _one_by_one(self, batch: list[tuple[In, asyncio.Future[Out]]]) -> None:
        for item, done in batch:
            try:
                (result,) = await self._process([item])
            except Exception as exc:
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(result)
