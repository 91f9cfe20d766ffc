"""Tasks written into the task store the way intake writes them, for tests that need many rows."""

from __future__ import annotations

from bot.tasks.events import Actor, ForgeEvent, RepoRef
from bot.tasks.inbox import Inbox, TaskStatus


def event(number: int, *, forge: str = "gitlab", project: str = "1", path: str = "group/app",
          mode: str = "analyze") -> ForgeEvent:
    return ForgeEvent(
        forge=forge, delivery_id=f"{forge}:{project}:delivery-{number}",  # type: ignore[arg-type]
        repo=RepoRef(forge=forge, project=project, path=path),  # type: ignore[arg-type]
        target="issue", number=number, actor=Actor(id=7, username="dev"), trigger="label",
        mode=mode,  # type: ignore[arg-type]
        title=f"Issue {number}", state=f"label-{number}",
    )


async def add_task(inbox: Inbox, item: ForgeEvent, state: TaskStatus = "done", detail: str = "") -> str:
    intake = await inbox.record(item.forge, item.delivery_id, "Issue Hook", item)
    assert intake.result == "accepted" and intake.task_id
    if state != "queued":
        await inbox.set_state(intake.task_id, state, detail)
    return intake.task_id
