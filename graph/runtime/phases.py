"""The steps of a task before its graph runs (authorize, mirror, worktree, index, memory), timed and traced.

A task can spend a minute cloning and indexing before its first node, and it can fail there. Each
such step writes one `phase` event to the task's trace (its start, seconds and whether it
failed), so the console draws it on the timeline beside the graph's nodes and groups the trace
under it; `Phases.current` says which step was running when an error escaped, for the failure record.

The step functions (`graph.checkout.prepare`, the implement workspace, `forgebot run`'s worktree)
mark their steps with `async with step("mirror"):`, which finds the task's `Phases` through a
context variable: their signatures stay the same, and outside a task a step is only a block.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from pathlib import Path

from graph.runtime.trace import Trace

GRAPH = "graph"  # the phase once the graph runs; the failing node refines it

_CURRENT: ContextVar[Phases | None] = ContextVar("forgebot_phases", default=None)


class Phases:
    """One task's pre-graph steps: which one runs now, each traced when it ends."""

    def __init__(self, data_dir: Path, task_id: str) -> None:
        self.data_dir, self.task_id = data_dir, task_id
        self.current = ""

    @contextlib.contextmanager
    def active(self) -> Iterator[Phases]:
        """Make this the task's phases for the code run inside the block (threads included)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    @contextlib.asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[None]:
        self.current = name
        started = time.time()
        try:
            yield
        except BaseException:
            self._trace(name, started, "failed")
            raise
        self._trace(name, started, "ok")

    def _trace(self, name: str, started: float, status: str) -> None:
        seconds = round(time.time() - started, 3)
        Trace.open(self.data_dir, self.task_id).event("phase", phase=name, start=round(started, 3), seconds=seconds,
                                                      status=status)


@contextlib.asynccontextmanager
async def step(name: str) -> AsyncIterator[None]:
    """Time and trace the block as the task's step `name` (only a block outside a task)."""
    phases = _CURRENT.get()
    if phases is None:
        yield
        return
    async with phases.step(name):
        yield
