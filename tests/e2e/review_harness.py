"""Shared pieces of the review end-to-end tests: a change repository, the fake change, deliveries
over HTTP to the real receiver, and a burst worker on the real Redis with a scripted reviewer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from bot.intake.identity import Identities
from bot.intake.webhooks import github_signature
from bot.web.app import create_app
from bot.worker.jobs import build_worker
from foundation.forge.diff import parse
from foundation.gitrunner import git as git_text
from foundation.settings import Settings
from tests.fakes.forge_http import FakeChange, FakeFile, FakeForgeState
from tests.fakes.model_server import ScriptedModel, scripted
from tests.fakes.server import serving
from tests.graph.review.conftest import ChangeRepo
from tests.intake import deliveries
from tests.intake.payloads import github_comment, gitlab_note, serve_samples

BODY = "Doubles totals.\n\n## Acceptance criteria\n- Totals count each item twice\n- Runner keeps working\n"


def fake_change(repo: ChangeRepo, branch: str = "feature") -> FakeChange:
    """The change as the forge reports it: files and hunks from the real `git diff main...feature`."""
    files = []
    for part in parse(git_text(repo.root, "diff", "-M", repo.base, repo.head)):
        patch = part.text[part.text.index("\n@@") + 1:] if "\n@@" in part.text else ""
        files.append(FakeFile(old_path=part.old_path, new_path=part.path, status=part.status, patch=patch))
    return FakeChange(title="Double totals", body=BODY, source_branch=branch, files=files,
                      base_sha=repo.base, head_sha=repo.head, start_sha=repo.base)


class Models:
    """The scripted reviewer; any other role asked for fails the test (the coder is never entered)."""

    def __init__(self, replies: Sequence[AIMessage]) -> None:
        self.reviewer: ScriptedModel = scripted(replies)
        self.asked: list[str] = []

    def __call__(self, role: str) -> BaseChatModel:
        self.asked.append(role)
        if role != "reviewer":
            raise AssertionError(f"the review route asked for the {role} model")
        return self.reviewer


async def deliver(settings: Settings, forge: str, comment_id: int, clone_url: str) -> None:
    """Post a `/review` comment delivery to the real receiver over HTTP; expect 202."""
    if forge == "gitlab":
        payload: dict[str, Any] = gitlab_note("/review", on="change", id=comment_id)
        payload["project"].update(git_http_url=clone_url, default_branch="main")
        content = json.dumps(payload).encode()
        headers = {"x-gitlab-event": "Note Hook", "x-gitlab-token": deliveries.secret("gitlab", 5),
                   "idempotency-key": f"review-{comment_id}"}
    else:
        payload = github_comment("/review", on="change", id=comment_id)
        payload["repository"].update(clone_url=clone_url, default_branch="main")
        content = json.dumps(payload).encode()
        headers = {"x-github-event": "issue_comment", "x-github-delivery": f"review-{comment_id}",
                   "x-hub-signature-256": github_signature(deliveries.secret("github", 186853002).encode(), content)}
    with serving(create_app(settings)) as receiver:
        async with httpx.AsyncClient() as client:
            response = await client.post(receiver.url + deliveries.path(forge, content), content=content,
                                         headers={"content-type": "application/json", **headers})
    assert response.status_code == 202, response.text


async def work(settings: Settings, redis_url: str, models: Models) -> None:
    worker = build_worker(settings, redis_url, model_factory=models, burst=True, handle_signals=False,
                          identities=Identities(settings))  # as `forgebot worker`: the bot's identity first
    try:
        await worker.main()
    finally:
        await worker.close()
    assert worker.jobs_complete >= 1 and worker.jobs_failed == 0, (worker.jobs_complete, worker.jobs_failed)


def prepare(settings: Settings, redis_url: str, fake_forge: FakeForgeState, root: Path) -> None:
    settings.redis_url = redis_url
    settings.workspace.allowed_protocols = ("file",)
    fake_forge.grant("gitlab", "5", "1", 30)  # root (id 1), the note sample's author: Developer
    fake_forge.grant("github", "Codertocat/Hello-World", "Codertocat", "write")
    fake_forge.grant("gitlab", "5", "7", 30)  # the change's author (the fake's users are id 7): a member
    fake_forge.grant("github", "Codertocat/Hello-World", "alice", "write")
    assert root.is_dir()
    serve_samples(fake_forge, settings, clone_url=f"file://{root}", default_branch="main")
