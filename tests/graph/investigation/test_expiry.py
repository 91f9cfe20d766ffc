"""A task waiting for an answer expires after the configured time, with one comment; /cancel stops it."""

from __future__ import annotations

from pathlib import Path

from bot.tasks.events import parse_gitlab
from bot.tasks.inbox import Inbox
from bot.worker.expiry import expire_waiting
from foundation.forge import IssueRef
from foundation.settings import TriggerSettings
from tests.fakes.forge import FakeForge
from tests.intake.payloads import gitlab_note


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def _waiting_task(inbox: Inbox) -> tuple[str, IssueRef]:
    headers = {"x-gitlab-event": "Note Hook"}
    event = parse_gitlab(headers, gitlab_note("/analyze", id=77), "gitlab:77", TriggerSettings())
    assert event is not None
    await inbox.record("gitlab", event.delivery_id, "Note Hook", event)
    assert await inbox.claim(event.task_id, event.delivery_id) is not None
    assert await inbox.set_state(event.task_id, "waiting", "need_info")
    return event.task_id, IssueRef(repo=event.repo, number=event.number)


async def test_a_waiting_task_expires_after_the_configured_hours_with_one_comment(tmp_path: Path) -> None:
    clock, forge = Clock(), FakeForge()
    inbox = await Inbox.open(sqlite_path=tmp_path / "inbox.sqlite", clock=clock)
    try:
        task_id, issue = await _waiting_task(inbox)
        clock.now += 2 * 3600 - 1
        assert await expire_waiting(inbox, lambda kind: forge, wait_hours=2) == 0  # not yet
        assert (await inbox.task(task_id)).state == "waiting"  # type: ignore[union-attr]
        clock.now += 2
        assert await expire_waiting(inbox, lambda kind: forge, wait_hours=2) == 1
        row = await inbox.task(task_id)
        assert row is not None and (row.state, row.detail) == ("cancelled", "expired: no answer within 2 hours")
        assert await expire_waiting(inbox, lambda kind: forge, wait_hours=2) == 0  # said once
        (note,) = forge.comments[issue]
        assert "No answer arrived within 2 hours" in note and task_id in note
        assert await inbox.active_task(row.task_key) is None  # the issue is free for a new trigger
    finally:
        await inbox.close()


async def test_a_cancelled_waiting_task_no_longer_takes_replies(tmp_path: Path) -> None:
    inbox = await Inbox.open(sqlite_path=tmp_path / "inbox.sqlite")
    try:
        task_id, _ = await _waiting_task(inbox)
        assert await inbox.set_state(task_id, "cancelled", "cancelled by root", only_from=("waiting",))
        reply = parse_gitlab({"x-gitlab-event": "Note Hook"}, gitlab_note("Integers.", id=78), "gitlab:78",
                             TriggerSettings())
        assert reply is not None and reply.trigger == "reply"
        assert (await inbox.record("gitlab", reply.delivery_id, "Note Hook", reply)).result == "ignored"
        assert await expire_waiting(inbox, lambda kind: FakeForge(), wait_hours=0.0001) == 0
    finally:
        await inbox.close()
