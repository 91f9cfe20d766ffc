"""The repository a task acts on comes from the forge's API, never from the payload.

Everything runs through the real receiver over HTTP, a real burst arq worker on a real Redis, the
real python-gitlab / PyGithub adapters against the fake forge, and real git against a real
`git http-backend` that demands the bot's token. The attacker's host is a plain socket listener:
it must see no connection at all.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from foundation.settings import Settings
from tests.conftest import GITHUB_TOKEN, GITLAB_TOKEN
from tests.e2e.conftest import post, task_states, work
from tests.e2e.test_analyze_skeleton import _models
from tests.fakes.forge_http import FakeForgeState, FakeIssue, FakeProject
from tests.fakes.git_http import create_git_server
from tests.fakes.samples import sample
from tests.fakes.server import ServerThread, serving
from tests.graph.conftest import FIXTURES, init_repo
from tests.intake import deliveries

Listener = tuple[int, list[bytes]]
GITLAB_LABEL = sample("gitlab/issue.labels-changed.json")  # project 1 gitlabhq/gitlab-test, issue 23, "Platform"
GITHUB_LABEL = sample("github/issues.labeled.json")  # repository 186853002 Codertocat/Hello-World, issue 1, "bug"
OTHER_ID = {"gitlab": 66, "github": 990066}  # the attacker's own project, on the same forge


@pytest.fixture
def git_server(tmp_path: Path, settings: Settings) -> Iterator[tuple[ServerThread, dict[str, str]]]:
    """The forge's git host: the PHP fixture as `victim.git` and `other.git`, demanding the bot's token."""
    work_tree = init_repo(shutil.copytree(FIXTURES / "php_project", tmp_path / "work"))
    served = tmp_path / "served"
    served.mkdir()
    for name in ("victim", "other"):
        subprocess.run(["git", "clone", "-q", "--bare", str(work_tree), str(served / f"{name}.git")], check=True)
        subprocess.run(["git", "-C", str(served / f"{name}.git"), "branch", "master", "main"], check=True)
    app = create_git_server(served, None)  # the token is checked by the test, per forge
    with serving(app) as server:
        settings.workspace.git_hosts = (server.url,)  # the git server is not the fake API's port
        settings.workspace.allowed_protocols = ("http",)
        yield server, {"seen": app.state.seen}  # type: ignore[dict-item]


def _seen(git: tuple[ServerThread, dict[str, Any]]) -> list[dict[str, str]]:
    seen: list[dict[str, str]] = git[1]["seen"]
    return seen


def _setup(settings: Settings, redis_url: str, fake_forge: FakeForgeState, forge: str, git_url: str) -> None:
    settings.redis_url = redis_url
    settings.triggers.analyze_label = "Platform" if forge == "gitlab" else "bug"
    if forge == "gitlab":
        fake_forge.add_project("gitlab", FakeProject(id=1, path="gitlabhq/gitlab-test",
                                                     clone_url=f"{git_url}/victim.git", default_branch="master"))
        fake_forge.add_project("gitlab", FakeProject(id=OTHER_ID["gitlab"], path="mallory/other",
                                                     clone_url=f"{git_url}/other.git", default_branch="master"))
        for project in ("1", str(OTHER_ID["gitlab"])):
            fake_forge.grant("gitlab", project, "1", 30)  # root, who labels, is a Developer of both
            fake_forge.grant("gitlab", project, "7", 30)  # the fake's issue author
        fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="New API", body="..."))
        fake_forge.add_issue("gitlab", str(OTHER_ID["gitlab"]), 23, FakeIssue(title="New API", body="..."))
    else:
        fake_forge.add_project("github", FakeProject(id=186853002, path="Codertocat/Hello-World",
                                                     clone_url=f"{git_url}/victim.git", default_branch="master"))
        fake_forge.add_project("github", FakeProject(id=OTHER_ID["github"], path="mallory/other",
                                                     clone_url=f"{git_url}/other.git", default_branch="master"))
        for project in ("Codertocat/Hello-World", "mallory/other"):
            fake_forge.grant("github", project, "Codertocat", "write")
            fake_forge.grant("github", project, "alice", "write")  # the fake's issue author
        fake_forge.add_issue("github", "Codertocat/Hello-World", 1, FakeIssue(title="Spelling", body="..."))


def _label(forge: str, rewrite: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """The label sample with `rewrite` applied to its project (GitLab) or repository (GitHub)."""
    payload = json.loads(json.dumps(GITLAB_LABEL if forge == "gitlab" else GITHUB_LABEL))
    payload["project" if forge == "gitlab" else "repository"].update(rewrite)
    if forge == "gitlab":
        payload["repository"].update({k: v for k, v in rewrite.items() if k in ("url", "homepage", "name")})
        return deliveries.gitlab(payload, "Issue Hook")
    return deliveries.github(payload, "issues")


def _bot_auth(forge: str) -> str:
    pair = f"oauth2:{GITLAB_TOKEN}" if forge == "gitlab" else f"x-access-token:{GITHUB_TOKEN}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_payload_urls_pointing_at_another_host_reach_nothing(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, git_server: Any, attacker: Listener,
    forge: str,
) -> None:
    """Every URL in a signed payload names the attacker's host, which is even listed as a git host
    (so the credential guard would let the token through): the worker clones from the URL the
    forge's API gives, the listener sees no connection, and the task completes on the real repo."""
    port, received = attacker
    evil = f"http://127.0.0.1:{port}"
    settings.workspace.git_hosts = (*settings.workspace.git_hosts, evil)  # the worst case: guard disarmed
    _setup(settings, redis_url, fake_forge, forge, git_server[0].url)
    urls = ({"git_http_url": f"{evil}/victim.git", "git_ssh_url": f"{evil}/victim.git", "web_url": evil,
             "url": f"{evil}/victim.git", "homepage": evil, "http_url": f"{evil}/victim.git", "default_branch": "evil"}
            if forge == "gitlab" else
            {"clone_url": f"{evil}/victim.git", "git_url": f"{evil}/victim.git", "html_url": evil, "url": evil,
             "svn_url": evil, "default_branch": "evil"})
    assert await post(settings, forge, *_label(forge, urls)) == 202
    await work(settings, _models())
    assert await task_states(settings) == [("done", "reported")]
    assert received == []  # nothing connected to the attacker's host
    fetched = [h for h in _seen(git_server) if h.get("authorization") == _bot_auth(forge)]
    assert fetched, "the repository was fetched from the forge's own clone URL, with the token"
    project, number = ("1", 23) if forge == "gitlab" else ("Codertocat/Hello-World", 1)
    (report,) = fake_forge.comments_on(forge, project, number)
    assert "### Analysis" in report.body


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_an_allowed_path_beside_another_projects_id_is_refused(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, git_server: Any, forge: str
) -> None:
    """Mallory maintains her own project and knows its hook secret. Her payload names the allowed
    project's path with her project's id: the id resolves to her project, whose path is not the one
    claimed, so the task is refused: nothing is cloned, pushed or commented anywhere."""
    allowed = "gitlabhq/gitlab-test" if forge == "gitlab" else "Codertocat/Hello-World"
    settings.intake.allowed_projects = [allowed]
    _setup(settings, redis_url, fake_forge, forge, git_server[0].url)
    claim = {"id": OTHER_ID[forge], "path_with_namespace" if forge == "gitlab" else "full_name": allowed}
    body, headers = _label(forge, claim)
    assert deliveries.path(forge, body).endswith(f"/{OTHER_ID[forge]}")  # her own hook URL and secret
    assert await post(settings, forge, body, headers) == 202
    await work(settings, _models())
    ((state, detail),) = await task_states(settings)
    assert state == "cancelled" and "refused: repository:" in detail and "mallory/other" in detail
    assert _seen(git_server) == []  # nothing fetched, nothing pushed
    assert not (settings.data_dir / "workspaces" / "mirrors").exists() or not any(
        (settings.data_dir / "workspaces" / "mirrors").iterdir())
    assert all(not fake_forge.comments_on(f, p, n, status=True) for (f, p, n) in fake_forge.issues)
    assert fake_forge.requests_to("POST", "/notes") + fake_forge.requests_to("POST", "/comments") == 0


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_the_allow_list_compares_the_resolved_project_not_the_payload(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, git_server: Any, forge: str
) -> None:
    """Her payload is consistent (her id, her path) but her project is not in the allow-list: refused
    by the resolved identity; the allowed project still runs when it is the one delivering."""
    settings.intake.allowed_projects = ["gitlabhq/gitlab-test" if forge == "gitlab" else "186853002"]
    _setup(settings, redis_url, fake_forge, forge, git_server[0].url)
    name = "path_with_namespace" if forge == "gitlab" else "full_name"
    assert await post(settings, forge, *_label(forge, {"id": OTHER_ID[forge], name: "mallory/other"})) == 202
    await work(settings, _models())
    ((state, detail),) = await task_states(settings)
    assert state == "cancelled" and "not in the allow-list" in detail
    assert _seen(git_server) == []
    assert await post(settings, forge, *_label(forge, {})) == 202  # the allowed project itself
    await work(settings, _models())
    assert sorted(s for s, _ in await task_states(settings)) == ["cancelled", "done"]


async def test_a_clone_url_the_forge_answers_on_another_host_is_refused(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, git_server: Any, attacker: Listener
) -> None:
    """Defence in depth: even the forge's own answer is checked. A project whose API record points
    its clone URL at another host (misconfiguration, a compromised mirror setting) is refused before
    git runs: the listener sees nothing and the task is cancelled with the reason."""
    port, received = attacker
    _setup(settings, redis_url, fake_forge, "gitlab", git_server[0].url)
    fake_forge.add_project("gitlab", FakeProject(id=1, path="gitlabhq/gitlab-test",
                                                 clone_url=f"http://127.0.0.1:{port}/victim.git"))
    assert await post(settings, "gitlab", *_label("gitlab", {})) == 202
    await work(settings, _models())
    ((state, detail),) = await task_states(settings)
    assert state == "cancelled" and "not the configured forge" in detail
    assert received == [] and _seen(git_server) == []


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_a_cancel_naming_the_victims_project_beside_another_id_cancels_nothing(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, git_server: Any, forge: str
) -> None:
    """Every route resolves first: Mallory's `/cancel` carries the victim's path (on GitHub, also its
    task key) with her own repository id and secret; the victim's waiting task keeps waiting."""
    from bot.tasks.inbox import Inbox
    from tests.intake.payloads import github_comment, gitlab_note

    _setup(settings, redis_url, fake_forge, forge, git_server[0].url)
    settings.intake.sweep_grace = 3600  # the victim's job stays out of the queue below
    assert await post(settings, forge, *_label(forge, {})) == 202  # the victim's own task
    redis.Redis.from_url(redis_url).delete("arq:queue")  # ... which ran elsewhere and now waits
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        (task,) = await inbox.tasks()
        assert await inbox.claim(task.task_id, task.delivery_id) is not None
        assert await inbox.set_state(task.task_id, "waiting", "need_info")  # it asked a question
    finally:
        await inbox.close()
    if forge == "gitlab":
        note = gitlab_note("/cancel", id=4321)
        note["project"] = {**GITLAB_LABEL["project"], "id": OTHER_ID["gitlab"]}
        note["issue"]["iid"] = 23
        body, headers = deliveries.gitlab(note, "Note Hook")
    else:
        comment = github_comment("/cancel", id=4321)
        comment["repository"]["id"] = OTHER_ID["github"]
        body, headers = deliveries.github(comment, "issue_comment")
    assert await post(settings, forge, body, headers) in (200, 202)
    await work(settings, _models())
    assert await task_states(settings) == [("waiting", "need_info")]
    victim = ("1", 23) if forge == "gitlab" else ("Codertocat/Hello-World", 1)
    assert not [c for c in fake_forge.comments_on(forge, *victim, status=True) if "Cancelled" in c.body]
