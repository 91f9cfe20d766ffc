"""The authorization matrix, through the real python-gitlab / PyGithub adapters against the fake
forge's permission endpoints, and the policy's cache, allow-list and bot rule."""

from __future__ import annotations

import pytest

from bot.intake.authz import Authorizer
from bot.tasks.events import ForgeEvent, parse_github, parse_gitlab
from foundation.forge import AccessLevel, ForgeUser, RepoRef, open_forge
from foundation.settings import Settings, TriggerSettings
from tests.fakes.forge import FakeForge
from tests.fakes.forge_http import FakeForgeState
from tests.intake.payloads import GITHUB_BOT, GITLAB_BOT_ID, github_comment, gitlab_note

TRIGGERS = TriggerSettings()


def gitlab_event(user_id: int = 1) -> ForgeEvent:
    payload = gitlab_note("/implement")
    payload["user"]["id"] = user_id
    event = parse_gitlab({"x-gitlab-event": "Note Hook"}, payload, "gitlab:a", TRIGGERS)
    assert event is not None
    return event


def github_event(login: str = "Codertocat") -> ForgeEvent:
    payload = github_comment("/implement")
    payload["comment"]["user"]["login"] = login
    event = parse_github({"x-github-event": "issue_comment"}, payload, "github:a", TRIGGERS)
    assert event is not None
    return event


@pytest.mark.parametrize(
    ("level", "allowed"),
    [(None, False), (10, False), (20, False), (30, True), (40, True), (50, True)],
    ids=["stranger", "guest", "reporter", "developer", "maintainer", "owner"],
)
async def test_gitlab_matrix(settings: Settings, fake_forge: FakeForgeState, level: int | None, allowed: bool) -> None:
    if level is not None:
        fake_forge.grant("gitlab", "5", "1", level)  # root (id 1) on project 5, the note sample's
    decision = await Authorizer(settings).decide(open_forge(settings, "gitlab"), gitlab_event())
    assert decision.allowed is allowed, decision.reason


@pytest.mark.parametrize(
    ("role", "allowed"),
    [(None, False), ("read", False), ("triage", False), ("write", True), ("maintain", True), ("admin", True)],
    ids=["stranger", "read", "triage", "write", "maintain", "admin"],
)
async def test_github_matrix(settings: Settings, fake_forge: FakeForgeState, role: str | None, allowed: bool) -> None:
    if role is not None:
        fake_forge.grant("github", "Codertocat/Hello-World", "Codertocat", role)
    decision = await Authorizer(settings).decide(open_forge(settings, "github"), github_event())
    assert decision.allowed is allowed, decision.reason


async def test_the_bot_itself_is_refused_before_any_api_call(settings: Settings) -> None:
    settings.gitlab.bot_user_id = GITLAB_BOT_ID
    settings.github.bot_login = GITHUB_BOT
    forge = CountingForge()
    forge.access = {("5", GITLAB_BOT_ID): AccessLevel.OWNER, ("Codertocat/Hello-World", 21031067): AccessLevel.OWNER}
    policy = Authorizer(settings)
    assert not (await policy.decide(forge, gitlab_event(user_id=GITLAB_BOT_ID))).allowed
    assert not (await policy.decide(forge, github_event(login=GITHUB_BOT.upper()))).allowed
    assert forge.calls == 0


async def test_allow_list_refuses_other_projects(settings: Settings) -> None:
    forge = CountingForge()
    forge.access = {("5", 1): AccessLevel.OWNER}
    settings.intake.allowed_projects = ["other/project"]
    decision = await Authorizer(settings).decide(forge, gitlab_event())
    assert not decision.allowed and "allow-list" in decision.reason and forge.calls == 0
    settings.intake.allowed_projects = ["GitLab-org/gitlab-test"]  # the sample project's path, any case
    assert (await Authorizer(settings).decide(forge, gitlab_event())).allowed


async def test_access_is_cached_briefly(settings: Settings) -> None:
    now = [0.0]
    forge = CountingForge()
    forge.access = {("5", 1): AccessLevel.DEVELOPER}
    policy = Authorizer(settings, clock=lambda: now[0])
    for _ in range(5):
        assert (await policy.decide(forge, gitlab_event())).allowed
    assert forge.calls == 1
    forge.access = {("5", 1): AccessLevel.REPORTER}  # demoted
    now[0] += settings.intake.access_cache_seconds + 1
    assert not (await policy.decide(forge, gitlab_event())).allowed
    assert forge.calls == 2


class CountingForge(FakeForge):
    """FakeForge that counts permission look-ups."""

    calls: int = 0

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        self.calls += 1
        return await super().user_access(repo, user)
