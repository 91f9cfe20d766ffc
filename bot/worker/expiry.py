"""Waiting tasks expire: a question nobody answers does not keep a task (or its issue) busy forever.

A task paused for an answer holds no worker, but it is the issue's active task: a new trigger would
be answered "busy". After `Settings.questions.wait_hours` without a reply the sweeper marks it
cancelled ("expired") and says so once in the thread, so a person knows to trigger it again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.tasks.events import ForgeEvent
from bot.tasks.inbox import Inbox
from foundation.forge import Forge, Marker, where_task_speaks

log = logging.getLogger(__name__)


async def expire_waiting(inbox: Inbox, forge_for: Callable[[ForgeEvent], Forge], wait_hours: float) -> int:
    """Cancel every task waiting longer than `wait_hours` and comment on its issue; returns how many."""
    expired = 0
    for task in await inbox.waiting_longer_than(wait_hours * 3600):
        if task.task_key.startswith("local:"):
            continue  # a `forgebot run` waits for `--answer` on the user's terminal, not in a thread
        reason = f"expired: no answer within {wait_hours:g} hours"
        if not await inbox.set_state(task.task_id, "cancelled", reason, only_from=("waiting",)):
            continue  # answered or cancelled meanwhile
        expired += 1
        event = ForgeEvent.model_validate_json(task.event_json)
        body = (f"No answer arrived within {wait_hours:g} hours, so task {task.task_id} has stopped. "
                f"Trigger it again to start over.\n\n<sub>forgebot · task {task.task_id}</sub>")
        try:
            target = where_task_speaks(event.repo, event.number, target=event.target, mode=event.mode or "")
            await forge_for(event).post_comment(target, body, Marker(task=task.task_id, purpose="expired"))
        except Exception:  # a courtesy note; the task is already cancelled in the store
            log.exception("expiry note not posted task=%s", task.task_id)
        log.info("task expired task=%s", task.task_id)
    return expired
