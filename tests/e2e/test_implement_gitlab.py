"""The implement route as a job on GitLab: label webhook → receiver → Redis → worker → mirror over HTTP →
every role → real PHPUnit gates → the branch pushed, the merge request opened, the issue linked."""

from __future__ import annotations

import copy
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from foundation.settings import DEFAULT_AUTHOR, Settings
from tests.conftest import GITLAB_TOKEN
from tests.e2e import implement_harness as h
from tests.fakes.forge_http import FakeForgeState, Fault
from tests.fakes.samples import sample
from tests.graph.implement import route
from tests.graph.implement.conftest import FORGEBOT_YML, GIT_ENV
from tests.intake import deliveries

pytestmark = pytest.mark.php

SAMPLE = sample("gitlab/issue.labels-changed.json")
BRANCH = h.expected_branch(23, SAMPLE["object_attributes"]["title"])


@pytest.fixture
def served(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[h.Served]:
    yield from h.served_sample(tmp_path / "forge", settings, fake_forge, "oauth2", GITLAB_TOKEN)


def _setup(settings: Settings, redis_url: str, fake_forge: FakeForgeState) -> None:
    h.setup(settings, redis_url, "Platform")  # the sample adds "Platform"
    fake_forge.grant("gitlab", "1", "1", 30)  # root, who labels, is a Developer
    fake_forge.grant("gitlab", "1", "7", 30)  # the fake's issue author
    h.issue(fake_forge, "gitlab", "1", 23)


async def test_label_opens_a_merge_request_with_gate_statuses(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    _setup(settings, redis_url, fake_forge)
    roles = h.implement_roles()
    delivery = deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")
    assert await h.post(settings, "gitlab", *delivery) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    # the forge redelivers the same webhook: nothing runs again (the scripted roles would be exhausted)
    assert await h.post(settings, "gitlab", *delivery) in (200, 202)
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    change = h.the_change(fake_forge, "gitlab", "1")
    h.assert_delivered(change, BRANCH, served)
    (link,) = h.link_comments(fake_forge, "gitlab", "1", 23)
    assert f"Opened !1 from `{BRANCH}`" in link.body
    assert list((settings.data_dir / "workspaces" / "tasks").iterdir()) == []  # released once delivered


@pytest.mark.parametrize("lost", ["/issues/23/notes", "/merge_requests"], ids=["link-comment", "open-change"])
async def test_a_retried_job_opens_no_second_merge_request_and_no_second_link(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, lost: str
) -> None:
    """A write lands but its answer is lost: arq retries the job, which resumes at delivery."""
    _setup(settings, redis_url, fake_forge)
    settings.gitlab.max_retries = 0  # the adapter gives up at once, so the job itself is retried
    settings.durability.retry_seconds = 0.2  # arq defers the retry by this (5 s by default)
    skip = 0 if "pull" in lost or "merge_requests" in lost else 1  # the status comment is the issue's first post
    fake_forge.faults.append(Fault("POST", lost, 503, after=True, skip=skip))
    roles = h.implement_roles()
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    worker = await h.work(settings, roles.__getitem__)
    assert (worker.jobs_retried, worker.jobs_failed) == (1, 0)
    assert await h.task_states(settings) == [("done", "delivered")]
    h.assert_delivered(h.the_change(fake_forge, "gitlab", "1"), BRANCH, served)
    assert len(h.link_comments(fake_forge, "gitlab", "1", 23)) == 1
    assert fake_forge.requests_to("POST", "/merge_requests") == 1  # the retry found the change by its branch
    assert len(fake_forge.comments_on("gitlab", "1", 23)) == 1  # and no failure note either
    statuses = [c.body for c in fake_forge.comments_on("gitlab", "1", 23, status=True) if ":purpose=status" in c.body]
    assert len(statuses) == 1 and statuses[0].startswith("**Status: done (delivered)**")  # retried, edited once more
    h.assert_resumed_at_delivery(roles)


async def test_a_red_test_is_reported_once_and_the_work_is_pushed_without_a_merge_request(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    _setup(settings, redis_url, fake_forge)
    roles = h.stuck_roles()
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("failed", "did not finish")]
    assert not fake_forge.changes and fake_forge.requests_to("POST", "/merge_requests") == 0
    (report,) = fake_forge.comments_on("gitlab", "1", 23)
    assert "no progress" in report.body and "gate test_runner failed" in report.body
    assert f"kept on branch `{BRANCH}`" in report.body and "purpose=failure" in report.body
    assert served.branch_log(BRANCH)[:2] == ["Fix: gate test_runner failed", "Add multiply with its test"]
    fix_round = "\n".join(str(m.content) for m in roles["coder"].received[4])
    assert '<execution_output origin="gates and review">' in fix_round  # PHPUnit's output, budgeted


REFUSALS = {
    "protected": "GitLab: You are not allowed to push code to protected branches on this project.",
    "push-rule": "GitLab: Author bot@forgebot.invalid is not a member of team",
}


@pytest.mark.parametrize("kind", sorted(REFUSALS))
async def test_a_push_the_forge_refuses_is_reported_as_refused_with_its_reason(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, kind: str
) -> None:
    """The forge's pre-receive check refuses the branch (a protected `forgebot/*` pattern, a push rule on
    the commit author): the failure says the push was refused and quotes the forge, not "a working copy"."""
    _setup(settings, redis_url, fake_forge)
    hook = served.origin / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho '{REFUSALS[kind]}' >&2\nexit 1\n")
    hook.chmod(0o755)
    roles = h.implement_roles()
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("failed", "push refused")]
    (report,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23) if "purpose=failure" in c.body]
    assert f"the repository refused forgebot's branch `{BRANCH}`, saying `{REFUSALS[kind]}`" in report, report
    assert "until the repository's rules or forgebot's rights change" in report
    assert "working copy" not in report


def _commit_on(served: h.Served, branch: str, email: str, tmp: Path, committer: str = "") -> str:
    """A commit on `branch` of the served repository, written by `email` (and committed by `committer`,
    by default the same), as a push from someone's clone."""
    env = {**GIT_ENV, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_EMAIL": committer or email}
    clone = tmp / f"clone-{email}"
    subprocess.run(["git", "clone", "-q", "-b", "master", str(served.origin), str(clone)], env=env, check=True)
    (clone / "NOTES.md").write_text("a fix on the bot's branch\n")
    subprocess.run(["git", "-C", str(clone), "add", "-A"], env=env, check=True)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", "Fix a typo on the bot's branch"], env=env, check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", f"HEAD:refs/heads/{branch}"], env=env, check=True)
    return subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


async def test_someone_elses_commit_on_the_bots_branch_is_never_replaced(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, tmp_path: Path
) -> None:
    """A person pushed a fix to the bot's branch (on its merge request from an earlier task), then the issue
    was labelled again. The new task force-pushed its work over the branch and the person's commit was gone:
    now it stays, and the work goes to a branch of the task's own, which the link comment names and explains."""
    _setup(settings, redis_url, fake_forge)
    theirs = _commit_on(served, BRANCH, "alice@example.com", tmp_path)
    roles = h.implement_roles()
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    assert served.branch_log(BRANCH)[0] == "Fix a typo on the bot's branch"  # untouched
    assert subprocess.run(["git", "-C", str(served.origin), "rev-parse", BRANCH], env=GIT_ENV, capture_output=True,
                          text=True, check=True).stdout.strip() == theirs
    change = h.the_change(fake_forge, "gitlab", "1")
    assert change.source_branch.startswith(BRANCH + "-") and change.source_branch != BRANCH
    h.assert_delivered(change, change.source_branch, served)
    (link,) = h.link_comments(fake_forge, "gitlab", "1", 23)
    said = f"Opened !1 from `{change.source_branch}` for this issue. `{BRANCH}` holds 1 commit(s) by others"
    assert said in link.body


@pytest.mark.parametrize("earlier", ["account", "placeholder"])
async def test_the_bots_own_earlier_branch_is_replaced(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, tmp_path: Path, earlier: str
) -> None:
    """An earlier task's commits, rebased by a maintainer (GitLab's "Rebase" commits them again as the
    person who pressed it): still only the bot's work, so the branch is the bot's to replace. Its author is
    the bot account's commit email, or forgebot's placeholder where an earlier release wrote the branch."""
    _setup(settings, redis_url, fake_forge)
    email = fake_forge.bot_commit_email if earlier == "account" else DEFAULT_AUTHOR[1]
    _commit_on(served, BRANCH, email, tmp_path, committer="alice@example.com")
    roles = h.implement_roles()
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    h.assert_delivered(h.the_change(fake_forge, "gitlab", "1"), BRANCH, served)


def _again(sample_body: dict[str, Any]) -> dict[str, Any]:
    """The same label added again later: a new event on the issue."""
    again = copy.deepcopy(sample_body)
    again["object_attributes"]["updated_at"] = "2031-01-01 00:00:00 UTC"
    return again


async def test_a_later_tasks_failed_work_never_lands_under_the_open_merge_request(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """A first task opened !1; the issue is labelled again and the second task's tests stay red. Its work
    was pushed to !1's branch, so !1 held failing code under a description that said "passed" and
    "approve". Now !1's branch keeps the work it describes; the failed work goes to the task's own branch."""
    _setup(settings, redis_url, fake_forge)
    await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook"))
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    delivered = served.branch_log(BRANCH)
    await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(_again(SAMPLE), served.url), "Issue Hook"))
    assert (await h.work(settings, h.stuck_roles().__getitem__)).jobs_failed == 0
    assert sorted(await h.task_states(settings)) == [("done", "delivered"), ("failed", "did not finish")]
    assert served.branch_log(BRANCH) == delivered  # !1 still holds what its description describes
    (report,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23) if "purpose=failure" in c.body]
    kept = re.search(r"The work so far is kept on branch `([^`]+)`", report)
    assert kept and kept.group(1).startswith(BRANCH + "-"), report
    assert served.branch_log(kept.group(1))[:2] == ["Fix: gate test_runner failed", "Add multiply with its test"]
    assert "!1" in report


async def test_a_later_tasks_work_on_the_open_merge_request_gets_its_description(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """The issue labelled again while !1 is open: the second task replaces !1's branch and reuses !1, whose
    description (criteria, checklist, gate statuses, verdict) still described the first task's work."""
    _setup(settings, redis_url, fake_forge)
    await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook"))
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    first = h.the_change(fake_forge, "gitlab", "1").body
    await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(_again(SAMPLE), served.url), "Issue Hook"))
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert fake_forge.requests_to("POST", "/merge_requests") == 1  # one merge request, reused
    change = h.the_change(fake_forge, "gitlab", "1")
    tasks = re.findall(r"task ([0-9a-f]{16})", "\n".join(c.body for c in fake_forge.comments_on("gitlab", "1", 23)))
    second = [t for t in dict.fromkeys(tasks) if t not in first]
    assert second and f"task {second[0]}" in change.body and change.body != first
    h.assert_delivered(change, BRANCH, served)


async def test_a_renamed_issue_keeps_its_open_merge_request(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """The branch's slug is the issue's title: labelled again after a rename, the second task worked on a
    new branch and opened a second merge request, leaving !1 open with the older work."""
    _setup(settings, redis_url, fake_forge)
    await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook"))
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    renamed = _again(SAMPLE)
    renamed["object_attributes"]["title"] = "Multiply, and say so in the README"
    await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(renamed, served.url), "Issue Hook"))
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert sorted(await h.task_states(settings)) == [("done", "delivered"), ("done", "delivered")]
    assert fake_forge.requests_to("POST", "/merge_requests") == 1  # !1 is reused, its description rewritten
    h.assert_delivered(h.the_change(fake_forge, "gitlab", "1"), BRANCH, served)
    links = h.link_comments(fake_forge, "gitlab", "1", 23)
    assert len(links) == 2 and all(f"Opened !1 from `{BRANCH}`" in link.body for link in links)


def _branches(served: h.Served) -> list[str]:
    done = subprocess.run(["git", "-C", str(served.origin), "for-each-ref", "--format=%(refname:short)", "refs/heads"],
                          capture_output=True, text=True, env=GIT_ENV, check=True)
    return done.stdout.split()


@pytest.mark.parametrize("visibility", ["public", "internal", ""], ids=["public", "internal", "not-told"])
async def test_a_confidential_issue_outside_a_private_project_gets_no_branch_and_no_merge_request(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, visibility: str
) -> None:
    """A security bug reported as a confidential issue: a merge request (its branch named by the issue's
    title, its description, its code) would show it to everyone who sees the project. The task ends before
    any clone or model, with the reason on the issue, which only the issue's readers see."""
    _setup(settings, redis_url, fake_forge)
    fake_forge.issues[("gitlab", "1", 23)].confidential = True
    project = fake_forge.project("gitlab", "1")
    assert project is not None
    project.visibility = visibility
    roles = h.implement_roles()
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("failed", "confidential issue")]
    assert not fake_forge.changes and fake_forge.requests_to("POST", "/merge_requests") == 0
    assert _branches(served) == ["master"]
    assert all(not model.received for model in roles.values())
    (report,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23) if "purpose=failure" in c.body]
    told = f"the project is {visibility}" if visibility else "the forge did not say who may see the project"
    assert f"this issue is confidential and {told}" in report and "private fork" in report, report


async def test_a_confidential_issue_in_a_private_project_is_implemented(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    _setup(settings, redis_url, fake_forge)
    fake_forge.issues[("gitlab", "1", 23)].confidential = True  # the fake's projects are private
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    h.assert_delivered(h.the_change(fake_forge, "gitlab", "1"), BRANCH, served)


async def test_an_issue_made_confidential_while_the_task_works_is_not_pushed(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """Someone sees the issue is a vulnerability and makes it confidential while the coder works: what the
    forge says just before the push decides, not what it said at the start."""
    _setup(settings, redis_url, fake_forge)
    project = fake_forge.project("gitlab", "1")
    assert project is not None
    project.visibility = "public"
    roles = h.implement_roles()

    def model_for(role: str) -> Any:
        if role == "reviewer":  # the work is done: it is being reviewed
            fake_forge.issues[("gitlab", "1", 23)].confidential = True
        return roles[role]

    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, model_for)).jobs_failed == 0
    assert await h.task_states(settings) == [("failed", "confidential issue")]
    assert roles["reviewer"].received  # it got as far as the review
    assert not fake_forge.changes and _branches(served) == ["master"]


def _push_rule(served: h.Served, test: str, refusal: str) -> None:
    """A pre-receive hook refusing a push with a new commit `$c` that fails the shell `test`, in the words
    of a GitLab push rule."""
    hook = served.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do\n  for c in $(git rev-list \"$new\" --not --all); do\n"
                    f"    {test} || {{ echo 'GitLab: {refusal}' >&2; exit 1; }}\n  done\ndone\n")
    hook.chmod(0o755)


async def test_the_bots_commits_carry_the_configured_author(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """A push rule on the commit author's email (GitLab: "Commit author's email", or that the author is a
    GitLab user) is why an operator sets the bot's git identity. Every commit the task pushes carries it."""
    _setup(settings, redis_url, fake_forge)
    settings.workspace.author_name, settings.workspace.author_email = "Platform Bot", "platform-bot@corp.example"
    _push_rule(served, '[ "$(git log -1 --format=%ae "$c")" = platform-bot@corp.example ]',
               "Author is not a verified email of the pushing user")
    assert await _delivered_by(settings, served, "%an <%ae>") == {"Platform Bot <platform-bot@corp.example>"}


async def test_with_no_author_configured_the_commits_carry_the_bot_accounts_own(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """GitLab's push rules "Reject unverified users" (the committer's email is one of the pushing user's
    verified emails) and "Check whether the commit author is a GitLab user" refused every push of a bot
    whose author was forgebot's placeholder, after all of a task's work, until an operator set the
    author. With none set, the commits carry the bot account's name and commit email, as GitLab's
    `GET /user` shows them to the bot."""
    _setup(settings, redis_url, fake_forge)
    fake_forge.bot_name = "Platform Bot"
    own = fake_forge.bot_commit_email
    _push_rule(served, f'[ "$(git log -1 --format=%ae:%ce "$c")" = {own}:{own} ]',
               "Committer email is not a verified email of the pushing user")
    assert await _delivered_by(settings, served, "%an <%ae>|%cn") == {f"Platform Bot <{own}>|Platform Bot"}


async def _delivered_by(settings: Settings, served: h.Served, fmt: str) -> set[str]:
    """Label the issue, run the task to its delivery, and `git log --format=fmt` of the commits it pushed."""
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    pushed = subprocess.run(["git", "-C", str(served.origin), "log", f"--format={fmt}", f"master..{BRANCH}"],
                            capture_output=True, text=True, env=GIT_ENV, check=True).stdout.split("\n")
    return set(filter(None, pushed))


async def test_a_signed_commits_rule_is_met_with_the_configured_signing_key(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, tmp_path: Path,
    worker_tmp: Path,
) -> None:
    """GitLab's "Reject unsigned commits" push rule (GitHub: a ruleset requiring signed commits) refused every
    push of the bot, which could not sign. With FORGEBOT_WORKSPACE__SIGNING_KEY each commit carries an SSH
    signature the forge verifies against the key registered on the bot account (here: an allowed-signers
    file naming the bot's email). The key is on disk only while a commit is signed, never in the data dir."""
    _setup(settings, redis_url, fake_forge)
    key = tmp_path / "signing"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(key)], check=True,
                   stdin=subprocess.DEVNULL)
    allowed = tmp_path / "allowed_signers"  # the public key registered on the bot account
    allowed.write_text(f"platform-bot@corp.example {key.with_suffix('.pub').read_text()}")
    settings.workspace.author_email = "platform-bot@corp.example"
    settings.workspace.signing_key = SecretStr(key.read_text())
    secret_line = key.read_text().splitlines()[2]
    key.unlink()  # only the setting holds it now
    verify = f'git -c gpg.ssh.allowedSignersFile={allowed} verify-commit "$c" 2>/dev/null'
    _push_rule(served, verify, "Commit must be signed with a GPG or SSH key registered on the account")
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    commits = subprocess.run(["git", "-C", str(served.origin), "rev-list", f"master..{BRANCH}"], capture_output=True,
                             text=True, env=GIT_ENV, check=True).stdout.split()
    assert commits
    for sha in commits:
        shown = subprocess.run(["git", "-C", str(served.origin), "-c", f"gpg.ssh.allowedSignersFile={allowed}",
                                "verify-commit", "--raw", sha], capture_output=True, text=True, env=GIT_ENV)
        assert shown.returncode == 0 and 'Good "git" signature for platform-bot@corp.example' in shown.stderr
    assert not list(worker_tmp.glob("forgebot-signing-*"))  # the key's file went with its commit
    for path in settings.data_dir.rglob("*"):
        assert not path.is_file() or secret_line.encode() not in path.read_bytes(), path


GREETING = "src/Greeting.php"
# a legacy file of a German code base, written by an editor that saved Windows-1252 (as ISO-8859-1 editors did)
GREETING_TEXT = ("<?php\n\nnamespace App;\n\n// Grüße für die Startseite\nfunction greeting(): string\n{\n"
                 "    return 'Grüße';\n}\n")
GREETING_NEW = GREETING_TEXT.replace("return 'Grüße';", "return 'Schöne Grüße – 5 €';")


async def test_a_windows_1252_crlf_file_is_read_and_edited_in_its_own_encoding_and_line_ends(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, tmp_path: Path
) -> None:
    """Legacy PHP code bases hold ISO-8859-1 and Windows-1252 files, often with CRLF line ends. The model was
    shown `Gr��e`, its patch named characters the file does not hold and had no `\\r`, so `git apply` refused
    it; what it added went in as UTF-8. Now it reads the file's own text and its edit lands in the file's
    encoding and line ends, the rest byte-equal."""
    _setup(settings, redis_url, fake_forge)
    clone = tmp_path / "maintainer"
    subprocess.run(["git", "clone", "-q", "-b", "master", str(served.origin), str(clone)], env=GIT_ENV, check=True)
    (clone / GREETING).write_bytes(GREETING_TEXT.replace("\n", "\r\n").encode("cp1252"))  # and on Windows
    subprocess.run(["git", "-C", str(clone), "add", "-A"], env=GIT_ENV, check=True)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", "Add the greeting"], env=GIT_ENV, check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "master"], env=GIT_ENV, check=True)
    writable = (route.CALC, route.TEST, GREETING)
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan([route.item(1, "Add multiply with its test", *writable)], writable)],
        architect=route.approve_plan(), reviewer=route.review(),
        coder=[route.patch(GREETING, GREETING_TEXT, GREETING_NEW), *route.coder_happy()],
    )
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    pushed = subprocess.run(["git", "-C", str(served.origin), "show", f"{BRANCH}:{GREETING}"], capture_output=True,
                            env=GIT_ENV, check=True).stdout
    assert pushed == GREETING_NEW.replace("\n", "\r\n").encode("cp1252")  # its own encoding ("€" is 0x80), CRLF
    shown = "".join(str(m.content) for request in roles["coder"].received for m in request)
    assert "Grüße für die Startseite" in shown and "\ufffd" not in shown  # what the model was given to read
    reviewed = "".join(str(m.content) for request in roles["reviewer"].received for m in request)
    assert "+    return 'Schöne Grüße – 5 €';" in reviewed and "\ufffd" not in reviewed  # the diff it reviewed


def _on_master(served: h.Served, tmp: Path, path: str, text: str) -> None:
    """A file committed and pushed to the served repository's default branch, as a maintainer would."""
    clone = tmp / "maintainer"
    subprocess.run(["git", "clone", "-q", "-b", "master", str(served.origin), str(clone)], env=GIT_ENV, check=True)
    (clone / path).write_text(text)
    subprocess.run(["git", "-C", str(clone), "add", "-A"], env=GIT_ENV, check=True)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", f"Add {path}"], env=GIT_ENV, check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "master"], env=GIT_ENV, check=True)


async def test_a_commit_message_rule_is_met_by_the_repositorys_template(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, tmp_path: Path
) -> None:
    """A push rule on commit messages (Conventional Commits here) refused every push of the bot, and the
    repository had no way to say how its commits are written. `commit_message` in `.forgebot.yml` does."""
    _setup(settings, redis_url, fake_forge)
    _on_master(served, tmp_path, ".forgebot.yml", FORGEBOT_YML + 'commit_message: "feat: {title} (#{issue})"\n')
    _push_rule(served, "git log -1 --format=%s \"$c\" | grep -Eq '^(feat|fix)(\\(.+\\))?: '",
               "Commit message does not follow the pattern")
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    assert served.branch_log(BRANCH)[0] == "feat: Add multiply with its test (#23)"
    assert h.the_change(fake_forge, "gitlab", "1").title == "feat: New API: create/update/delete file (#23)"


async def test_a_branch_name_rule_is_met_by_the_operators_prefix(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    """A push rule on branch names (`feature/…` here) refused every `forgebot/` branch, whatever was set."""
    _setup(settings, redis_url, fake_forge)
    settings.workspace.branch_prefix = "feature/forgebot-"
    hook = served.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do\n  case \"$ref\" in refs/heads/feature/*) ;; *)\n"
                    "    echo \"GitLab: Branch name does not follow the pattern '^feature/'\" >&2; exit 1;; esac\n"
                    "done\n")
    hook.chmod(0o755)
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, h.implement_roles().__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    branch = h.expected_branch(23, SAMPLE["object_attributes"]["title"], "feature/forgebot-")
    assert branch.startswith("feature/forgebot-23-")
    h.assert_delivered(h.the_change(fake_forge, "gitlab", "1"), branch, served)
