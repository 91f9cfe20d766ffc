"""`forgebot tasks`: every task with its state, mode, duration, tokens, cost and link.

States, times and the issue come from the task store; tokens and cost from the task's last
checkpoint (the graph's own accounting), so the listing shows what the run actually spent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass
from typing import get_args

from bot.tasks.events import ForgeEvent, web_link
from bot.tasks.inbox import Inbox, TaskRow, TaskStatus, open_inbox
from bot.tasks.localruns import settle_lost
from foundation.settings import Settings


@dataclass(frozen=True)
class TaskLine:
    task: str
    state: str
    mode: str
    seconds: float
    tokens: int
    cost_usd: float
    link: str
    detail: str
    cost: str = ""  # as people read it: "$0.0123", "free", "no price" (`cost_text`)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("tasks", help="list tasks: state, mode, duration, tokens, cost, link")
    # a misspelt state listed nothing, as if there were no such tasks: argparse names the ones there are
    parser.add_argument("--state", action="append", choices=get_args(TaskStatus),
                        help="only tasks in this state (repeatable)")
    parser.add_argument("--limit", type=int, default=50, help="newest N tasks (0: all)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(handler=run)


async def collect(settings: Settings, states: list[str] | None = None, limit: int = 50) -> list[TaskLine]:
    inbox = await open_inbox(settings)
    try:
        await settle_lost(inbox)  # a `forgebot run` killed outright is not left `running` forever
        rows, times = await inbox.tasks(), await inbox.task_times()
        rows = [r for r in rows if not states or r.state in states]
        rows = rows[-limit:] if limit > 0 else rows
        spending = await _recorded(inbox, rows)
    finally:
        await inbox.close()
    live = [r for r in rows if r.task_id not in spending]
    if live:  # a running task's spending so far is in its checkpoint (the graph's store, loaded only then)
        from bot.tasks.checkpoints import open_checkpointer, spent

        async with open_checkpointer(settings) as saver:
            spending |= {r.task_id: await spent(saver, r.task_id) for r in live}
    now = time.time()
    return [_line(settings, r, times.get(r.task_id, (now, now)), spending[r.task_id], now) for r in rows]


async def _recorded(inbox: Inbox, rows: list[TaskRow]) -> dict[str, tuple[int, float, tuple[str, ...]]]:
    """What finished tasks spent, as the task store recorded it with their final state."""
    found: dict[str, tuple[int, float, tuple[str, ...]]] = {}
    for row in rows:
        item = await inbox.listed(row.task_id)
        if item is not None and (item.tokens or row.state == "queued"):
            found[row.task_id] = (item.tokens, item.cost_usd, item.unpriced)
    return found


def _line(
    settings: Settings, row: TaskRow, times: tuple[float, float], spent: tuple[int, float, tuple[str, ...]],
    now: float,
) -> TaskLine:
    from graph.runtime.accounting import cost_text

    created, updated = times
    end = now if row.state in ("queued", "running") else updated
    event = ForgeEvent.model_validate_json(row.event_json)
    return TaskLine(row.task_id, row.state, row.mode, round(end - created, 1), spent[0], spent[1],
                    row.link or web_link(settings, event), row.detail, cost_text(spent[1], spent[0], spent[2]))


def render(lines: list[TaskLine]) -> str:
    header = f"{'TASK':16}  {'STATE':9}  {'MODE':9}  {'TIME':>8}  {'TOKENS':>8}  {'COST':>8}  LINK"
    body = [
        f"{t.task:16}  {t.state:9}  {t.mode:9}  {_duration(t.seconds):>8}  {t.tokens:>8}  {t.cost:>8}  {t.link}"
        + (f"  ({t.detail})" if t.detail and t.state in ("failed", "cancelled") else "")
        for t in lines
    ]
    return "\n".join([header, *body]) + "\n"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def run(args: argparse.Namespace) -> int:
    lines = asyncio.run(collect(args.settings, args.state, args.limit))
    if args.json:
        sys.stdout.write("".join(json.dumps(asdict(t)) + "\n" for t in lines))
    else:
        sys.stdout.write(render(lines))
    return 0
