"""End to end on GitLab: a label delivery over HTTP → worker → the reaction on the issue and ONE status
note, posted once and edited in place at each phase through the real python-gitlab client."""

from __future__ import annotations

import httpx

from bot.web.app import create_app
from foundation.settings import Settings
from tests.e2e.conftest import allow_http_git, pointed_at
from tests.e2e.test_analyze_skeleton import _models, _run_worker
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.samples import sample_bytes
from tests.fakes.server import serving
from tests.intake import deliveries


async def _deliver(settings: Settings, origin_url: str) -> None:
    body = pointed_at(sample_bytes("gitlab/issue.labels-changed.json"), origin_url)
    headers = {"content-type": "application/json", "x-gitlab-event": "Issue Hook",
               "x-gitlab-token": deliveries.secret("gitlab", 1),
               "idempotency-key": "5b1f0c1e-00df-429c-9bc9-a9475de2efe4"}
    with serving(create_app(settings)) as receiver:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{receiver.url}/webhooks/gitlab/1", content=body, headers=headers)
    assert response.status_code == 202


async def test_gitlab_label_gets_a_reaction_and_one_status_note_edited_in_place(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str
) -> None:
    settings.redis_url = redis_url
    allow_http_git(settings)
    settings.triggers.analyze_label = "Platform"  # the sample adds "Platform"
    fake_forge.members[("gitlab", "1", "7")] = "30"
    fake_forge.grant("gitlab", "1", "1", 30)  # the sample's actor, root (id 1), is a Developer
    issue = FakeIssue(title="New API: create/update/delete file", body="...")
    fake_forge.add_issue("gitlab", "1", 23, issue)
    await _deliver(settings, origin_url)
    await _run_worker(settings, redis_url, _models())
    assert issue.reactions == ["eyes"]
    everything = fake_forge.comments_on("gitlab", "1", 23, status=True)
    (note,) = [c for c in everything if ":purpose=status -->" in c.body]
    assert note.body.startswith("**Status: done (reported)**")
    assert "mode analyze" in note.body and "420 tokens" in note.body  # the footer, after the run
    assert len(everything) == 2  # the status note and the report: never a stream of new comments
    # posted once, then one edit per phase (understanding, investigating, publishing) and the final state
    assert fake_forge.requests_to("PUT", f"/issues/23/notes/{note.id}") == 4
