"""Errors, rate limits and pagination as the forges document them, met by both adapters.

The fake forge answers each case in its documented shape (`tests.fakes.forge_errors`,
`tests.fakes.forge_pages`) and the contract layer checks that shape against the forge's own
description; these tests check what the adapters make of it through their one call path
(`foundation.forge._retry.Calls`). Waits are recorded by the retry policy, not slept.
"""

from __future__ import annotations

import pytest

from foundation.forge import (
    BotIdentity,
    ChangeRef,
    CommentRef,
    ForgeAuthError,
    ForgeConflict,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
)
from foundation.forge._retry import WritePacer
from foundation.forge.github import GitHubForge
from tests.bot.forge.conftest import Backend, github_backend, gitlab_backend, recording_policy
from tests.fakes.forge_errors import github_rate_limit, gitlab_rate_limit
from tests.fakes.forge_http import FakeForgeState, Fault
from tests.fakes.server import ServerThread


@pytest.mark.parametrize(("status", "error"), [(401, ForgeAuthError), (403, ForgeAuthError), (404, ForgeNotFound),
                                               (409, ForgeConflict), (422, ForgeConflict), (400, ForgeError)])
async def test_documented_error_answers_map_to_the_error_tree(
    http_backend: Backend, http_state: FakeForgeState, status: int, error: type[ForgeError]
) -> None:
    ref = http_backend.seed_issue(3)
    http_state.faults.append(Fault("GET", "/issues/3", status))
    with pytest.raises(error) as caught:
        await http_backend.forge.get_issue(ref)
    assert type(caught.value) is error and http_backend.sleeps == []  # a refusal is never retried
    assert str(status) in str(caught.value)


async def test_github_secondary_limit_waits_its_retry_after(
    forge_server: ServerThread, http_state: FakeForgeState
) -> None:
    backend = github_backend(forge_server, http_state)
    ref = backend.seed_issue(3)
    status, headers, message = github_rate_limit(403, retry_after=7)
    http_state.faults.append(Fault("GET", "/issues/3", status, headers=headers, message=message))
    assert (await backend.forge.get_issue(ref)).title == "Add a file API"
    assert backend.sleeps == [7.0]


async def test_github_secondary_limit_without_headers_waits_a_minute_in_the_job(
    forge_server: ServerThread, http_state: FakeForgeState
) -> None:
    backend = github_backend(forge_server, http_state)
    ref = backend.seed_issue(3)
    status, headers, message = github_rate_limit(429)
    http_state.faults.append(Fault("POST", "/issues/3/comments", status, headers=headers, message=message))
    with pytest.raises(ForgeRateLimited) as caught:  # a minute is longer than a worker sleeps (30 s)
        await backend.forge.post_comment(ref, "hello")
    assert caught.value.retry_after == 60.0 and backend.bodies(ref) == []


async def test_github_spent_primary_quota_waits_for_its_reset(
    forge_server: ServerThread, http_state: FakeForgeState
) -> None:
    backend = github_backend(forge_server, http_state)
    ref = backend.seed_issue(3)
    status, headers, message = github_rate_limit(429, reset_in=12, secondary=False)
    http_state.faults.append(Fault("GET", "/issues/3", status, headers=headers, message=message))
    await backend.forge.get_issue(ref)
    (waited,) = backend.sleeps
    assert 9 <= waited <= 12


@pytest.mark.parametrize("retry_after", [9, None])
async def test_gitlab_rate_limiter_answer_is_waited_out(
    forge_server: ServerThread, http_state: FakeForgeState, retry_after: int | None
) -> None:
    """GitLab's 429 "Retry later": `Retry-After` when sent, else the `RateLimit-Reset` time."""
    backend = gitlab_backend(forge_server, http_state)
    ref = backend.seed_issue(3)
    status, headers, message = gitlab_rate_limit(retry_after=retry_after, reset_in=15)
    http_state.faults.append(Fault("POST", "/issues/3/notes", status, headers=headers, message=message))
    await backend.forge.post_comment(ref, "hello")
    (waited,) = backend.sleeps
    assert waited == 9.0 if retry_after else 12 <= waited <= 15
    assert backend.bodies(ref) == ["hello"]


async def test_long_lists_are_read_page_by_page(http_backend: Backend, http_state: FakeForgeState) -> None:
    """More comments than a page holds (GitHub 30, GitLab 20): every one is read, in order."""
    ref = http_backend.seed_issue(3)
    for index in range(47):
        http_backend.seed_comment(ref, f"comment {index}")
    comments = await http_backend.forge.list_comments(ref)
    assert [c.body for c in comments] == [f"comment {i}" for i in range(47)]
    pages = http_state.requests_to("GET", "/issues/3/comments" if http_backend.name == "github" else
                                   "/issues/3/discussions")
    assert pages == 2 if http_backend.name == "github" else pages == 3


async def test_a_diff_thread_past_the_first_hundred_resolves(
    forge_server: ServerThread, http_state: FakeForgeState
) -> None:
    """GitHub answers at most 100 review threads a page: the 130th is found on the second."""
    backend = github_backend(forge_server, http_state)
    change = backend.seed_change(7)
    threads = [http_state.add_thread(("github", backend.repo.project, "change", 7), f"note {i}", review=True,
                                     position={"path": "src/app.php", "line": 4, "side": "RIGHT"})
               for i in range(130)]
    last = CommentRef(target=change, id=int(threads[-1].id), thread=threads[-1].id, review=True)
    await backend.forge.resolve_thread(last)
    assert threads[-1].resolved and not any(t.resolved for t in threads[:-1])


async def test_resolving_a_thread_is_a_paced_write(forge_server: ServerThread, http_state: FakeForgeState) -> None:
    """The GraphQL mutation waits for the write spacing GitHub's secondary limits ask for; the
    query that finds the thread does not."""
    import github

    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    now = [100.0]
    client = github.Github(auth=github.Auth.Token("ghp_test_token_do_not_log"),
                           base_url=f"{forge_server.url}/github", retry=None, lazy=True,
                           seconds_between_requests=0, seconds_between_writes=0)
    forge = GitHubForge(client, recording_policy([]), WritePacer(interval=1.0, clock=lambda: now[0], sleep=sleep),
                        bot=BotIdentity(login="forgebot"))
    backend = Backend("github", forge, github_backend(forge_server, http_state).repo, state=http_state)
    change: ChangeRef = backend.seed_change(7)
    thread = http_state.add_thread(("github", backend.repo.project, "change", 7), "note", review=True,
                                   position={"path": "src/app.php", "line": 4, "side": "RIGHT"})
    await forge.post_comment(change, "a write just before")
    await forge.resolve_thread(CommentRef(target=change, id=int(thread.id), thread=thread.id, review=True))
    assert thread.resolved and waits == [1.0]


async def test_a_lost_resolve_answer_is_checked_before_trying_again(
    http_backend: Backend, http_state: FakeForgeState
) -> None:
    """The resolve landed but its answer was lost: the adapter looks, finds it resolved, stops."""
    change = http_backend.seed_change(7)
    if http_backend.name == "github":
        thread = http_state.add_thread(("github", http_backend.repo.project, "change", 7), "note", review=True,
                                       position={"path": "src/app.php", "line": 4, "side": "RIGHT"})
        ref = CommentRef(target=change, id=int(thread.id), thread=thread.id, review=True)
        http_state.faults.append(Fault("POST", "/graphql", 502, after=True, skip=1))  # the query passes
        method, path = "POST", "/graphql"
    else:
        thread = http_state.add_thread(("gitlab", http_backend.repo.project, "change", 7), "note", individual=False)
        ref = CommentRef(target=change, id=thread.comments[0].id, thread=thread.id)
        http_state.faults.append(Fault("PUT", f"/discussions/{thread.id}", 502, after=True))
        method, path = "PUT", f"/discussions/{thread.id}"
    await http_backend.forge.resolve_thread(ref)
    assert thread.resolved
    writes = http_state.requests_to(method, path)
    assert writes == (3 if http_backend.name == "github" else 1)  # github: query, mutation, the check's query
