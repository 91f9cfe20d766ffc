"""The adapters' behaviour on the wire: retries, rate limits, lost writes, pacing, auth and secrecy.

Runs both real adapters against the fake HTTP forge with injected faults; waits are recorded by
the retry policy instead of slept.
"""

from __future__ import annotations

import logging
import time

import github
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from foundation.forge import (
    BotIdentity,
    ChangeRequest,
    ForgeAuthError,
    ForgeRateLimited,
    ForgeUnavailable,
    IssueRef,
    Marker,
    RepoRef,
    open_forge,
)
from foundation.forge._retry import WritePacer
from foundation.forge.github import GitHubForge
from foundation.settings import Settings
from tests.bot.forge.conftest import GITHUB_REPO, GITLAB_REPO, Backend, github_backend, gitlab_backend, recording_policy
from tests.conftest import GITHUB_TOKEN, GITLAB_TOKEN
from tests.fakes.forge_http import FakeForgeState, FakeIssue, Fault
from tests.fakes.server import ServerThread


def _comments_path(backend: Backend) -> str:
    return "/issues/3/notes" if backend.name == "gitlab" else "/issues/3/comments"


async def test_5xx_on_a_read_is_retried_with_backoff(http_backend: Backend, http_state: FakeForgeState) -> None:
    ref = http_backend.seed_issue(3)
    http_state.faults.append(Fault("GET", "/issues/3", 502, count=2))
    issue = await http_backend.forge.get_issue(ref)
    assert issue.title == "Add a file API"
    assert http_backend.sleeps == [0.5, 1.0]  # exponential (jitter pinned to its maximum)


async def test_5xx_that_persists_surfaces_as_unavailable(http_backend: Backend, http_state: FakeForgeState) -> None:
    ref = http_backend.seed_issue(3)
    http_state.faults.append(Fault("GET", "/issues/3", 503, count=10))
    with pytest.raises(ForgeUnavailable):
        await http_backend.forge.get_issue(ref)
    assert len(http_backend.sleeps) == 3  # four attempts


async def test_retry_after_is_honoured(http_backend: Backend, http_state: FakeForgeState) -> None:
    ref = http_backend.seed_issue(3)
    http_state.faults.append(Fault("POST", _comments_path(http_backend), 429, headers={"Retry-After": "7"}))
    await http_backend.forge.post_comment(ref, "hello")
    assert http_backend.sleeps == [7.0]
    assert http_backend.bodies(ref) == ["hello"]


async def test_github_spent_quota_waits_until_reset(forge_server: ServerThread, http_state: FakeForgeState) -> None:
    backend = github_backend(forge_server, http_state)
    ref = backend.seed_issue(3)
    reset = str(int(time.time()) + 12)
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}
    http_state.faults.append(Fault("GET", "/issues/3", 403, headers=headers))
    await backend.forge.get_issue(ref)
    (waited,) = backend.sleeps
    assert 9 <= waited <= 12


async def test_long_rate_limit_is_left_to_the_job(http_backend: Backend, http_state: FakeForgeState) -> None:
    ref = http_backend.seed_issue(3)
    http_state.faults.append(Fault("GET", "/issues/3", 429, headers={"Retry-After": "3600"}))
    with pytest.raises(ForgeRateLimited) as caught:
        await http_backend.forge.get_issue(ref)
    assert caught.value.retry_after == 3600.0 and http_backend.sleeps == []


async def test_lost_answer_to_a_marked_write_posts_once(http_backend: Backend, http_state: FakeForgeState) -> None:
    ref = http_backend.seed_issue(3)
    http_state.faults.append(Fault("POST", _comments_path(http_backend), 502, after=True))
    await http_backend.forge.post_comment(ref, "report", Marker(task="t-9", purpose="report"))
    assert len(http_backend.bodies(ref)) == 1  # it landed; the retry found it instead of posting again


async def test_lost_answer_to_an_unmarked_write_is_not_retried(
    http_backend: Backend, http_state: FakeForgeState
) -> None:
    ref = http_backend.seed_issue(3)
    http_state.faults.append(Fault("POST", _comments_path(http_backend), 502, after=True))
    with pytest.raises(ForgeUnavailable):
        await http_backend.forge.post_comment(ref, "no marker, no way to check")
    assert len(http_backend.bodies(ref)) == 1


async def test_lost_answer_to_open_change_opens_one(http_backend: Backend, http_state: FakeForgeState) -> None:
    issue = http_backend.seed_issue(3)
    path = "/merge_requests" if http_backend.name == "gitlab" else "/pulls"
    http_state.faults.append(Fault("POST", path, 500, after=True))
    request = ChangeRequest(source_branch="forgebot/3-x", title="X", body="Body", closes=issue)
    ref = await http_backend.forge.open_change(http_backend.repo, request)
    assert http_backend.open_changes("forgebot/3-x") == 1
    assert await http_backend.forge.find_change(http_backend.repo, "forgebot/3-x") == ref


async def test_github_writes_are_spaced(forge_server: ServerThread, http_state: FakeForgeState) -> None:
    now, sleeps = [100.0], []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    client = github.Github(auth=github.Auth.Token(GITHUB_TOKEN), base_url=f"{forge_server.url}/github", retry=None,
                           seconds_between_requests=0, seconds_between_writes=0, lazy=True)
    forge = GitHubForge(client, recording_policy([]), WritePacer(interval=1.0, clock=lambda: now[0], sleep=sleep),
                        bot=BotIdentity(login="forgebot"))
    backend = Backend("github", forge, GITHUB_REPO, state=http_state)
    ref = backend.seed_issue(3)
    await forge.post_comment(ref, "one")
    await forge.post_comment(ref, "two")
    now[0] += 5  # a write long after the last one does not wait
    await forge.post_comment(ref, "three")
    assert sleeps == [1.0]


async def test_wrong_token_is_an_auth_error(forge_server: ServerThread, http_state: FakeForgeState) -> None:
    for make in (gitlab_backend, github_backend):
        backend = make(forge_server, http_state, "not-the-token")
        with pytest.raises(ForgeAuthError):
            await backend.forge.get_issue(backend.seed_issue(3))


async def test_tokens_appear_in_no_log_or_error(
    http_backend: Backend, http_state: FakeForgeState, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ref = http_backend.seed_issue(3)
    http_state.faults.append(Fault("GET", "/issues/3", 502))
    http_state.faults.append(Fault("POST", _comments_path(http_backend), 401))
    await http_backend.forge.get_issue(ref)
    with pytest.raises(ForgeAuthError) as caught:
        await http_backend.forge.post_comment(ref, "hi")
    token = GITLAB_TOKEN if http_backend.name == "gitlab" else GITHUB_TOKEN
    assert any(token in str(headers) for _, _, headers in http_state.log)  # it was sent...
    assert caplog.records and token not in caplog.text  # ...and never logged
    assert token not in str(caught.value) and token not in repr(caught.value)
    assert token not in http_backend.bodies(ref).__repr__()


async def test_open_forge_with_personal_tokens(settings: Settings, http_state: FakeForgeState) -> None:
    http_state.add_issue("gitlab", "1", 3, _issue())
    http_state.add_issue("github", "octo/app", 3, _issue())
    for kind, repo in (("gitlab", GITLAB_REPO), ("github", GITHUB_REPO)):
        forge = open_forge(settings, kind)  # type: ignore[arg-type]
        assert (await forge.get_issue(repo_issue(repo))).title == "T"


async def test_github_app_installation_token_is_refreshed(settings: Settings, http_state: FakeForgeState) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    http_state.app_key = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    http_state.tokens = {"nobody-has-this"}  # only tokens the App endpoint issues will be accepted
    http_state.add_issue("github", "octo/app", 3, _issue())
    settings.github.token = None
    settings.github.app_id, settings.github.private_key = 99, SecretStr(private)
    forge = open_forge(settings, "github", installation=5)
    await forge.get_issue(repo_issue(GITHUB_REPO))
    await forge.get_issue(repo_issue(GITHUB_REPO))
    assert len(http_state.installation_tokens) == 1  # a valid token is reused
    pushing = await forge.git_credentials()  # git pushes with the same installation token
    assert pushing.token.get_secret_value() == http_state.installation_tokens[0]
    http_state.installation_token_ttl = 10  # inside PyGithub's refresh margin: stale at once
    forge = open_forge(settings, "github", installation=5)
    await forge.get_issue(repo_issue(GITHUB_REPO))
    await forge.get_issue(repo_issue(GITHUB_REPO))
    assert len(http_state.installation_tokens) > 2  # refreshed before expiry, never used stale


def test_open_forge_without_credentials_fails_clearly(settings: Settings) -> None:
    settings.github.token = None
    settings.gitlab.token = None
    with pytest.raises(ForgeAuthError, match="FORGEBOT_GITHUB__TOKEN"):
        open_forge(settings, "github")
    with pytest.raises(ForgeAuthError, match="FORGEBOT_GITLAB__TOKEN"):
        open_forge(settings, "gitlab")
    settings.github.app_id, settings.github.private_key = 1, SecretStr("pem")
    with pytest.raises(ForgeAuthError, match="installation id"):
        open_forge(settings, "github")



def _issue() -> FakeIssue:
    return FakeIssue(title="T", body="B")


def repo_issue(repo: RepoRef) -> IssueRef:
    return IssueRef(repo=repo, number=3)


async def test_github_secondary_rate_limit_defers_the_job(
    forge_server: ServerThread, http_state: FakeForgeState
) -> None:
    backend = github_backend(forge_server, http_state)
    ref = backend.seed_issue(3)
    http_state.faults.append(Fault("POST", "/issues/3/comments", 403,
                                   message="You have exceeded a secondary rate limit. Please wait a few minutes."))
    with pytest.raises(ForgeRateLimited) as caught:
        await backend.forge.post_comment(ref, "hello")
    assert caught.value.retry_after == 60.0 and backend.bodies(ref) == []


async def test_a_github_permission_the_token_lacks_is_named(forge_server: ServerThread,
                                                             http_state: FakeForgeState) -> None:
    """A fine-grained token or a GitHub App without a permission gets 403 `Resource not accessible by personal
    access token`, which says nothing of what is missing; GitHub names it in `X-Accepted-GitHub-Permissions`,
    which the failure now carries (the task's failure detail, the worker's log)."""
    backend = github_backend(forge_server, http_state)
    ref = backend.seed_issue(3)
    http_state.faults.append(Fault("POST", "/issues/3/comments", 403, count=5,
                                   headers={"X-Accepted-GitHub-Permissions": "issues=write; pull_requests=write"},
                                   message="Resource not accessible by personal access token"))
    with pytest.raises(ForgeAuthError) as caught:
        await backend.forge.post_comment(ref, "hello")
    assert str(caught.value) == ("github 403: Resource not accessible by personal access token (GitHub: the call "
                                 "needs the permission issues=write; pull_requests=write, of the fine-grained token "
                                 "or the GitHub App)")
