"""Console page latency with 10,000 tasks in the store (one run; prints p50/p95 and the ratio to 200 ms).

Run from the repository root: PYTHONPATH=. .venv/bin/python tests/bench/bench_console.py [--tasks N]
Fills a fresh SQLite task store and checkpointer (what `forgebot serve` uses) with N tasks, each with a
checkpoint of a typical finished task's size, the sampled tasks with a full step history and a trace;
then serves `create_app` with uvicorn in this process's thread and asks for each page over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from langgraph.checkpoint.base import empty_checkpoint
from pydantic import SecretStr

from bot.console import links
from bot.tasks.checkpoints import open_checkpointer
from bot.tasks.inbox import Inbox
from bot.web.app import create_app
from foundation.settings import ConsoleSettings, Settings
from graph.runtime.trace import Trace
from tests.console.store import add_task, event
from tests.fakes.server import serving

BUDGET_MS = 200.0
ROUNDS = 60
STEPS = ("decomposer", "analyzer", "planner", "architect", "coder", "gates", "implement_reviewer", "delivery")
OPERATOR = "bench-operator-5e4d3c2b1a0f9e8d7c6b"


class _Queue:
    async def enqueue(self, event: object) -> bool:
        return False

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        return None


def _values(n: int) -> dict[str, Any]:
    roles = {r: {"calls": 6, "input": 9000, "output": 1200, "cost_usd": 0.004} for r in STEPS[:5]}
    return {
        "task_id": f"t{n}", "mode": "implement", "tokens": 51_000, "models": ["gpt-4o-mini"] * 30,
        "usage": {"tokens": 51_000, "cost_usd": 0.02, "unpriced": [], "roles": roles},
        "plan": {"items": [{"id": i, "title": f"item {i} " * 8, "status": "done"} for i in range(6)]},
        "gates": [{"name": g, "status": "passed", "mandatory": True, "detail": "ok " * 100} for g in ("lint", "test")],
        "review": {"verdict": "approve", "summary": "fine " * 50, "findings": [
            {"severity": "minor", "message": "naming " * 10, "path": "src/A.php", "line": 3}] * 4},
        "criteria": [{"id": i, "text": "criterion " * 12} for i in range(4)],
        "notes": {"fact": ["a fact " * 10] * 10, "path": ["src/A.php"] * 10},
    }


async def _fill(settings: Settings, count: int, sampled: list[int]) -> list[str]:
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    ids: list[str] = []
    try:
        for n in range(count):
            projects = ("1", "2", "3")
            state = ("done", "done", "done", "failed", "cancelled")[n % 5]
            item = event(n, project=projects[n % 3], path=f"group/app{n % 3}", mode=("implement", "analyze")[n % 2])
            ids.append(await add_task(inbox, item, state, "reported" if state == "done" else "RuntimeError"))
            await inbox.spent(ids[-1], 51_000, 0.02)  # as the worker records it with the final state
    finally:
        await inbox.close()
    async with open_checkpointer(settings) as saver:
        for n, task_id in enumerate(ids):
            steps = STEPS if n in sampled else STEPS[-1:]
            for step, node in enumerate(steps):
                values = _values(n)
                checkpoint = empty_checkpoint()
                checkpoint["channel_values"] = values
                checkpoint["channel_versions"] = dict.fromkeys(values, step + 1)
                checkpoint["updated_channels"] = [f"branch:to:{node}"]
                config = {"configurable": {"thread_id": task_id, "checkpoint_ns": ""}}
                await saver.aput(config, checkpoint, {"source": "loop", "step": step}, dict.fromkeys(values, step + 1))
    for n in sampled:
        trace = Trace.open(settings.data_dir, ids[n])
        for call in range(200):
            trace.event("tool", role="coder", name="read_file", args={"path": "src/A.php"}, status="ok",
                        bytes=1200, preview="<?php class A {} " * 5, call=call)
    return ids


def _measure(client: httpx.Client, path: str, **kwargs: Any) -> tuple[float, float]:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        response = client.get(path, **kwargs)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    count = parser.parse_args().tasks
    with tempfile.TemporaryDirectory() as work:
        settings = Settings(_env_file=None, _secrets_dir=None,  # type: ignore[call-arg]
                            data_dir=Path(work), console=ConsoleSettings(operator_token=SecretStr(OPERATOR)))
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        sampled = [count - 1, count // 2]
        started = time.perf_counter()
        ids = asyncio.run(_fill(settings, count, sampled))
        sys.stdout.write(f"filled {count} tasks in {time.perf_counter() - started:.1f} s" + "\n")
        auth = {"authorization": f"Bearer {OPERATOR}"}
        link = links.task_link(settings.console.model_copy(update={"public_url": "http://x"}), ids[sampled[0]])
        task_path = link.removeprefix("http://x")
        pages = [
            ("task list, page 1", "/console/tasks", auth),
            ("task list, filtered", "/console/tasks?state=failed&mode=implement&repo=gitlab:2", auth),
            ("task list, page 150", "/console/tasks?page=150", auth),
            ("task page (8 steps, 200 trace events)", task_path, {}),
            ("health", "/console/health", auth),
        ]
        with serving(create_app(settings, queue=_Queue())) as server, httpx.Client(base_url=server.url) as client:
            sys.stdout.write(f"{'page':40} {'p50 ms':>8} {'p95 ms':>8} {'p95 / 200 ms':>13}" + "\n")
            for name, path, headers in pages:
                p50, p95 = _measure(client, path, headers=headers)
                sys.stdout.write(f"{name:40} {p50:8.1f} {p95:8.1f} {p95 / BUDGET_MS:13.2f}" + "\n")


if __name__ == "__main__":
    main()
