"""The implement route as a job on GitHub: label webhook → receiver → Redis → worker → mirror over HTTP →
every role → real PHPUnit gates → the branch pushed, the pull request opened, the issue linked."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.settings import Settings
from tests.conftest import GITHUB_TOKEN
from tests.e2e import implement_harness as h
from tests.e2e.conftest import failure_of_task
from tests.fakes.forge_http import FakeForgeState, Fault
from tests.fakes.samples import sample
from tests.intake import deliveries

pytestmark = pytest.mark.php

REPO = "Codertocat/Hello-World"
SAMPLE = sample("github/issues.labeled.json")
BRANCH = h.expected_branch(1, SAMPLE["issue"]["title"])


@pytest.fixture
def served(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[h.Served]:
    yield from h.served_sample(tmp_path / "forge", settings, fake_forge, "x-access-token", GITHUB_TOKEN)


def _setup(settings: Settings, redis_url: str, fake_forge: FakeForgeState) -> None:
    h.setup(settings, redis_url, "bug")  # the sample adds "bug"
    fake_forge.grant("github", REPO, "Codertocat", "write")  # who labels
    fake_forge.grant("github", REPO, "alice", "write")  # the fake's issue author
    h.issue(fake_forge, "github", REPO, 1)


async def test_label_opens_a_pull_request_with_gate_statuses(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    _setup(settings, redis_url, fake_forge)
    roles = h.implement_roles()
    delivery = deliveries.github(h.labelled(SAMPLE, served.url), "issues")
    assert await h.post(settings, "github", *delivery) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    # the forge redelivers the same webhook: nothing runs again (the scripted roles would be exhausted)
    assert await h.post(settings, "github", *delivery) in (200, 202)
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    change = h.the_change(fake_forge, "github", REPO)
    h.assert_delivered(change, BRANCH, served)
    (link,) = h.link_comments(fake_forge, "github", REPO, 1)
    assert f"Opened #2 from `{BRANCH}`" in link.body  # a pull request is #N on GitHub, not !N
    assert list((settings.data_dir / "workspaces" / "tasks").iterdir()) == []


@pytest.mark.parametrize("lost", ["/issues/1/comments", "/pulls"], ids=["link-comment", "open-change"])
async def test_a_retried_job_opens_no_second_pull_request_and_no_second_link(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, lost: str
) -> None:
    """A write lands but its answer is lost: arq retries the job, which resumes at delivery."""
    _setup(settings, redis_url, fake_forge)
    settings.durability.retry_seconds = 0.2  # arq defers the retry by this (5 s by default)
    skip = 0 if "pull" in lost or "merge_requests" in lost else 1  # the status comment is the issue's first post
    fake_forge.faults.append(Fault("POST", lost, 503, after=True, skip=skip))
    roles = h.implement_roles()
    assert await h.post(settings, "github", *deliveries.github(h.labelled(SAMPLE, served.url), "issues")) == 202
    worker = await h.work(settings, roles.__getitem__)
    assert (worker.jobs_retried, worker.jobs_failed) == (1, 0)
    assert await h.task_states(settings) == [("done", "delivered")]
    h.assert_delivered(h.the_change(fake_forge, "github", REPO), BRANCH, served)
    assert len(h.link_comments(fake_forge, "github", REPO, 1)) == 1
    assert fake_forge.requests_to("POST", "/pulls") == 1  # the retry found the change by its branch
    assert len(fake_forge.comments_on("github", REPO, 1)) == 1
    h.assert_resumed_at_delivery(roles)


async def test_a_later_tasks_work_on_the_open_pull_request_gets_its_description(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """The issue labelled again while #2 is open: the second task replaces the branch, reuses the pull
    request and writes its own description over the first task's (PATCH /pulls/{number})."""
    _setup(settings, redis_url, fake_forge)
    await h.post(settings, "github", *deliveries.github(h.labelled(SAMPLE, served.url), "issues"))
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    first = h.the_change(fake_forge, "github", REPO).body
    again = copy.deepcopy(SAMPLE)
    again["issue"]["updated_at"] = "2031-01-01T00:00:00Z"
    await h.post(settings, "github", *deliveries.github(h.labelled(again, served.url), "issues"))
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert sorted(await h.task_states(settings)) == [("done", "delivered"), ("done", "delivered")]
    change = h.the_change(fake_forge, "github", REPO)
    assert change.body != first and fake_forge.requests_to("PATCH", "/pulls/") == 1
    h.assert_delivered(change, BRANCH, served)


async def test_a_pull_request_the_token_may_not_open_says_where_the_work_is(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """A fine-grained token without `pull_requests: write`: the branch was pushed, then opening the pull
    request was refused (403). The failure said forgebot's account was no member of the project (it had
    just pushed) and to start the whole task again; it did not say where the work was."""
    _setup(settings, redis_url, fake_forge)
    fake_forge.faults.append(Fault("POST", f"/repos/{REPO}/pulls", 403, count=5,
                                   message="Resource not accessible by personal access token"))
    assert await h.post(settings, "github", *deliveries.github(h.labelled(SAMPLE, served.url), "issues")) == 202
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("failed", "change refused")]
    assert served.branch_log(BRANCH)[0] == "Add multiply with its test"  # the work is there
    (report,) = [c.body for c in fake_forge.comments_on("github", REPO, 1) if "purpose=failure" in c.body]
    assert (f"the forge refused to open the pull request for this work, which is on branch `{BRANCH}`.\n\n"
            f"Open a pull request from `{BRANCH}` yourself, or ask the person who runs forgebot to let forgebot "
            "open them.") in report, report
    assert "member of the project" not in report


async def test_a_permission_the_token_lacks_is_named_in_the_tasks_failure(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """A fine-grained token without `issues: write` cannot post the task's first comment. The failure said to
    check the token's scopes and the bot's membership; GitHub's `X-Accepted-GitHub-Permissions` names the
    permission, and the task's failure record (the console, `forgebot tasks`, the log) now does."""
    _setup(settings, redis_url, fake_forge)
    fake_forge.faults.append(Fault("POST", f"/repos/{REPO}/issues/1/comments", 403, count=20,
                                   headers={"X-Accepted-GitHub-Permissions": "issues=write; pull_requests=write"},
                                   message="Resource not accessible by personal access token"))
    assert await h.post(settings, "github", *deliveries.github(h.labelled(SAMPLE, served.url), "issues")) == 202
    await h.work(settings, h.implement_roles().__getitem__)
    assert await h.task_states(settings) == [("failed", "forge credentials")]
    record = await failure_of_task(settings)
    assert record.operator_action.startswith("grant the fine-grained token or the GitHub App the permission "
                                             "issues=write; pull_requests=write (")
    assert "needs the permission issues=write; pull_requests=write" in record.detail
