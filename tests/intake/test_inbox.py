"""The durable inbox on real SQLite and real Postgres: dedupe, semantic keys, task states, sweeping."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.tasks.events import ForgeEvent, parse_github, parse_gitlab
from bot.tasks.inbox import CHECKPOINT_EVERY, Inbox
from foundation.settings import TriggerSettings
from tests.fakes.samples import sample
from tests.intake.payloads import github_comment, gitlab_note

TRIGGERS = TriggerSettings(analyze_label="Platform")


def label_event(delivery: str) -> ForgeEvent:
    event = parse_gitlab(
        {"x-gitlab-event": "Issue Hook"}, sample("gitlab/issue.labels-changed.json"), delivery, TRIGGERS
    )
    assert event is not None
    return event


def note_event(delivery: str, text: str, comment_id: int = 1241) -> ForgeEvent:
    event = parse_gitlab({"x-gitlab-event": "Note Hook"}, gitlab_note(text, id=comment_id), delivery, TRIGGERS)
    assert event is not None
    return event


async def test_delivery_id_is_remembered(inbox: Inbox) -> None:
    event = label_event("gitlab:a")
    first = await inbox.record("gitlab", "gitlab:a", "Issue Hook", event)
    assert (first.result, first.task_id) == ("accepted", event.task_id)
    again = await inbox.record("gitlab", "gitlab:a", "Issue Hook", event)
    assert again.result == "duplicate" and again.reason == "delivery id seen before"
    assert [(t.task_id, t.state, t.mode) for t in await inbox.tasks()] == [(event.task_id, "queued", "analyze")]


async def test_same_event_from_two_hooks_is_one_task(inbox: Inbox) -> None:
    # a group hook and a project hook: different Idempotency-Keys, the same event
    assert (
        await inbox.record("gitlab", "gitlab:group", "Issue Hook", label_event("gitlab:group"))
    ).result == "accepted"
    second = await inbox.record("gitlab", "gitlab:project", "Issue Hook", label_event("gitlab:project"))
    assert second.result == "duplicate" and second.reason == "same event through another hook"
    assert len(await inbox.tasks()) == 1


async def test_non_triggers_are_recorded_as_ignored(inbox: Inbox) -> None:
    assert (await inbox.record("github", "github:p", "ping", None)).result == "ignored"
    assert (await inbox.record("github", "github:p", "ping", None)).result == "duplicate"
    assert await inbox.deliveries() == [("github:p", "ignored", None)]


async def test_twenty_concurrent_records_make_one_task(inbox: Inbox) -> None:
    event = label_event("gitlab:burst")
    results = await asyncio.gather(*(inbox.record("gitlab", "gitlab:burst", "Issue Hook", event) for _ in range(20)))
    assert sorted(r.result for r in results) == ["accepted"] + ["duplicate"] * 19
    assert len(await inbox.tasks()) == 1


async def test_reply_counts_only_while_a_task_waits(inbox: Inbox) -> None:
    started = label_event("gitlab:start")
    await inbox.record("gitlab", "gitlab:start", "Issue Hook", started)
    reply = note_event("gitlab:r1", "Use the v2 endpoint.", comment_id=2001)
    assert reply.task_key != started.task_key  # the note sample is on issue 17 of project 5
    assert (await inbox.record("gitlab", "gitlab:r1", "Note Hook", reply)).result == "ignored"
    asked = note_event("gitlab:ask", "/analyze", comment_id=2002)
    await inbox.record("gitlab", "gitlab:ask", "Note Hook", asked)
    assert await inbox.claim(asked.task_id, asked.delivery_id) is not None
    assert await inbox.set_state(asked.task_id, "waiting", "need_info")
    answer = note_event("gitlab:r2", "Use the v2 endpoint.", comment_id=2003)
    intake = await inbox.record("gitlab", "gitlab:r2", "Note Hook", answer)
    assert (intake.result, intake.task_id) == ("accepted", asked.task_id)


async def test_cancel_counts_only_with_an_active_task(inbox: Inbox) -> None:
    cancel = note_event("gitlab:c1", "/cancel", comment_id=3001)
    assert (await inbox.record("gitlab", "gitlab:c1", "Note Hook", cancel)).result == "ignored"
    task = note_event("gitlab:t", "/implement", comment_id=3002)
    await inbox.record("gitlab", "gitlab:t", "Note Hook", task)
    again = note_event("gitlab:c2", "/cancel", comment_id=3003)
    assert (await inbox.record("gitlab", "gitlab:c2", "Note Hook", again)).task_id == task.task_id


async def test_one_running_task_per_item(inbox: Inbox) -> None:
    first, second = note_event("gitlab:1", "/implement", 11), note_event("gitlab:2", "/analyze", 12)
    for event in (first, second):
        await inbox.record("gitlab", event.delivery_id, "Note Hook", event)
    claimed = await inbox.claim(first.task_id, first.delivery_id)
    assert claimed is not None and claimed.state == "running"
    assert await inbox.claim(second.task_id, second.delivery_id) is None  # the partial unique index refuses it
    assert (await inbox.task(second.task_id)).state == "queued"  # type: ignore[union-attr]
    assert await inbox.claim(first.task_id, first.delivery_id) is None  # not queued any more
    await inbox.set_state(first.task_id, "done")
    assert await inbox.claim(second.task_id, second.delivery_id) is not None


async def test_set_state_respects_only_from(inbox: Inbox) -> None:
    event = note_event("gitlab:x", "/implement", 21)
    await inbox.record("gitlab", "gitlab:x", "Note Hook", event)
    assert await inbox.set_state(event.task_id, "cancelled", "by alice", only_from=("queued", "running"))
    assert not await inbox.set_state(event.task_id, "done", only_from=("running",))  # a finish never overrides a cancel
    row = await inbox.task(event.task_id)
    assert row is not None and (row.state, row.detail) == ("cancelled", "by alice")


async def test_unhandled_lists_accepted_rows_no_job_finished(tmp_path: Path) -> None:
    now = [1000.0]
    inbox = await Inbox.open(sqlite_path=tmp_path / "i.sqlite", clock=lambda: now[0])
    try:
        events = [note_event(f"gitlab:{n}", "/implement", 100 + n) for n in range(3)]
        for event in events:
            await inbox.record("gitlab", event.delivery_id, "Note Hook", event)
        await inbox.record("github", "github:ping", "ping", None)
        assert await inbox.unhandled(grace=10) == []  # still in flight
        now[0] += 60
        assert [p.delivery_id for p in await inbox.unhandled(grace=10)] == ["gitlab:0", "gitlab:1", "gitlab:2"]
        await inbox.handled("gitlab:0")
        await inbox.claim(events[1].task_id, events[1].delivery_id)  # running: its job is alive
        pending = await inbox.unhandled(grace=10)
        assert [p.delivery_id for p in pending] == ["gitlab:2"]
        assert ForgeEvent.model_validate_json(pending[0].event_json) == events[2]
    finally:
        await inbox.close()


async def test_dedupe_survives_72_hours_and_a_restart(tmp_path: Path) -> None:
    now = [1000.0]
    path = tmp_path / "i.sqlite"
    inbox = await Inbox.open(sqlite_path=path, clock=lambda: now[0])
    event = github_event("github:old")
    await inbox.record("github", "github:old", "issue_comment", event)
    await inbox.handled("github:old")
    await inbox.record("github", "github:ping", "ping", None)
    await inbox.close()
    now[0] += 71 * 3600
    reopened = await Inbox.open(sqlite_path=path, clock=lambda: now[0])
    try:
        assert await reopened.prune(keep_hours=1) is False  # never below 72 h, whatever is configured
        assert (await reopened.record("github", "github:old", "issue_comment", event)).result == "duplicate"
        now[0] += 2 * 3600
        assert await reopened.prune(keep_hours=72) is True
        assert [d[0] for d in await reopened.deliveries()] == ["github:old"]  # its task keeps it
    finally:
        await reopened.close()


def github_event(delivery: str) -> ForgeEvent:
    event = parse_github({"x-github-event": "issue_comment"}, github_comment("/implement"), delivery, TRIGGERS)
    assert event is not None
    return event


async def test_one_failing_record_does_not_fail_the_rest_of_its_group_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = await Inbox.open(sqlite_path=tmp_path / "i.sqlite")
    record = Inbox._record

    def flaky(self: Inbox, item: Any) -> Any:
        if item.delivery_id == "gitlab:bad":
            raise sqlite3.OperationalError("disk I/O error")
        return record(self, item)

    write = Inbox._write
    batches: list[int] = []

    def counted(self: Inbox, records: list[Any]) -> Any:
        batches.append(len(records))
        return write(self, records)

    monkeypatch.setattr(Inbox, "_record", flaky)
    monkeypatch.setattr(Inbox, "_write", counted)
    try:
        events = [note_event(f"gitlab:{name}", "/implement", 700 + n) for n, name in enumerate(["a", "bad", "c"])]
        results = await asyncio.gather(
            *(inbox.record("gitlab", e.delivery_id, "Note Hook", e) for e in events), return_exceptions=True
        )
        assert isinstance(results[1], sqlite3.OperationalError)
        assert [r.result for r in (results[0], results[2])] == ["accepted", "accepted"]  # type: ignore[union-attr]
        assert [d[0] for d in await inbox.deliveries()] == ["gitlab:a", "gitlab:c"]
        assert batches == [3, 1, 1, 1]  # one group commit, rolled back, then each alone
    finally:
        await inbox.close()


def _rows_in_database_file(path: Path) -> int:
    """Deliveries in the main file only: `immutable=1` makes SQLite ignore the WAL (and every lock, so a
    read while the checkpoint thread is writing the file can see it half written: not yet, -1)."""
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as db:
        try:
            return int(db.execute("SELECT count(*) FROM deliveries").fetchone()[0])
        except sqlite3.OperationalError:  # the table itself is still only in the WAL
            return 0
        except sqlite3.DatabaseError:  # "malformed": pages of a checkpoint in progress
            return -1


async def test_wal_is_checkpointed_on_a_thread_after_enough_commits(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    inbox = await Inbox.open(sqlite_path=path)
    try:
        for n in range(CHECKPOINT_EVERY - 1):
            await inbox.record("github", f"github:{n}", "ping", None)
        assert _rows_in_database_file(path) == 0  # commits never checkpoint by themselves
        await inbox.record("github", "github:last", "ping", None)
        for _ in range(100):
            if _rows_in_database_file(path) == CHECKPOINT_EVERY:
                break
            await asyncio.sleep(0.02)
        assert _rows_in_database_file(path) == CHECKPOINT_EVERY
    finally:
        await inbox.close()


async def test_a_github_task_keyed_by_name_is_rekeyed_by_repository_id(tmp_path: Path) -> None:
    """A store from before keys named the repository id: its GitHub tasks are found by the new key."""
    path = tmp_path / "old.sqlite"
    event = parse_github({"x-github-event": "issue_comment"}, github_comment("/implement"), "github:old", TRIGGERS)
    assert event is not None
    inbox = await Inbox.open(sqlite_path=path)
    await inbox.record("github", "github:old", "issue_comment", event)
    await inbox.claim(event.task_id, "job-1")
    await inbox.close()
    old_key = f"github:{event.repo.project}:issue:{event.number}"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE tasks SET task_key = ?", (old_key,))
    reopened = await Inbox.open(sqlite_path=path)
    try:
        found = await reopened.active_task(event.task_key)
        assert found is not None and found.task_id == event.task_id and found.task_key == event.task_key
        assert event.task_key == f"github:{event.repo_id}:issue:{event.number}" != old_key
    finally:
        await reopened.close()
